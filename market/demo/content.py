"""A deterministic, pure generator of a realistic demo community for Sprig.

``generate_community(seed)`` returns users, sub-agents (a fork forest whose bundles
are small working single-page apps), installs and open fork requests. It is pure
Python: no Flask, no database, no network, no clock, and all randomness comes from
one ``random.Random(seed)`` so the same seed always yields the same community.

How the pieces fit:

* Root sub-agents come from :data:`material.ROOTS` (``assets/roots/*.json``): one
  believable tool each, with its creator's story and a JS engine from ``assets/apps``.
* A fork applies one or two *recipes* (the words of a request plus the concrete
  change they imply) to its parent's latest config. The bundle is re-rendered from
  that config, so a fork's diff against its parent is exactly the requested change:
  units, goals, a new field, a reminder block, a new scope or host.
* Authors are chosen so that every bundle, manifest and story is free of the
  author's own email, phone, display name and address (Sprig refuses such bundles),
  and stories/requests follow the author's persona and language.
"""

from __future__ import annotations

import copy
import functools
import html
import json
import re
import unicodedata
from dataclasses import dataclass, field
from random import Random
from typing import Any

from market.demo.material import APPS, PEOPLE, ROOTS

__all__ = [
    "CATEGORIES",
    "SCOPE_VOCABULARY",
    "DemoBundle",
    "DemoCommunity",
    "DemoForkRequest",
    "DemoInstall",
    "DemoSubAgent",
    "DemoUser",
    "generate_community",
]

CATEGORIES: tuple[str, ...] = (
    "diet",
    "fitness",
    "mood",
    "sleep",
    "finance",
    "study",
    "family",
    "hobby",
    "travel",
    "hydration",
)
_DOMAINS = (
    "profile",
    "diet",
    "hydration",
    "fitness",
    "health",
    "health.injuries",
    "health.medications",
    "sleep",
    "mood",
    "journal",
    "finance",
    "family",
    "calendar",
    "location",
    "study",
    "hobby",
    "travel",
    "photos",
    "contacts",
    "home",
    "pets",
    "music",
)
SCOPE_VOCABULARY: frozenset[str] = frozenset(
    f"{d}.{a}" for d in _DOMAINS for a in ("read", "write")
)


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class DemoUser:
    handle: str
    display_name: str
    email: str
    phone: str | None
    address: str | None
    kind: str
    role: str
    share_feedback_for_training: bool
    bio: str
    locale: str


@dataclass(frozen=True)
class DemoBundle:
    manifest: dict[str, Any]
    files: dict[str, str]
    changelog: str


@dataclass(frozen=True)
class DemoSubAgent:
    key: str
    author: str
    title: str
    summary: str
    story: str
    category: str
    tags: tuple[str, ...]
    visibility: str
    parent: str | None
    fork_request: str | None
    versions: tuple[DemoBundle, ...]
    created_days_ago: int


@dataclass(frozen=True)
class DemoInstall:
    user: str
    subagent: str
    days_ago: int


@dataclass(frozen=True)
class DemoForkRequest:
    user: str
    subagent: str
    text: str
    days_ago: int


@dataclass(frozen=True)
class DemoCommunity:
    users: tuple[DemoUser, ...]
    subagents: tuple[DemoSubAgent, ...]
    installs: tuple[DemoInstall, ...]
    fork_requests: tuple[DemoForkRequest, ...]


# --------------------------------------------------------------------------- config paths


def _step(node: Any, part: str) -> Any:
    """One path segment: a dict key, or a field (list item) selected by its name."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list):
        return next((f for f in node if isinstance(f, dict) and f.get("name") == part), None)
    return None


def _get(cfg: dict[str, Any], path: str) -> Any:
    """``fields.amount.unit`` -> the unit of the field named "amount"; None if absent."""
    node: Any = cfg
    for part in path.split("."):
        node = _step(node, part)
        if node is None:
            return None
    return node


def _set(cfg: dict[str, Any], path: str, value: Any) -> None:
    head, _, key = path.rpartition(".")
    node = _get(cfg, head) if head else cfg
    if not isinstance(node, dict):
        raise KeyError(f"cannot set {path}")
    node[key] = copy.deepcopy(value)


def _append(cfg: dict[str, Any], path: str, items: list[Any]) -> None:
    target = _get(cfg, path)
    if not isinstance(target, list):
        raise KeyError(f"cannot append to {path}")
    target.extend(copy.deepcopy(items))


# --------------------------------------------------------------------------- generic recipes
# Requests any sub-agent can get, in the languages the agent serves. Each also has
# a short changelog so it can appear as a later version of an app.

_DEFAULT_ACCENT = "#2b6cb0"
_REMINDER_FALLBACK = {
    "en": "Time to log today's entry ✍️",
    "zh": "记得记录一下哦 ✍️",
    "ja": "記録の時間です ✍️",
    "es": "Hora de registrar ✍️",
}
_CITIES = [
    ("Toronto", 43.65, -79.38, "celsius"),
    ("Phoenix", 33.45, -112.07, "fahrenheit"),
    ("Chicago", 41.88, -87.63, "fahrenheit"),
    ("Vancouver", 49.28, -123.12, "celsius"),
    ("Austin", 30.27, -97.74, "fahrenheit"),
    ("Calgary", 51.05, -114.07, "celsius"),
    ("Miami", 25.76, -80.19, "fahrenheit"),
    ("Montreal", 45.50, -73.57, "celsius"),
    ("Mexico City", 19.43, -99.13, "celsius"),
    ("Seattle", 47.61, -122.33, "fahrenheit"),
]
_ZH_NUM = {1: "一", 2: "两", 3: "三", 4: "四"}
_LANG_LOCALE = {"en": "en-US", "zh": "zh-CN", "ja": "ja-JP", "es": "es-MX"}
_LOCALE_LANG = {"zh": "zh", "ja": "ja", "es": "es"}
_LANG_TAG = {"zh": "chinese", "ja": "japanese", "es": "spanish"}
_UNITS = {
    "min": {"zh": "分钟", "ja": "分", "es": "min"},
    "pages": {"zh": "页", "ja": "ページ", "es": "páginas"},
}


_CSV_AUDIENCE = {
    "finance": "my accountant",
    "fitness": "my coach",
    "study": "their teacher",
    "family": "my partner",
    "hobby": "my friends",
    "travel": "the group chat",
}
_BABY_KEYS = ("baby-feeding", "baby-sleep", "baby-growth", "postpartum-checkin")


def _generic_recipes(
    root: dict[str, Any], cfg: dict[str, Any], rng: Random
) -> list[dict[str, Any]]:
    """Recipes every app can get; some depend on its engine, category or current state."""
    engine = root["engine"]
    audience = _CSV_AUDIENCE.get(root["category"], "my doctor")
    night = (
        "I log the baby's feeds at 3am"
        if root["key"] in _BABY_KEYS
        else "I check it in bed after lights out"
    )
    out: list[dict[str, Any]] = []
    hours = rng.choice([1, 2, 2, 3, 3, 4])
    every = "every hour" if hours == 1 else f"every {hours} hours"
    lang = cfg["lang"]
    out.append(
        {
            "id": "reminder",
            "when": {"features.reminder": None},
            "features": {
                "reminder": {
                    "everyHours": hours,
                    "fromHour": 8,
                    "toHour": 21,
                    "message": root.get("reminder", {}).get(lang) or _REMINDER_FALLBACK[lang],
                }
            },
            "requests": [
                f"add a reminder {every}",
                f"can it nudge me {every}? I forget when the kids are home",
                f"remind me {every} during the day, not at night",
                f"I keep forgetting to log — ping me {every} between 8am and 9pm",
            ],
            "zh": [
                f"每{_ZH_NUM[hours]}个小时提醒我一次",
                f"加个提醒吧，白天每{_ZH_NUM[hours]}小时提醒一次",
            ],
            "ja": [
                f"{hours}時間ごとにリマインドしてほしいです",
                f"昼間だけ{hours}時間おきに通知してください",
            ],
            "es": [
                f"recuérdame cada {hours} horas, porfa",
                f"agrega un recordatorio cada {hours} horas",
            ],
            "tag": f"{hours}h reminders",
            "tag_zh": f"每{hours}小时提醒",
            "tag_ja": f"{hours}時間ごとに通知",
            "tag_es": f"recordatorio cada {hours} h",
            "does": f"reminds you {every} during the day",
            "why": [
                "I kept forgetting to log anything after lunch",
                "by the time the kids are in bed I can't remember the afternoon",
            ],
            "changelog": f"Added a gentle reminder {every} (8am–9pm, can be switched off).",
        }
    )
    out.append(
        {
            "id": "quiet-morning",
            "when": {"features.reminder.fromHour": 8},
            "set": {"features.reminder.fromHour": 10},
            "requests": [
                "don't remind me before 10am, I work nights and sleep in",
                "no pings before 10 please, night-shift nurse here",
            ],
            "tag": "quiet mornings",
            "tag_zh": "上午免打扰",
            "tag_ja": "朝は通知なし",
            "tag_es": "mañanas sin avisos",
            "zh": ["早上十点前别提醒我，我上夜班"],
            "does": "stays quiet before 10am",
            "why": ["I work night shifts and the 8am reminder kept waking me up"],
            "changelog": "Reminders now start at 10am.",
        }
    )
    out.append(
        {
            "id": "quiet-evening",
            "when": {"features.reminder.toHour": 21},
            "set": {"features.reminder.toHour": 18},
            "requests": ["stop the reminders after 6pm, evenings are family time"],
            "es": ["que no me avise después de las 6, es tiempo con mi familia"],
            "tag": "family evenings",
            "tag_zh": "晚上免打扰",
            "tag_ja": "夜は通知なし",
            "tag_es": "tardes en familia",
            "does": "keeps evenings free of reminders",
            "why": ["dinner and bedtime are phone-free in our house"],
            "changelog": "No reminders after 6pm.",
        }
    )
    out.append(
        {
            "id": "dark",
            "when": {"theme.dark": False},
            "set": {"theme.dark": True},
            "requests": [
                f"dark mode please, {night}",
                "can you add a dark theme? it's blinding at night",
                "dark mode, my eyes at 11pm are begging",
            ],
            "zh": ["加个深色模式吧，晚上用太亮了"],
            "ja": ["夜に使うのでダークモードにしてください"],
            "es": ["¿le puedes poner modo oscuro? de noche me deslumbra"],
            "tag": "dark mode",
            "tag_zh": "深色模式",
            "tag_ja": "ダークモード",
            "tag_es": "modo oscuro",
            "does": "uses a dark theme for late-night use",
            "why": [night],
            "changelog": "Dark mode for late-night logging.",
        }
    )
    out.append(
        {
            "id": "large",
            "when": {"theme.fontSize": 16},
            "set": {"theme.fontSize": 20},
            "requests": [
                "bigger text and buttons — this is for my mom, she's 72",
                "make everything bigger, I use it on the treadmill",
                "larger font please, my dad can't read it",
            ],
            "zh": ["字太小了，给我爸妈用，请把字和按钮都放大"],
            "ja": ["母が使うので、文字とボタンを大きくしてください"],
            "es": ["letra más grande por favor, es para mi papá"],
            "tag": "large print",
            "tag_zh": "大字版",
            "tag_ja": "大きな文字",
            "tag_es": "letra grande",
            "does": "uses bigger text and buttons",
            "why": ["my mother is 72 and uses it on her tablet"],
            "changelog": "Bigger text and buttons.",
        }
    )
    out.append(
        {
            "id": "confirm",
            "when": {"features.confirmDelete": None},
            "features": {"confirmDelete": True},
            "requests": [
                "ask before deleting — my toddler keeps tapping the delete button",
                "please add an 'are you sure?' before delete, I lost a week by accident",
            ],
            "zh": ["删除前加个确认，孩子老是乱点"],
            "ja": ["子どもが削除ボタンを押してしまうので、確認を出してください"],
            "tag": "safe delete",
            "tag_zh": "删除前确认",
            "tag_ja": "削除確認",
            "tag_es": "confirmar borrado",
            "does": "asks before deleting anything",
            "why": ["my toddler deleted a week of entries"],
            "changelog": "Asks before deleting — my toddler found the button.",
        }
    )
    out.append(
        {
            "id": "accent",
            "when": {"theme.accent": _DEFAULT_ACCENT},
            "set": {"theme.accent": rng.choice(["#c2255c", "#2f9e44", "#7048e8", "#0c8599"])},
            "requests": [
                "different colour please, my daughter wants it in her favourite colour",
                "can it be a brighter colour? the blue is hard to see outside",
            ],
            "tag": "new colours",
            "tag_zh": "换个颜色",
            "tag_ja": "色を変更",
            "tag_es": "otros colores",
            "does": "uses a brighter colour scheme",
            "why": ["my daughter refused to use it 'because it's blue'"],
            "changelog": "New accent colour that's easier to see outside.",
        }
    )
    if cfg.get("chartDays", 30) < 30:
        out.append(
            {
                "id": "chart30",
                "set": {"chartDays": 30},
                "requests": [
                    "show the last 30 days instead of just a couple of weeks",
                    "I want a monthly view on the chart",
                ],
                "zh": ["图表改成显示最近 30 天"],
                "ja": ["グラフを30日表示にしてください"],
                "es": ["que la gráfica muestre 30 días"],
                "tag": "30-day view",
                "tag_zh": "30天视图",
                "tag_ja": "30日表示",
                "tag_es": "vista de 30 días",
                "does": "charts the last 30 days",
                "why": ["a week is too short to see my patterns"],
                "changelog": "Chart now covers 30 days.",
            }
        )
    if engine in APPS.log_engines or engine == "events":
        out.append(
            {
                "id": "csv",
                "when": {"features.csv": None},
                "features": {"csv": True},
                "requests": [
                    f"add an export to CSV so I can send it to {audience}",
                    f"I need a CSV export for {audience}",
                    "let me export everything to a spreadsheet",
                ],
                "zh": ["加一个导出 CSV 的功能，我要发给医生看"],
                "ja": ["CSVで書き出せるようにしてください"],
                "es": ["agrega exportar a CSV para mandárselo a mi doctora"],
                "tag": "CSV export",
                "tag_zh": "导出CSV",
                "tag_ja": "CSV出力",
                "tag_es": "exportar CSV",
                "does": "exports everything as CSV",
                "why": [f"{audience} wanted the numbers in a spreadsheet"],
                "changelog": "Added CSV export.",
            }
        )
    if root.get("weather_ok"):
        city, lat, lon, unit = rng.choice(_CITIES)
        out.append(
            {
                "id": "weather",
                "when": {"features.weather": None},
                "features": {"weather": {"city": city, "lat": lat, "lon": lon, "tempUnit": unit}},
                "scopes": ["location.read"],
                "requests": [
                    f"show today's weather in {city} at the top",
                    f"I'm in {city} — show the temperature so I know what I'm dealing with today",
                ],
                "es": [f"muestra el clima de hoy en {city}"],
                "tag": f"{city} weather",
                "tag_zh": f"{city}天气",
                "tag_ja": f"{city}の天気",
                "tag_es": f"clima en {city}",
                "does": f"shows the current weather in {city}",
                "why": [f"the weather in {city} decides half my day"],
            }
        )
    # Translation forks: only when every visible label has a translation.
    i18n = root.get("i18n", {})
    if lang == "en":
        for target in ("zh", "ja", "es"):
            if target in i18n and _translatable(cfg, target):
                out.append(_translation_recipe(root, target))
    for spec in out:
        spec["generic"] = True
    return out


_TRANSLATION_REQUESTS = {
    "zh": [
        "请把界面改成中文，我妈妈也要用",
        "能做个中文版吗？家里老人看不懂英文",
        "想要中文界面，给我婆婆用，她来帮我们带孩子",
    ],
    "ja": [
        "日本語にしてください。母にも使ってほしいので",
        "日本語版がほしいです。夫の両親が使います",
    ],
    "es": [
        "¿lo puedes poner en español? es para mi mamá",
        "en español por favor, mi suegra lo va a usar",
    ],
}
_TRANSLATION_SUFFIX = {"zh": "（中文版）", "ja": "（日本語版）", "es": " (en español)"}


def _translation_recipe(root: dict[str, Any], target: str) -> dict[str, Any]:
    return {
        "id": f"lang-{target}",
        "translate": target,
        "requests": {
            "zh": ["make a Chinese version for my mom, she's staying with us for six months"],
            "ja": ["make a Japanese version, my mother-in-law is visiting from Osaka"],
            "es": ["can you make a Spanish version for my abuela? she helps with the kids"],
        }[target],
        target: _TRANSLATION_REQUESTS[target],
        "tag": _TRANSLATION_SUFFIX[target].strip(" ()（）"),
        "does": "is translated into "
        + {"zh": "Chinese", "ja": "Japanese", "es": "Spanish"}[target],
        "tags": [_LANG_TAG[target]],
        "why_local": {
            "zh": "我妈妈看不懂英文，她帮我们带孩子，也想一起用",
            "ja": "義母は英語が読めないけれど、一緒に使いたいと言ってくれました",
            "es": "mi suegra no lee inglés y ella nos ayuda con los niños",
        }[target],
    }


def _labels_of(cfg: dict[str, Any]) -> list[str]:
    """Every human-visible label in a config that a translation must cover."""
    out: list[str] = []
    for f in cfg.get("fields", []):
        out.append(f["label"])
        out.extend(str(o[1]) for o in f.get("options", []) if not str(o[1]).startswith("★"))
    for key in ("scale", "tags", "habits"):
        out.extend(str(item[1]) for item in cfg.get(key, []))
    out.extend(cfg.get("prompts", []))
    return out


def _translatable(cfg: dict[str, Any], lang: str) -> bool:
    return all(lang in APPS.labels.get(label, {}) for label in _labels_of(cfg))


def _localize(cfg: dict[str, Any], lang: str) -> None:
    """Translate labels in place where a translation exists (best effort)."""

    def tr(s: Any) -> Any:
        return APPS.labels.get(s, {}).get(lang, s) if isinstance(s, str) else s

    for f in cfg.get("fields", []):
        f["label"] = tr(f["label"])
        if "options" in f:
            f["options"] = [[o[0], tr(o[1])] for o in f["options"]]
        if f.get("unit") in _UNITS:
            f["unit"] = _UNITS[f["unit"]][lang]
    for key in ("scale", "tags", "habits"):
        if key in cfg:
            cfg[key] = [[item[0], tr(item[1]), *item[2:]] for item in cfg[key]]
    if cfg.get("unit") in _UNITS:
        cfg["unit"] = _UNITS[cfg["unit"]][lang]
    if "prompts" in cfg:
        cfg["prompts"] = [tr(p) for p in cfg["prompts"]]


# --------------------------------------------------------------------------- rendering


def _js_config(cfg: dict[str, Any]) -> str:
    """CONFIG as JS, one top-level key (or list item) per line so diffs stay readable."""

    def compact(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    lines = ["const CONFIG = {"]
    items = list(cfg.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"  {json.dumps(key)}: [")
            lines.extend(
                f"    {compact(v)}{',' if j < len(value) - 1 else ''}" for j, v in enumerate(value)
            )
            lines.append(f"  ]{comma}")
        elif isinstance(value, dict) and value:
            lines.append(f"  {json.dumps(key)}: {{")
            sub = list(value.items())
            lines.extend(
                f"    {json.dumps(k)}: {compact(v)}{',' if j < len(sub) - 1 else ''}"
                for j, (k, v) in enumerate(sub)
            )
            lines.append(f"  }}{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {compact(value)}{comma}")
    lines.append("};")
    return "\n".join(lines)


_T_KEY = re.compile(r"\bT\.([A-Za-z0-9_]+)")


def _split_prelude(src: str) -> list[tuple[str | None, str]]:
    """Top-level prelude functions as (name, code); the header has no name."""
    out: list[tuple[str | None, str]] = []
    for part in re.split(r"(?m)^(?=function )", src):
        m = re.match(r"function ([\w$]+)", part)
        out.append((m.group(1) if m else None, part))
    return out


_IDENT = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*")


def _idents(code: str) -> set[str]:
    return set(_IDENT.findall(code))


_PRELUDE = _split_prelude(APPS.prelude_js)
_PRELUDE_NAMES = {name for name, _ in _PRELUDE if name}
_PRELUDE_DEPS = {name: _idents(body) & _PRELUDE_NAMES for name, body in _PRELUDE if name}


@functools.lru_cache(maxsize=256)
def _shaken_prelude(code: str) -> str:
    """Only the helpers ``code`` needs (transitively): the agent ships what it uses.
    Cached: the result depends only on the engine and the enabled features."""
    needed: set[str] = set()
    todo = list(_idents(code) & _PRELUDE_NAMES)
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(_PRELUDE_DEPS[name] - needed)
    return "".join(body for name, body in _PRELUDE if name is None or name in needed)


def _render_js(cfg: dict[str, Any], engine: str) -> str:
    features = [name for name in APPS.feature_js if cfg["features"].get(name)]
    own = APPS.engines[engine] + "".join(APPS.feature_js[f] for f in features)
    body = _shaken_prelude(own + APPS.bootstrap_js) + own
    # Ship only the UI strings this app's code uses, so bundles stay small.
    used = set(_T_KEY.findall(body)) | (
        {"work", "break", "long"} if engine == "pomodoro" else set()
    )
    public = dict(cfg)
    public["ui"] = {k: v for k, v in cfg["ui"].items() if k in used}
    header = (
        '"use strict";\n// Generated by the coding agent for Sprig. Runs offline; data stays in '
        "this browser's localStorage.\n"
    )
    return header + _js_config(public) + "\n" + body + APPS.bootstrap_js


def _esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _field_html(f: dict[str, Any]) -> str:
    fid = f"f-{f['name']}"
    label = _esc(f["label"])
    kind = f["type"]
    if kind == "checkbox":
        checked = " checked" if f.get("default") else ""
        return f'<label class="check"><input type="checkbox" id="{fid}"{checked}> {label}</label>'
    if kind == "select":
        opts = []
        for value, text in f.get("options", []):
            sel = " selected" if str(value) == str(f.get("default", "")) else ""
            opts.append(f'<option value="{_esc(value)}"{sel}>{_esc(text)}</option>')
        return f'<label>{label}<select id="{fid}">{"".join(opts)}</select></label>'
    if kind == "textarea":
        return (
            f'<label>{label}<textarea id="{fid}" rows="2" maxlength="{f.get("maxlength", 500)}">'
            "</textarea></label>"
        )
    attrs = [f'id="{fid}"']
    if kind in ("number", "range"):
        attrs.append(f'type="{kind}"')
        if kind == "number":
            attrs.append('inputmode="decimal"')
        for key in ("min", "max", "step"):
            if key in f:
                attrs.append(f'{key}="{_esc(f[key])}"')
    else:
        attrs.append(f'type="{kind}"')
    if "maxlength" in f:
        attrs.append(f'maxlength="{f["maxlength"]}"')
    if f.get("default") is not None and kind != "date":
        attrs.append(f'value="{_esc(f["default"])}"')
    unit = f' <span class="unit">{_esc(f["unit"])}</span>' if f.get("unit") else ""
    return f'<label>{label}<span class="input"><input {" ".join(attrs)}>{unit}</span></label>'


def _render_block(block: str, cfg: dict[str, Any], ui: dict[str, str]) -> str:
    name, _, arg = block.partition(":")
    if name == "warnings":
        return '<p id="warnings" class="warnings" hidden></p>'
    if name == "summary":
        return (
            '<section class="summary"><div id="today-total" class="big"></div>'
            '<div id="status" class="muted"></div></section>'
        )
    if name == "progress":
        return '<div class="progress"><div id="progress-fill" class="fill"></div></div>'
    if name in ("quick", "kinds"):
        return f'<div id="{name}" class="quick"></div>'
    if name == "prompt":
        return '<p id="prompt" class="prompt"></p>'
    if name == "scale":
        return (
            f'<h2>{_esc(ui["moodQuestion"])}</h2><div id="scale" class="chips"></div>'
            f'<h2>{_esc(ui["tagsTitle"])}</h2><div id="tags" class="chips"></div>'
        )
    if name == "timer":
        return (
            f'<div class="timer"><div id="clock" class="clock">00:00</div>'
            f'<button type="button" id="start">{_esc(ui["start"])}</button> '
            f'<button type="button" id="reset" class="secondary">{_esc(ui["reset"])}</button></div>'
        )
    if name == "pomodoro":
        return (
            f'<div class="timer"><div id="phase" class="muted"></div><div id="clock" class="clock">'
            f'</div><button type="button" id="start">{_esc(ui["start"])}</button> '
            f'<button type="button" id="skip" class="secondary">{_esc(ui["skip"])}</button></div>'
        )
    if name in ("form", "fields"):
        inner = "\n    ".join(_field_html(f) for f in cfg["fields"])
        if name == "fields":
            return f'<div class="fields">\n    {inner}\n  </div>'
        return (
            f'<form id="entry-form" class="fields" autocomplete="off">\n    {inner}\n'
            f'    <button type="submit">{_esc(ui["add"])}</button>\n  </form>'
        )
    if name == "groups":
        if "groupBy" in cfg and not cfg["groupBy"]:
            return ""
        head = f"<h2>{_esc(ui[arg])}</h2>" if arg else ""
        return f'{head}<div id="groups" class="bars"></div>'
    if name == "records":
        return f'<h2>{_esc(ui["records"])}</h2><div id="records" class="bars"></div>'
    if name == "macros":
        return '<div id="macros" class="bars"></div>'
    if name == "list":
        return f'<h2>{_esc(ui[arg])}</h2><ul id="list" class="list"></ul>'
    if name == "chart":
        return (
            f'<canvas id="chart" width="600" height="180" role="img" '
            f'aria-label="{_esc(ui["chart"])}"></canvas>'
        )
    if name == "allowance":
        if not cfg.get("allowance"):
            return ""
        return f'<button type="button" id="allowance">{_esc(ui["payAllowance"])}</button>'
    if name == "goals":
        return '<div id="goals" class="cards"></div>'
    if name == "people":
        return (
            f'<form id="person-form" class="row" autocomplete="off"><input id="person-name" '
            f'type="text" maxlength="40" placeholder="{_esc(ui["addPerson"])}">'
            f'<button type="submit" class="secondary">{_esc(ui["addPerson"])}</button></form>'
        )
    if name == "settle":
        return f'<h2>{_esc(ui["settle"])}</h2><ul id="settle" class="list"></ul>'
    if name == "target":
        return (
            f'<label class="row">{_esc(cfg["targetLabel"])}'
            '<input type="date" id="target-date"></label>'
        )
    if name == "sections":
        return '<div id="sections"></div>'
    if name == "planbuttons":
        return (
            f'<div class="row"><button type="button" id="surprise">{_esc(ui["surprise"])}</button>'
            f'<button type="button" id="clear-plan" class="secondary">{_esc(ui["clearPlan"])}'
            "</button></div>"
        )
    if name == "grid":
        return '<div class="scroll"><table id="grid" class="grid"></table></div>'
    if name == "own":
        return f'<h2>{_esc(ui["ownRecipes"])}</h2><ul id="own" class="list"></ul>'
    if name == "search":
        return (
            f'<div class="row"><input id="search" type="search" placeholder="{_esc(ui["search"])}">'
            f'<button type="button" id="sort" class="secondary">{_esc(ui["sortRating"])}'
            "</button></div>"
        )
    if name == "top":
        return f'<h2>{_esc(ui["top"])}</h2><ul id="top" class="list"></ul>'
    if name == "schedule":
        return f'<h2>{_esc(ui["schedule"])}</h2><ul id="schedule" class="list"></ul>'
    if name == "review":
        return (
            '<div class="card flash"><div id="card-front" class="clock"></div>'
            '<div id="card-back" class="answer"></div>'
            f'<button type="button" id="reveal">{_esc(ui["reveal"])}</button> '
            f'<button type="button" id="got" hidden>{_esc(ui["gotIt"])}</button> '
            '<button type="button" id="missed" class="secondary" hidden>'
            f"{_esc(ui['missed'])}</button>"
            "</div>"
        )
    if name == "session":
        return (
            f"<h2>{_esc(ui['logSession'])}</h2>"
            '<form id="session-form" class="row" autocomplete="off">'
            '<select id="session-subject"></select><input id="session-hours" type="number" '
            f'min="0" step="0.25" placeholder="{_esc(ui["hours"])}">'
            f'<button type="submit">{_esc(ui["add"])}</button></form>'
        )
    if name == "tasks":
        return f'<h2>{_esc(ui["tasks"])}</h2><ul id="tasks" class="list"></ul>'
    raise ValueError(f"unknown layout block {block!r}")


def _render_html(cfg: dict[str, Any], engine: str) -> str:
    ui = cfg["ui"]
    feats = cfg["features"]
    top: list[str] = []
    if feats.get("reminder"):
        top.append('<p id="reminder-banner" class="banner" hidden></p>')
    if feats.get("weather"):
        top.append('<p id="weather" class="muted"></p>')
    if feats.get("rates"):
        top.append('<p id="rates" class="muted"></p>')
    if feats.get("foodfacts"):
        top.append(
            f'<div class="row"><input id="barcode" inputmode="numeric" maxlength="14" '
            f'placeholder="{_esc(ui["lookup"])}"><button type="button" id="lookup" '
            f'class="secondary">{_esc(ui["lookup"])}</button></div>'
        )
    blocks = [b for b in (_render_block(b, cfg, ui) for b in APPS.layouts[engine]) if b]
    if feats.get("holidays"):
        blocks.append(f'<h2>{_esc(ui["holidays"])}</h2><ul id="holidays" class="list"></ul>')
    foot: list[str] = []
    if feats.get("csv"):
        foot.append(
            f'<button type="button" id="export-csv" class="secondary">{_esc(ui["export"])}</button>'
        )
    if feats.get("reminder"):
        foot.append('<button type="button" id="reminder-toggle" class="secondary"></button>')
    footer = f'\n  <footer class="row">{"".join(foot)}</footer>' if foot else ""
    body = "\n  ".join(top + blocks)
    lang = {"zh": "zh-CN", "ja": "ja", "es": "es"}.get(cfg["lang"], "en")
    return (
        f'<!doctype html>\n<html lang="{lang}">\n<head>\n  <meta charset="utf-8">\n'
        '  <meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"  <title>{_esc(cfg['title'])}</title>\n"
        '  <link rel="stylesheet" href="style.css">\n</head>\n<body>\n'
        f"  <h1>{_esc(cfg['title'])}</h1>\n  {body}{footer}\n"
        '  <script src="app.js"></script>\n</body>\n</html>\n'
    )


def _render_css(theme: dict[str, Any]) -> str:
    """Compact stylesheet; colours come from CONFIG.theme so canvas charts match the page."""
    dark = theme["dark"]
    bg, fg, card, line = (
        ("#14171c", "#e8eaed", "#1f242c", "#333a45")
        if dark
        else ("#f7f8fa", "#1f2328", "#fff", "#d8dde3")
    )
    size = theme["fontSize"]
    pad = 6 if size <= 16 else 10
    rules = [
        f":root{{--accent:{theme['accent']};--good:{theme['good']};--warn:{theme['warn']};"
        f"--muted:{theme['muted']};--bg:{bg};--fg:{fg};--card:{card};--line:{line}}}",
        "*{box-sizing:border-box}",
        "[hidden]{display:none!important}",
        "body{margin:0 auto;max-width:640px;padding:16px;background:var(--bg);color:var(--fg);"
        f"font:{size}px/1.45 system-ui,-apple-system,"
        '"Segoe UI","Hiragino Sans","PingFang SC",sans-serif}',
        "h1{font-size:1.4em;margin:0 0 12px;color:var(--accent)}",
        "h2{font-size:1em;margin:20px 0 8px}",
        "h3{font-size:.95em;margin:12px 0 6px}",
        f"button{{font:inherit;padding:{pad}px {pad + 8}px;border:0;border-radius:8px;"
        "background:var(--accent);color:#fff;cursor:pointer;margin:2px}",
        "button.secondary,button.del,button.small,button.link,.chip,.cell{background:var(--card);"
        "color:var(--accent);border:1px solid var(--line)}",
        "button.del{color:var(--warn);padding:2px 8px}",
        f"input,select,textarea{{font:inherit;padding:{pad}px;border:1px solid var(--line);"
        "border-radius:6px;background:var(--card);color:var(--fg);max-width:100%}",
        "label{display:block;margin:6px 0}",
        "label>select,label>textarea,.input{display:block;margin-top:2px}",
        "label.check,.row,.bar-row,.item{display:flex;gap:8px;align-items:center}",
        ".row{flex-wrap:wrap;margin:8px 0}",
        ".fields,.card,.summary{background:var(--card);border:1px solid var(--line);"
        "border-radius:12px;padding:12px;margin:10px 0}",
        ".big{font-size:1.6em;font-weight:600}",
        ".muted,.empty,.prompt{color:var(--muted)}",
        ".progress,.bar-track{background:var(--line);border-radius:99px;height:12px;"
        "overflow:hidden;flex:1}",
        ".fill,.bar-fill{background:var(--accent);height:100%;width:0}",
        ".good{background:var(--good)}",
        ".warn,.warnings{background:var(--warn);color:#fff}",
        ".bar-row{margin:4px 0}",
        ".bar-label{width:38%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}",
        ".bar-value{min-width:5em;text-align:right}",
        ".quick,.chips{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0}",
        ".chip.on,.cell.on{background:var(--accent);color:#fff}",
        ".list{list-style:none;padding:0;margin:0}",
        ".item{justify-content:space-between;padding:8px 0;border-bottom:1px solid var(--line)}",
        ".item-text{flex:1}",
        ".item.done .item-text{text-decoration:line-through;color:var(--muted)}",
        ".item.overdue{color:var(--warn)}",
        ".item.due,.item.active{font-weight:600}",
        ".banner,.warnings{padding:8px 12px;border-radius:8px}",
        ".banner{background:var(--accent);color:#fff;cursor:pointer}",
        ".timer{text-align:center;margin:12px 0}",
        ".clock{font-size:2.4em;margin:8px 0}",
        ".answer{font-size:1.2em;min-height:1.5em;margin-bottom:8px}",
        ".scroll{overflow-x:auto}",
        ".grid{border-collapse:collapse;width:100%}",
        ".grid th,.grid td{padding:4px;border-bottom:1px solid var(--line);text-align:left}",
        "canvas{width:100%;height:auto;background:var(--card);border-radius:12px;margin-top:12px}",
        "footer{margin-top:24px}",
    ]
    return "\n".join(rules) + "\n"


def _manifest_schema(cfg: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {"day": {"type": "string", "format": "date"}}
    for f in cfg["fields"]:
        kind = f["type"]
        prop: dict[str, Any] = {"title": f["label"]}
        if kind in ("number", "range"):
            prop["type"] = "number"
            if "min" in f:
                prop["minimum"] = f["min"]
            if "max" in f:
                prop["maximum"] = f["max"]
        elif kind == "checkbox":
            prop["type"] = "boolean"
        else:
            prop["type"] = "string"
            if kind == "date":
                prop["format"] = "date"
            elif kind == "time":
                prop["pattern"] = "^[0-2][0-9]:[0-5][0-9]$"
            elif kind == "select" and f.get("options"):
                prop["enum"] = [str(o[0]) for o in f["options"]]
            if "maxlength" in f:
                prop["maxLength"] = f["maxlength"]
        if f.get("unit"):
            prop["description"] = f"in {f['unit']}"
        props[f["name"]] = prop
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": props,
        "required": ["day"],
    }


def _hosts(cfg: dict[str, Any]) -> list[str]:
    return sorted(APPS.feature_hosts[f] for f in APPS.feature_hosts if cfg["features"].get(f))


def _render_bundle(node: _Node, changelog: str) -> DemoBundle:
    cfg = node.cfg
    engine = node.root["engine"]
    files = {
        "index.html": _render_html(cfg, engine),
        "app.js": _render_js(cfg, engine),
        "style.css": _render_css(cfg["theme"]),
    }
    manifest = {
        "name": node.title[:80],
        "entry": "index.html",
        "scopes": sorted(node.scopes),
        "hosts": _hosts(cfg),
        "data_schema": _manifest_schema(cfg),
        "description": node.summary[:500],
    }
    return DemoBundle(manifest=manifest, files=files, changelog=changelog)


# --------------------------------------------------------------------------- users


@dataclass
class _User:
    handle: str
    display_name: str
    email: str
    phone: str | None
    address: str | None
    kind: str
    role: str
    share: bool
    bio: str
    locale: str
    gender: str
    persona: dict[str, Any]
    activity: float

    @property
    def lang(self) -> str:
        return _LOCALE_LANG.get(self.locale[:2], "en")

    def personal_values(self) -> list[str]:
        values = [self.email, self.display_name]
        if self.phone:
            values.append(self.phone)
        if self.address:
            values.append(self.address)
        return [v for v in values if v]

    def freeze(self) -> DemoUser:
        return DemoUser(
            self.handle,
            self.display_name,
            self.email,
            self.phone,
            self.address,
            self.kind,
            self.role,
            self.share,
            self.bio,
            self.locale,
        )


def _ascii(s: str) -> str:
    flat = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", flat.lower())


def _weighted(rng: Random, items: list[Any], weights: list[float]) -> Any:
    return rng.choices(items, weights=weights, k=1)[0]


def _parent_word(gender: str) -> str:
    return {"f": "mom", "m": "dad"}.get(gender, "parent")


def _fill(text: str, gender: str) -> str:
    word = _parent_word(gender)
    return text.replace("{parent}", word).replace("{Parent}", word.capitalize())


def _make_users(rng: Random, n_users: int) -> list[_User]:
    users: list[_User] = []
    taken: set[str] = set()
    phones: set[str] = set()
    personas = PEOPLE.personas
    general = [p for p in personas if p["weight"]]

    def unique(handle: str) -> str:
        handle = handle.strip("._") or "user"
        base, n = handle, 2
        while handle in taken:
            handle = f"{base}{n}"
            n += 1
        taken.add(handle)
        return handle

    for handle, name, bio in (
        (
            "main-agent",
            "Main Agent",
            "the personal AI agent that plans with you and installs sub-agents",
        ),
        ("coding-agent", "Coding Agent", "writes and forks sub-agents when you ask for a change"),
        ("training-team", "Training Team", "reviews shared feedback to improve the agents"),
    ):
        taken.add(handle)
        users.append(
            _User(
                handle,
                name,
                f"{handle}@example.org",
                None,
                None,
                "service",
                "user",
                False,
                bio,
                "en-US",
                "n",
                general[0],
                0.0,
            )
        )

    locales = [loc for loc, _ in PEOPLE.locales]
    locale_w = [w for _, w in PEOPLE.locales]
    n_people = max(0, n_users - len(users))
    for i in range(n_people):
        locale = _weighted(rng, locales, locale_w)
        if locale == "zh-CN":
            sur, sur_py = rng.choice(PEOPLE.surname_zh)
            given, given_py, gender = rng.choice(PEOPLE.given_zh)
            display = sur + given
            first, last = given_py, sur_py
        elif locale == "ja-JP":
            sur, sur_ro = rng.choice(PEOPLE.surname_ja)
            given, given_ro, gender = rng.choice(PEOPLE.given_ja)
            display = f"{sur} {given}"
            first, last = given_ro, sur_ro
        else:
            if locale == "fr-CA":
                first_name, gender = rng.choice(PEOPLE.first_fr)
                last_name = rng.choice(PEOPLE.last_fr)
            elif locale.startswith("es"):
                first_name, gender = rng.choice(PEOPLE.first_es)
                last_name = rng.choice(PEOPLE.last_es)
            else:
                # Skew toward women: most of Sprig's planners are moms.
                pool = PEOPLE.first_en
                first_name, gender = rng.choice(pool)
                if gender == "m" and rng.random() < 0.35:
                    first_name, gender = rng.choice([p for p in pool if p[1] == "f"])
                last_name = rng.choice(PEOPLE.last_en)
            display = f"{first_name} {last_name}"
            first, last = _ascii(first_name), _ascii(last_name)

        # Persona: language-specific ones for zh/ja/es users most of the time.
        special = {"zh-CN": "zh-parent", "ja-JP": "ja-parent", "es-MX": "es-parent"}.get(locale)
        if i < len(general):
            persona = general[i]  # every persona exists at least once
        elif special and rng.random() < 0.7:
            persona = next(p for p in personas if p["id"] == special)
        else:
            persona = _weighted(rng, general, [float(p["weight"]) for p in general])
        if persona.get("gender") and persona["gender"] != gender:
            persona = next(p for p in general if p["id"] == "parent-of-two")

        style = rng.random()
        yy = rng.randint(70, 99)
        if style < 0.4:
            handle = f"{first}.{last}"
        elif style < 0.5:
            handle = f"{first}_{last}"
        elif style < 0.6:
            handle = f"{first}{last}"
        elif style < 0.7:
            handle = f"{first}.{last[:1]}"
        elif style < 0.8:
            handle = f"{first}{last[:1]}{yy}"
        elif style < 0.9:
            handle = f"{rng.choice(PEOPLE.handle_prefixes[gender])}_{last}"
        else:
            handle = f"{first}.{rng.choice(PEOPLE.handle_suffixes)}"
        handle = unique(handle)
        domain = _weighted(rng, ["example.com", "example.org", "example.net"], [6, 2.5, 1.5])
        email = f"{handle}@{domain}"

        phone = None
        na = locale in PEOPLE.area_codes
        if (na and rng.random() < 0.65) or (not na and rng.random() < 0.3):
            codes = (
                PEOPLE.area_codes.get(locale)
                or PEOPLE.area_codes["en-CA" if rng.random() < 0.5 else "en-US"]
            )
            for _ in range(20):
                candidate = f"+1 {rng.choice(codes)}-555-01{rng.randint(0, 99):02d}"
                if candidate not in phones:
                    phones.add(candidate)
                    phone = candidate
                    break
        address = None
        if rng.random() < 0.35:
            towns = PEOPLE.towns["CA" if locale in ("en-CA", "fr-CA") else "US"]
            address = f"{rng.randint(12, 9899)} {rng.choice(PEOPLE.streets)}, {rng.choice(towns)}"

        bio = _fill(rng.choice(persona["bios"]), gender)
        if rng.random() < 0.25 and persona["id"] not in ("zh-parent", "ja-parent", "es-parent"):
            extra_bio = rng.choice(
                [
                    "coffee first",
                    "two dogs",
                    "always behind on laundry",
                    "Sunday meal-prepper",
                    "lists for everything",
                    "chronic early riser",
                    "podcast addict",
                ]
            )
            bio = f"{bio}, {extra_bio}"
        activity = rng.paretovariate(1.3)  # a few prolific creators, a long quiet tail
        users.append(
            _User(
                handle,
                display,
                email,
                phone,
                address,
                "person",
                "user",
                rng.random() < 0.35,
                bio,
                locale,
                gender,
                persona,
                activity,
            )
        )

    # Two or three moderators among long-time members.
    persons = [u for u in users if u.kind == "person"]
    for u in rng.sample(persons, k=min(len(persons), 3 if n_people > 200 else 2)):
        u.role = "moderator"
        u.bio = f"community moderator; {u.bio}"
    return users


# --------------------------------------------------------------------------- sub-agents


@dataclass
class _Node:
    key: str
    root: dict[str, Any]
    parent: _Node | None
    cfg: dict[str, Any]
    scopes: set[str]
    applied: list[str]
    depth: int
    created: int
    title: str = ""
    summary: str = ""
    story: str = ""
    request: str | None = None
    tags: tuple[str, ...] = ()
    visibility: str = "public"
    author: _User | None = None
    category: str = ""
    children: int = 0
    base_title: str = ""
    bundles: tuple[DemoBundle, ...] = ()
    order: int = 0
    child_specs: set[str] = field(default_factory=set)

    @property
    def lang(self) -> str:
        return str(self.cfg["lang"])


def _base_config(root: dict[str, Any]) -> dict[str, Any]:
    lang = root.get("lang", "en")
    cfg: dict[str, Any] = {
        "title": root["title"],
        "lang": lang,
        "locale": root.get("locale") or _LANG_LOCALE[lang],
        "storeKey": f"sprig.{root['key']}",
    }
    cfg.update(copy.deepcopy(root["config"]))
    cfg["theme"] = {
        "accent": _DEFAULT_ACCENT,
        "good": "#2f855a",
        "warn": "#c53030",
        "muted": "#718096",
        "fontSize": 16,
        "dark": False,
    }
    cfg["features"] = {}
    cfg["ui"] = dict(APPS.ui[lang])
    return cfg


_MAX_EXTRA_FIELDS = 3
_MAX_FEATURES = 3


def _recipes_for(node: _Node, rng: Random, generic_only: bool = False) -> list[dict[str, Any]]:
    """Recipes that make sense for this node: not yet applied in its lineage, with
    their preconditions met, and speakable in the lineage's language."""
    out = []
    lang = node.lang
    extras = sum(1 for f in node.cfg["fields"] if f.get("extra"))
    extras -= sum(1 for f in node.root["config"]["fields"] if f.get("extra"))
    feats = sum(1 for f in APPS.feature_js if node.cfg["features"].get(f))
    for spec in list(node.root.get("forks", [])) + _generic_recipes(node.root, node.cfg, rng):
        if generic_only and not spec.get("generic"):
            continue
        if spec["id"] in node.applied or any(u in node.applied for u in spec.get("unless", ())):
            continue
        if any(_get(node.cfg, path) != value for path, value in spec.get("when", {}).items()):
            continue
        if lang != "en" and lang not in spec:
            continue  # a non-English app only takes requests people made in its language
        if spec.get("translate") and node.lang != "en":
            continue
        # Keep each app small (bundles stay well under 20 KB): a lineage gathers at
        # most three added inputs and three optional features.
        if spec.get("add_fields") and extras >= _MAX_EXTRA_FIELDS:
            continue
        if any(f in APPS.feature_js for f in spec.get("features", {})) and feats >= _MAX_FEATURES:
            continue
        out.append(spec)
    return out


def _apply(node: _Node, spec: dict[str, Any]) -> None:
    cfg = node.cfg
    if spec.get("translate"):
        target = spec["translate"]
        i18n = node.root["i18n"][target]
        cfg["lang"] = target
        cfg["locale"] = _LANG_LOCALE[target]
        cfg["ui"] = dict(APPS.ui[target])
        _localize(cfg, target)
        if "reminder" in cfg["features"]:
            cfg["features"]["reminder"]["message"] = (
                node.root.get("reminder", {}).get(target) or _REMINDER_FALLBACK[target]
            )
        node.base_title = i18n["title"]
    for path, value in spec.get("set", {}).items():
        _set(cfg, path, value)
    for path, items in spec.get("append", {}).items():
        _append(cfg, path, items)
    for f in spec.get("add_fields", []):
        cfg["fields"] = [x for x in cfg["fields"] if x["name"] != f["name"]] + [copy.deepcopy(f)]
    for name, value in spec.get("features", {}).items():
        cfg["features"][name] = copy.deepcopy(value)
    if cfg["lang"] != "en" and not spec.get("translate"):
        _localize(cfg, cfg["lang"])
    node.scopes |= set(spec.get("scopes", []))
    if cfg["features"].get("weather"):
        node.scopes.add("location.read")
    if spec.get("title"):
        node.base_title = spec["title"]
    node.applied.append(spec["id"])


def _touches(spec: dict[str, Any]) -> set[str]:
    """Top-level config keys a recipe changes (two changes to one key don't combine)."""
    keys = [*spec.get("set", {}), *spec.get("append", {}), *spec.get("features", {})]
    return {
        k.split(".")[0]
        if not k.startswith(("fields.", "features.", "theme."))
        else ".".join(k.split(".")[:2])
        for k in keys
    }


def _tag_of(spec: dict[str, Any], lang: str) -> str:
    return str(spec.get(f"tag_{lang}") or spec["tag"]) if lang != "en" else str(spec["tag"])


def _fork_title(base: str, specs: list[dict[str, Any]], lang: str) -> str:
    if specs[0].get("translate"):
        return f"{base}{_TRANSLATION_SUFFIX[specs[0]['translate']]}"
    tags = [_tag_of(s, lang) for s in specs]
    paren = [t for t in tags if t.startswith("(")]
    plain = [t for t in tags if not t.startswith("(")]
    title = base
    if plain:
        sep = "・" if lang == "ja" else " — "
        title = f"{base}{sep}{' & '.join(plain)}"
    if paren:
        title = f"{title} ({', '.join(t.strip('()') for t in paren)})"
    if specs[0].get("title") and len(specs) == 1:
        title = base  # the request renamed the app ("Guitar Practice Timer"); that is the title
    return title[:80]


def _slug(tag: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-")
    return s if 2 <= len(s) <= 24 and tag.isascii() else ""


def _pick_text(rng: Random, spec: dict[str, Any], lang: str, prefer: str) -> tuple[str, str]:
    """(request text, its language). ``lang`` is forced for translated lineages."""
    if lang != "en":
        texts = spec.get(lang) or spec["requests"]
        return rng.choice(texts), lang if spec.get(lang) else "en"
    if (
        prefer != "en"
        and spec.get(prefer)
        and rng.random() < (0.9 if spec.get("translate") else 0.75)
    ):
        return rng.choice(spec[prefer]), prefer
    return rng.choice(spec["requests"]), "en"


def _join_requests(a: str, b: str, lang: str) -> str:
    if lang == "zh":
        return f"{a.rstrip('。')}，另外{b}"
    if lang == "ja":
        return f"{a.rstrip('。')}。あと、{b}"
    if lang == "es":
        return f"{a}, y también {b}"
    b = b[0].lower() + b[1:] if b[:2] != "I " and b[:2] != "I'" else b
    return f"{a}, and {b}"


def _sentence(s: str) -> str:
    s = s.strip()
    s = s[0].upper() + s[1:] if s else s
    return s if s.endswith((".", "!", "?", "。", "！", "？")) else s + "."


_DURATIONS = [
    "for a few weeks",
    "for about a month",
    "since the spring",
    "for two months",
    "for most of the year",
]
_FAMILY_WORDS = re.compile(
    r"\b(kids?|son|daughter|baby|toddler|twins|husband|wife|partner|mom|dad|teens?|"
    r"pregnan\w*|newborn|\d+)\b",
    re.IGNORECASE,
)


def _clash(intro: str, why: str) -> bool:
    """Both sentences describe the household: two versions of it would contradict."""
    return bool(_FAMILY_WORDS.search(intro)) and bool(_FAMILY_WORDS.search(why))


_GENERIC_WHY = {
    "family": "it didn't quite fit how our family works",
    "default": "a couple of small things bugged me every single day",
}
_STORY_ZH = [
    "{intro}我一直在用「{parent}」，{why}。所以我请编程助手改了一版：{request}。{outcome}",
    "{intro}「{parent}」很好用，但{why}。我的版本{change}。{outcome}",
]
_STORY_JA = [
    "{intro}「{parent}」を使っていましたが、{why}。そこで「{request}」とお願いして作ってもらいました。{outcome}",
    "{intro}「{parent}」はとても便利ですが、{why}。このバージョンは{change}。{outcome}",
]
_STORY_ES = [
    "{intro} Usaba «{parent}», pero {why}. Le pedí al agente: «{request}». {outcome}",
]
_WHY_LOCAL = {
    "zh": ["家里的情况有点不一样", "家里老人也想用", "有几个小地方每天都不太顺手"],
    "ja": ["うちの家族には少し合わないところがありました", "細かいところが毎日気になっていました"],
    "es": ["no se ajustaba del todo a mi familia", "había detallitos que me molestaban diario"],
}
_CHANGE_LOCAL = {"zh": "改成了「{tag}」", "ja": "「{tag}」に対応しています"}


def _fork_story(
    rng: Random,
    node: _Node,
    parent_title: str,
    specs: list[dict[str, Any]],
    request: str,
    request_lang: str,
) -> str:
    author = node.author
    assert author is not None
    cat = node.category
    if request_lang in ("zh", "ja", "es"):
        persona = next(p for p in PEOPLE.personas if p["id"] == f"{request_lang}-parent")
        intros = persona["intros"]
        intro = rng.choice(intros)
        outcome = rng.choice(
            {"zh": PEOPLE.outcomes_zh, "ja": PEOPLE.outcomes_ja, "es": PEOPLE.outcomes_es}[
                request_lang
            ]
        )
        template = rng.choice({"zh": _STORY_ZH, "ja": _STORY_JA, "es": _STORY_ES}[request_lang])
        tag = _tag_of(specs[0], request_lang)
        change = _CHANGE_LOCAL.get(request_lang, "{tag}").format(tag=tag)
        native = [w for w in specs[0].get("why", []) if not w.isascii()]
        why = specs[0].get("why_local") or (
            rng.choice(native) if native else rng.choice(_WHY_LOCAL[request_lang])
        )
        return template.format(
            intro=intro,
            parent=parent_title,
            why=why,
            request=request.rstrip("。."),
            change=change,
            outcome=outcome,
        )
    whys = specs[0].get("why") or [_GENERIC_WHY.get(cat, _GENERIC_WHY["default"])]
    why = rng.choice(whys)
    # The persona's own sentence only when it fits this kind of app and doesn't
    # describe the household differently from the reason ("kids 13 and 16" vs "15").
    intro = _fill(rng.choice(author.persona["intros"]), author.gender)
    if cat not in author.persona["cats"][:3] or not intro.isascii() or _clash(intro, why):
        intro = ""
    parent_title = f"“{parent_title}”"
    does = " and ".join(s["does"] for s in specs)
    outcome = rng.choice(PEOPLE.outcomes.get(cat, PEOPLE.outcomes["family"]))
    style = rng.randrange(4)
    if style == 0:
        parts = [
            intro,
            f"I'd been using {parent_title} {rng.choice(_DURATIONS)}, but {why}.",
            f"So I asked the coding agent for a version that {does}.",
            outcome,
        ]
    elif style == 1:
        parts = [
            intro,
            _sentence(why),
            f"This is {parent_title} with my changes: it {does}.",
            outcome,
        ]
    elif style == 2:
        parts = [
            _sentence(why),
            intro,
            f"I forked {parent_title} so that it {does}, and kept everything else.",
        ]
    else:
        parts = [
            intro,
            f"{parent_title} was almost perfect, except {why}.",
            f"My fork {does}.",
            outcome,
        ]
    return " ".join(p for p in parts if p)


def _fork_summary(node: _Node, specs: list[dict[str, Any]]) -> str:
    if specs[0].get("translate"):
        return str(node.root["i18n"][specs[0]["translate"]]["summary"])
    if node.lang != "en" or node.root.get("lang", "en") != "en":
        short = node.root["short"] if node.root.get("lang", "en") == node.lang else node.base_title
        tags = (
            "、".join(_tag_of(s, node.lang) for s in specs)
            if node.lang in ("zh", "ja")
            else ", ".join(_tag_of(s, node.lang) for s in specs)
        )
        return f"{short}（{tags}）。" if node.lang in ("zh", "ja") else f"{short} ({tags})."
    does = ", and ".join(s["does"] for s in specs)
    return f"{node.root['short']} that {does}."


def _leaks(user: _User, haystack: str) -> bool:
    """True if any of the user's personal values appears in ``haystack`` (lowercased)."""
    for value in user.personal_values():
        if value.lower() in haystack:
            return True
    if user.phone:
        d = re.sub(r"\D", "", user.phone)[-7:]
        spellings = (d, f"{d[:3]}-{d[3:]}", f"{d[:3]} {d[3:]}", f"{d[:3]}.{d[3:]}")
        if any(x in haystack for x in spellings):
            return True
    return False


def _node_text(node: _Node) -> str:
    parts = [node.story, node.title, node.summary, node.request or ""]
    for b in node.bundles:
        parts.append(json.dumps(b.manifest, ensure_ascii=False))
        parts.extend(b.files.values())
        parts.append(b.changelog)
    return "\n".join(parts).lower()


class _Forest:
    """Grows the fork forest; keeps bookkeeping out of generate_community."""

    def __init__(self, rng: Random, users: list[_User]) -> None:
        self.rng = rng
        self.nodes: list[_Node] = []
        self.persons = [u for u in users if u.kind == "person"]
        self.by_lang: dict[str, list[_User]] = {}
        for u in self.persons:
            self.by_lang.setdefault(u.lang, []).append(u)
        self.counter: dict[str, int] = {}
        self._author_cache: dict[tuple[Any, ...], tuple[list[_User], list[float]]] = {}
        self.root_authors: set[str] = set()

    # -- authors
    def choose_author(
        self,
        node: _Node,
        lang: str,
        gender: str | None = None,
        locale: str | None = None,
        avoid: _User | None = None,
    ) -> _User:
        """A person likely to have made this: active, into this category, speaks ``lang``."""
        key = (node.category, lang, gender, locale)
        if key not in self._author_cache:
            if locale:
                pool = [u for u in self.persons if u.locale == locale]
            elif lang != "en" and self.by_lang.get(lang):
                pool = self.by_lang[lang]
            else:
                pool = self.persons
            if gender:
                pool = [u for u in pool if u.gender == gender] or pool
            cum, total = [], 0.0
            for u in pool:
                cats = u.persona["cats"]
                affinity = (
                    3.0 if cats[0] == node.category else 1.8 if node.category in cats else 0.35
                )
                total += u.activity * affinity * (1.0 if u.lang == lang else 0.25)
                cum.append(total)
            self._author_cache[key] = (pool, cum)
        pool, cum = self._author_cache[key]
        pick = pool[0]
        for _ in range(10):
            pick = self.rng.choices(pool, cum_weights=cum, k=1)[0]
            if pick is not avoid:
                break
        return pick

    def settle_author(self, node: _Node, chooser: Any) -> None:
        """Pick authors until none of their personal values appear anywhere public."""
        text = _node_text(node)
        for _ in range(50):
            author = chooser()
            if not _leaks(author, text):
                node.author = author
                return
        raise RuntimeError(f"no privacy-safe author for {node.key}")  # pragma: no cover

    # -- nodes
    def add_root(self, root: dict[str, Any], created: int) -> _Node:
        cfg = _base_config(root)
        node = _Node(
            key=root["key"],
            root=root,
            parent=None,
            cfg=cfg,
            scopes=set(root["scopes"]),
            applied=[],
            depth=0,
            created=created,
            category=root["category"],
            base_title=root["title"],
            title=root["title"],
            summary=root["summary"],
            story=root["story"],
            tags=tuple(root["tags"][:5]),
            order=len(self.nodes),
        )
        node.visibility = "unlisted" if self.rng.random() < 0.03 else "public"
        self._finish_versions(node)
        self.settle_author(node, lambda: self.choose_root_author(node))
        author = node.author
        assert author is not None
        self.root_authors.add(author.handle)
        # The creator's profile tells the same story as the root ("ex-college rower").
        author.bio = (
            root["bio"] if author.role != "moderator" else f"community moderator; {root['bio']}"
        )
        self.nodes.append(node)
        return node

    def choose_root_author(self, node: _Node) -> _User:
        """Each root has its own creator, in the root's language and voice."""
        root = node.root
        lang = root.get("lang", "en")
        pool = [
            u
            for u in self.persons
            if u.lang == lang
            and u.handle not in self.root_authors
            and (not root.get("locale") or u.locale == root["locale"])
            and (not root.get("gender") or u.gender == root["gender"])
        ]
        pool = (
            pool or [u for u in self.persons if u.handle not in self.root_authors] or self.persons
        )
        weights = [u.activity * (3.0 if node.category in u.persona["cats"] else 1.0) for u in pool]
        return _weighted(self.rng, pool, weights)

    def fork(
        self, parent: _Node, created: int, specs: list[dict[str, Any]], *, public: bool = False
    ) -> _Node:
        """A fork of ``parent`` applying ``specs``; ``public`` for lineages others build on."""
        rng = self.rng
        root = parent.root
        n = self.counter.get(root["key"], 0) + 1
        self.counter[root["key"]] = n
        node = _Node(
            key=f"{root['key']}/f{n}",
            root=root,
            parent=parent,
            cfg=copy.deepcopy(parent.cfg),
            scopes=set(parent.scopes),
            applied=list(parent.applied),
            depth=parent.depth + 1,
            created=created,
            category=parent.category,
            base_title=parent.base_title,
            order=len(self.nodes),
        )
        for spec in specs:
            _apply(node, spec)
        lang = node.lang
        node.title = _fork_title(node.base_title, specs, lang)
        node.cfg["title"] = node.title
        node.summary = _fork_summary(node, specs)
        extra = [t for s in specs for t in s.get("tags", [])]
        extra += [_slug(_tag_of(s, "en")) for s in specs if not s.get("tags")]
        node.tags = tuple(dict.fromkeys([*parent.tags[:3], *[t for t in extra if t]]))[:5]
        roll = rng.random()
        node.visibility = "private" if roll < 0.05 else "unlisted" if roll < 0.10 else "public"
        if public:
            node.visibility = "public"  # others fork it next; nobody can fork a private app
        # The request is written by the author, so choose who first, in their language.
        target_lang = specs[0]["translate"] if specs[0].get("translate") else lang
        parent_lang = parent.lang
        # A request worded in Spanish/Chinese/Japanese ("cámbialo a pesos") usually
        # comes from someone who speaks it.
        voice = parent_lang
        first = specs[0]
        if parent_lang == "en" and not first.get("generic") and not first.get("translate"):
            spoken = [x for x in ("es", "zh", "ja") if x in first]
            if spoken and rng.random() < 0.7:
                voice = spoken[0]
        gender = next((s["gender"] for s in specs if s.get("gender")), None)
        author = self.choose_author(
            node, target_lang if target_lang != "en" else voice, gender=gender, avoid=parent.author
        )
        texts = [
            _pick_text(
                rng,
                s,
                parent_lang if not s.get("translate") else "en",
                s["translate"] if s.get("translate") else author.lang,
            )
            for s in specs
        ]
        request_lang = texts[0][1]
        request = texts[0][0]
        for text, tl in texts[1:]:
            request = _join_requests(request, text, request_lang if tl == request_lang else "en")
        node.request = request
        node.author = author
        node.story = _fork_story(rng, node, parent.title, specs, request, request_lang)
        self._finish_versions(node)
        chooser_lang = target_lang if target_lang != "en" else voice

        def chooser() -> _User:
            return self.choose_author(node, chooser_lang, gender=gender, avoid=parent.author)

        if _leaks(author, _node_text(node)):
            self.settle_author(node, chooser)
        parent.children += 1
        parent.child_specs.update(s["id"] for s in specs)
        self.nodes.append(node)
        return node

    def _finish_versions(self, node: _Node) -> None:
        """Render v1 and maybe later versions (small tweaks with a changelog)."""
        rng = self.rng
        popular = node.root.get("popularity", 10) >= 40
        roll = rng.random()
        n_versions = (
            1 if roll < (0.45 if popular else 0.6) else 2 if roll < (0.8 if popular else 0.9) else 3
        )
        bundles = [_render_bundle(node, "")]
        for _ in range(n_versions - 1):
            # Roots only get housekeeping updates; their identity (units, goal) is the
            # creator's story. Forks may also ship one of their own follow-up changes.
            options = [
                s
                for s in _recipes_for(node, rng, generic_only=node.parent is None)
                if s.get("changelog") and not s.get("translate") and not s.get("title")
            ]
            if not options:
                break
            spec = rng.choice(options)
            _apply(node, spec)
            node.cfg["title"] = node.title
            bundles.append(_render_bundle(node, spec["changelog"]))
        node.bundles = tuple(bundles)

    def choose_specs(self, node: _Node, *, spine: bool = False) -> list[dict[str, Any]]:
        """One or two recipes for a new fork of ``node``. Siblings ask for different
        things; spines (deliberately deep lineages) avoid translations and renames,
        which narrow what later forks can ask for."""
        rng = self.rng
        options = [
            s
            for s in _recipes_for(node, rng)
            if s["id"] not in node.child_specs
            and not (spine and (s.get("translate") or s.get("title")))
        ]
        if not options:
            return []
        own = {s["id"] for s in node.root.get("forks", [])}
        weights = [3.0 if s["id"] in own else 0.5 if s.get("translate") else 1.0 for s in options]
        first = _weighted(rng, options, weights)
        specs = [first]
        if not first.get("translate") and rng.random() < 0.3:
            probe = _Node(
                key="probe",
                root=node.root,
                parent=None,
                cfg=copy.deepcopy(node.cfg),
                scopes=set(),
                applied=[*node.applied],
                depth=0,
                created=0,
            )
            _apply(probe, first)
            touched = _touches(first)
            second = [
                s
                for s in _recipes_for(probe, rng)
                if not s.get("translate")
                and not s.get("title")
                and not first.get("title")
                and not (_touches(s) & touched)
                and s["id"] not in node.child_specs
                and (
                    not s.get("gender") or not first.get("gender") or s["gender"] == first["gender"]
                )
            ]
            if second:
                specs.append(rng.choice(second))
        return specs


def _grow(rng: Random, users: list[_User], n_subagents: int) -> list[_Node]:
    forest = _Forest(rng, users)
    roots = sorted(ROOTS, key=lambda r: -r["popularity"])
    n_roots = max(1, min(len(roots), n_subagents // 6 or 1))
    roots = roots[:n_roots]
    root_nodes = []
    for i, root in enumerate(roots):
        created = rng.randint(300, 365) if i < 8 else rng.randint(90, 340)
        root_nodes.append(forest.add_root(root, created))

    budget = max(0, n_subagents - len(root_nodes))

    def child_age(parent: _Node, spread: int = 45) -> int:
        return rng.randint(max(1, parent.created - spread), parent.created - 1)

    # Spines first: a few lineages grow deep (one to depth >= 9, several >= 6).
    for idx, depth in ((0, 10), (1, 7), (2, 7), (3, 6), (4, 6), (5, 6)):
        if idx >= len(root_nodes):
            break
        node = root_nodes[idx]
        for _ in range(depth):
            if budget <= 0 or node.created < 2:
                break
            specs = forest.choose_specs(node, spine=True)
            if not specs:
                break
            node = forest.fork(node, child_age(node, 30), specs, public=True)
            budget -= 1

    # Then bushy growth: roots by Zipf-ish popularity, parents by preferential attachment.
    pop = [float(r["popularity"]) ** 1.5 for r in roots]
    tries, max_tries = 0, budget * 60 + 100
    while budget > 0 and tries < max_tries:
        tries += 1
        root = _weighted(rng, roots, pop)
        tree = [
            n
            for n in forest.nodes
            if n.root is root and n.visibility != "private" and n.created >= 2
        ]
        if not tree:
            continue
        weights = [(1.0 + 1.5 * n.children) * (2.5 if n.parent is None else 1.0) for n in tree]
        parent = _weighted(rng, tree, weights)
        specs = forest.choose_specs(parent)
        if not specs:
            continue
        forest.fork(parent, child_age(parent), specs)
        budget -= 1
    return forest.nodes


# --------------------------------------------------------------------------- installs & requests


def _installs(rng: Random, users: list[_User], nodes: list[_Node]) -> list[DemoInstall]:
    # Popularity: root popularity x lineage success x luck, then Zipf by rank.
    score = []
    for n in nodes:
        base = float(n.root["popularity"]) * (1.0 + n.children) ** 0.8 * rng.lognormvariate(0, 0.5)
        if n.parent is not None:
            base *= 0.35
        score.append(base)
    ranked = sorted(range(len(nodes)), key=lambda i: -score[i])
    weight = [0.0] * len(nodes)
    for rank, i in enumerate(ranked):
        vis = nodes[i].visibility
        weight[i] = (1.0 / (rank + 1) ** 0.95) * (
            0.0 if vis == "private" else 0.15 if vis == "unlisted" else 1.0
        )
    cum = []
    total = 0.0
    for w in weight:
        total += w
        cum.append(total)
    out: list[DemoInstall] = []
    seen: set[tuple[str, str]] = set()
    # Authors always have their own sub-agents installed (the only way to get a private one).
    for n in nodes:
        assert n.author is not None
        pair = (n.author.handle, n.key)
        if pair not in seen:
            seen.add(pair)
            out.append(DemoInstall(n.author.handle, n.key, rng.randint(0, n.created - 1)))
    for u in users:
        if u.kind != "person":
            continue
        want = min(40, 1 + int(rng.expovariate(1 / 5.5)))
        got = 0
        for _ in range(want * 6):
            if got >= want:
                break
            i = rng.choices(range(len(nodes)), cum_weights=cum, k=1)[0]
            n = nodes[i]
            pair = (u.handle, n.key)
            if pair in seen or n.created < 1:
                continue
            if n.category not in u.persona["cats"] and rng.random() < 0.45:
                continue  # people mostly install what fits their life
            seen.add(pair)
            out.append(DemoInstall(u.handle, n.key, rng.randint(0, n.created - 1)))
            got += 1
    return out


def _open_requests(
    rng: Random, users: list[_User], nodes: list[_Node], installs: list[DemoInstall], target: int
) -> list[DemoForkRequest]:
    by_key = {n.key: n for n in nodes}
    by_handle = {u.handle: u for u in users}
    children_specs: dict[str, set[str]] = {}
    for n in nodes:
        if n.parent is not None:
            children_specs.setdefault(n.parent.key, set()).update(
                n.applied[len(n.parent.applied) :]
            )
    candidates = [
        i
        for i in installs
        if by_key[i.subagent].visibility != "private"
        and by_handle[i.user].kind == "person"
        and by_key[i.subagent].author is not by_handle[i.user]
    ]
    out: list[DemoForkRequest] = []
    seen: set[tuple[str, str]] = set()
    asked: dict[str, set[str]] = {}  # one open request per recipe per sub-agent
    for _ in range(target * 20):
        if len(out) >= target or not candidates:
            break
        inst = rng.choice(candidates)
        node = by_key[inst.subagent]
        user = by_handle[inst.user]
        if (user.handle, node.key) in seen or node.created < 2:
            continue
        if node.lang != "en" and user.lang != node.lang:
            continue  # requests on a Japanese/Chinese app come from people who read it
        taken = children_specs.get(node.key, set()) | asked.get(node.key, set())
        options = [
            s
            for s in _recipes_for(node, rng)
            if s["id"] not in taken
            and (not s.get("gender") or s["gender"] == user.gender)
            and (not s.get("translate") or s["translate"] == user.lang)
        ]
        if not options:
            continue
        spec = rng.choice(options)
        text, _ = _pick_text(
            rng,
            spec,
            node.lang if not spec.get("translate") else "en",
            spec["translate"] if spec.get("translate") else user.lang,
        )
        seen.add((user.handle, node.key))
        asked.setdefault(node.key, set()).add(spec["id"])
        days = rng.randint(0, min(21, node.created - 1, max(0, inst.days_ago)))
        out.append(DemoForkRequest(user.handle, node.key, text, days))
    return out


# --------------------------------------------------------------------------- entry point


def generate_community(
    seed: int = 7, *, n_users: int = 1200, n_subagents: int = 360
) -> DemoCommunity:
    """Build the demo community for ``seed``. Pure and deterministic."""
    rng = Random(seed)
    users = _make_users(rng, n_users)
    nodes = _grow(rng, users, n_subagents)
    installs = _installs(rng, users, nodes)
    n_requests = (
        max(30, min(60, round(len(users) * 0.038))) if n_users >= 200 else max(1, n_users // 20)
    )
    requests = _open_requests(rng, users, nodes, installs, n_requests)

    # Oldest first; a child is always strictly younger than its parent, so parents lead.
    nodes.sort(key=lambda n: (-n.created, n.order))
    subagents = []
    for n in nodes:
        assert n.author is not None
        subagents.append(
            DemoSubAgent(
                key=n.key,
                author=n.author.handle,
                title=n.title,
                summary=n.summary,
                story=n.story,
                category=n.category,
                tags=n.tags,
                visibility=n.visibility,
                parent=n.parent.key if n.parent else None,
                fork_request=n.request,
                versions=n.bundles,
                created_days_ago=n.created,
            )
        )
    installs.sort(key=lambda i: (-i.days_ago, i.user, i.subagent))
    return DemoCommunity(
        users=tuple(u.freeze() for u in users),
        subagents=tuple(subagents),
        installs=tuple(installs),
        fork_requests=tuple(requests),
    )
