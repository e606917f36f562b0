"""Request and response models of ``POST /api/v1/suggestions`` (and the MCP tool)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from market.catalog.bundles.manifest import SCOPES
from market.catalog.models import Category
from market.platform.schemas import StrictInput, whole_number

# A permission a manifest may ask for ("health.injuries.read"): the closed list bundles check.
ScopeName = Literal[tuple(sorted(SCOPES))]
# Some character that can carry meaning, and no NUL: an ASCII letter or digit, or a character of
# the Basic Multilingual Plane past Latin-1's symbols (accented letters, CJK, kana, Hangul).
# Spelled with explicit ranges so that the document's regex means the same to every reader:
# JavaScript (where \w is ASCII only and an emoji is two UTF-16 halves, both kept out of these
# ranges) and Python (where `[^\W_]` would be any letter, and an emoji is one code point past
# them). The server checks with this very class.
_MEANINGFUL = "[0-9A-Za-z\\u00c0-\\ud7ff\\ue000-\\uffff]"
REQUEST_PATTERN = f"^[^\\u0000]*{_MEANINGFUL}[^\\u0000]*$"
_MEANINGFUL_CHARACTER = re.compile(_MEANINGFUL)


class SuggestionsIn(StrictInput):
    request: str = Field(
        min_length=1,
        max_length=2000,
        description="what the person asked for, in their words (any language)",
        json_schema_extra={"pattern": REQUEST_PATTERN},
    )
    category: Category | None = Field(None, description="only bases of this category")
    granted_scopes: list[ScopeName] | None = Field(
        None,
        max_length=200,
        description="the permissions the person granted: only bases whose manifest scopes "
        "are all among them (omit: no restriction; []: only bases that ask for none)",
    )
    locale: str | None = Field(
        None,
        max_length=35,
        pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$",
        description="the person's locale (BCP 47, e.g. ja-JP): of a family's branches, the one "
        "in its script is shown when it is nearly as good",
    )
    gloss: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="optional: the request rendered in English by the coding agent; searched "
        "beside the request, it finds listings the dictionaries cannot bridge (and requests "
        "in languages without a packaged dictionary, such as Korean)",
        json_schema_extra={"pattern": REQUEST_PATTERN},
    )
    k: whole_number(1, 20) = Field(5, description="how many bases")

    @field_validator("request", "gloss")
    @classmethod
    def _has_words(cls, value: str | None) -> str | None:
        if value is not None and not _MEANINGFUL_CHARACTER.search(value):
            raise ValueError("must contain at least one letter or digit")
        return value


class QualityOut(BaseModel):
    mean: float = Field(description="E[θ], rater-corrected quality in standard rating units")
    sd: float = Field(description="sd(θ)")
    young: bool = Field(description="too little evidence of its own: explored")
    rating_count: int
    ranked: bool = Field(description="false: not ranked yet; the prior (mean 0, sd 1) stands in")


class MatchOut(BaseModel):
    terms: list[str] = Field(
        description="the words of the request this base matched; a Chinese or Japanese word "
        'matched through its English gloss reads "word (gloss)", e.g. "跑步 (run)"'
    )
    fields: dict[str, list[str]] = Field(description="field → the words it matched")


class ThemeOut(BaseModel):
    label: str
    kind: str = Field(description="tag (a feedback tag) | comments (a cluster of comments)")
    count: int = Field(description="ratings in this theme")
    examples: list[str] = Field(description="a few comments, contact details removed")


class ImprovementOut(BaseModel):
    fork_id: int
    title: str
    version_id: int
    improvement: float = Field(description="E[θ_fork] − E[θ_base]")
    p_better: float = Field(description="P(θ_fork > θ_base)")
    rating_count: int
    request: str = Field(description="the fork request that asked for the change")
    changelog: str
    scopes_added: list[str]
    scopes_removed: list[str]
    hosts_added: list[str]
    hosts_removed: list[str]
    files_added: list[str]
    files_changed: list[str]
    files_removed: list[str]
    summary: str


class SuggestionOut(BaseModel):
    subagent_id: int
    title: str
    summary: str
    category: str
    version_id: int
    version_number: int
    scopes: list[str] = Field(description="permissions the base's manifest asks for")
    relevance: float = Field(
        description="text relevance of request and base in [0, 1]: the mean of the cosines "
        "of their words (with English glosses of Chinese and Japanese words) and of their "
        "character n-grams"
    )
    fit: float = Field(
        description="calibrated probability that this base fits the request (from relevance; "
        "fitted on labelled requests)"
    )
    quality: QualityOut
    score: float = Field(
        description="the order: min(logit(fit), 5) + coverage of the request's words + 2 if "
        "the request is its title + 0.5 tanh(L/2) + 0.35 sd·young + 0.2 ln(1 + active users), "
        "L = mean − 1.64 sd"
    )
    why: MatchOut
    themes: list[ThemeOut] = Field(description="what users of this base asked for")
    improving_forks: list[ImprovementOut] = Field(
        description="forks of this base rated better than it, and what they changed"
    )


class SuggestionsOut(BaseModel):
    verdict: Literal["fits", "weak", "none"] = Field(
        description="fits: the best base probably fits (fork it); weak: only related bases, "
        "a partial start; none: nothing here fits — write it from scratch (items is empty)"
    )
    best_fit: float = Field(description="the highest fit among all candidates, in [0, 1]")
    items: list[SuggestionOut] = Field(
        description="bases, best first, one per fork family before any family's second"
    )
    indexed: int = Field(description="sub-agents in the suggestion index")
