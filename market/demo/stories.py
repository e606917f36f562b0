"""The words of a fork: its title and summary, the request in the requester's language,
and the story its author tells (the author's persona, the parent app, why they asked)."""

from __future__ import annotations

import re
from random import Random
from typing import TYPE_CHECKING, Any

from market.demo.material import PEOPLE
from market.demo.recipes import TRANSLATION_SUFFIX
from market.demo.users import fill

if TYPE_CHECKING:
    from market.demo.forest import Node


def tag_of(spec: dict[str, Any], lang: str) -> str:
    return str(spec.get(f"tag_{lang}") or spec["tag"]) if lang != "en" else str(spec["tag"])


def fork_title(base: str, specs: list[dict[str, Any]], lang: str) -> str:
    if specs[0].get("translate"):
        return f"{base}{TRANSLATION_SUFFIX[specs[0]['translate']]}"
    tags = [tag_of(s, lang) for s in specs]
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


def slug(tag: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-")
    return s if 2 <= len(s) <= 24 and tag.isascii() else ""


def pick_text(rng: Random, spec: dict[str, Any], lang: str, prefer: str) -> tuple[str, str]:
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


def join_requests(a: str, b: str, lang: str) -> str:
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


def fork_story(
    rng: Random,
    node: Node,
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
        tag = tag_of(specs[0], request_lang)
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
    intro = fill(rng.choice(author.persona["intros"]), author.gender)
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


def fork_summary(node: Node, specs: list[dict[str, Any]]) -> str:
    if specs[0].get("translate"):
        return str(node.root["i18n"][specs[0]["translate"]]["summary"])
    if node.lang != "en" or node.root.get("lang", "en") != "en":
        short = node.root["short"] if node.root.get("lang", "en") == node.lang else node.base_title
        tags = (
            "、".join(tag_of(s, node.lang) for s in specs)
            if node.lang in ("zh", "ja")
            else ", ".join(tag_of(s, node.lang) for s in specs)
        )
        return f"{short}（{tags}）。" if node.lang in ("zh", "ja") else f"{short} ({tags})."
    does = ", and ".join(s["does"] for s in specs)
    return f"{node.root['short']} that {does}."
