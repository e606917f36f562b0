"""Fork recipes: what people ask a sub-agent for, and the change each request makes.

A root's own recipes come from its data file (``assets/roots/*.json``); the generic ones
here (reminders, quiet hours, dark mode, bigger text, safe delete, colours, CSV export,
weather, translations) fit any app, some depending on its engine, category or state.
A recipe changes a config through paths such as ``fields.amount.unit`` (the unit of the
field named "amount"); :func:`recipes_for` offers the ones a sub-agent can still take
and :func:`apply_recipe` makes the change.
"""

from __future__ import annotations

import copy
from random import Random
from typing import TYPE_CHECKING, Any

from market.demo.material import APPS

if TYPE_CHECKING:
    from market.demo.forest import Node


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
TRANSLATION_SUFFIX = {"zh": "（中文版）", "ja": "（日本語版）", "es": " (en español)"}


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
        "tag": TRANSLATION_SUFFIX[target].strip(" ()（）"),
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


# --------------------------------------------------------------------------- applying recipes


def base_config(root: dict[str, Any]) -> dict[str, Any]:
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


def recipes_for(node: Node, rng: Random, generic_only: bool = False) -> list[dict[str, Any]]:
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


def apply_recipe(node: Node, spec: dict[str, Any]) -> None:
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


def touches(spec: dict[str, Any]) -> set[str]:
    """Top-level config keys a recipe changes (two changes to one key don't combine)."""
    keys = [*spec.get("set", {}), *spec.get("append", {}), *spec.get("features", {})]
    return {
        k.split(".")[0]
        if not k.startswith(("fields.", "features.", "theme."))
        else ".".join(k.split(".")[:2])
        for k in keys
    }
