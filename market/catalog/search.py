"""Text search for languages written without spaces: Chinese, Japanese (and Korean).

The catalog's full-text indexes (SQLite FTS5 unicode61, PostgreSQL 'english') cut text at
spaces and punctuation, so "每日喝水记录" is one word and a search for "喝水" finds nothing.
The suggestion index (``evolution.text_index``) already indexes every listing on character
n-grams (single CJK characters and pairs), is kept up to date on publish in every process,
and answers in milliseconds: browse search and recommendation context use it for such text.

Only listed (public, active) sub-agents are in that index, which is all browse and
recommendations show.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session

from evolution.text_index import script_of
from market.platform.state import app_state

# (text, category or None, limit) → (sub-agent id, relevance in [0, 1]) pairs, best first.
TextMatcher = Callable[[str, str | None, int], list[tuple[int, float]]]

# Below this a match shares little more than a particle (の, 的) or one common character
# with the listing; measured on the demo's Chinese and Japanese requests, real matches score
# 0.2 to 0.4 and unrelated ones under 0.03.
MIN_RELEVANCE = 0.1
CJK_SCRIPTS = ("zh", "ja", "ko")


def written_without_spaces(text: str | None) -> bool:
    """Whether ``text`` is mostly in a script the word indexes cannot cut into words."""
    return bool(text) and script_of(text) in CJK_SCRIPTS


def relevant_ids(matcher: TextMatcher, text: str, *, category: str | None, limit: int) -> list[int]:
    """The sub-agents that really match ``text``, best first."""
    return [
        subagent_id
        for subagent_id, relevance in matcher(text, category, limit)
        if relevance >= MIN_RELEVANCE
    ]


def matcher_for(app, session: Session) -> TextMatcher:
    """The app's matcher: its suggestion index, brought up to date (reading through
    ``session``) before each search."""

    def matches(text: str, category: str | None, limit: int) -> list[tuple[int, float]]:
        found = app_state(app).suggestions.matching(session, text, category=category, limit=limit)
        return [(match.subagent_id, match.relevance) for match in found]

    return matches
