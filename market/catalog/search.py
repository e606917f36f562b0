"""Text search over the catalog, in any language, by the one relevance engine.

Browse search, recommendation context and fork suggestions all ask the suggestion index
(``evolution.text_index``: words segmented per language, English glosses of Chinese and
Japanese words, character n-grams), kept up to date on publish in every process, and order
what it finds by one score of calibrated fit and quality (``evolution.suggest``). A search
in Chinese finds a listing written in English and the reverse; a person sees the same
ranking a coding agent gets.

Only listed (public, active) sub-agents are in that index, which is all browse and
recommendations show.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session

from market.platform.state import app_state

# (text, category or None, limit) → (sub-agent id, P(fits)) pairs of the candidates that may
# fit, best first by the one score of fit and quality.
TextMatcher = Callable[[str, str | None, int], list[tuple[int, float]]]


def relevant_ids(matcher: TextMatcher, text: str, *, category: str | None, limit: int) -> list[int]:
    """The sub-agents that may fit ``text``, best first."""
    return [subagent_id for subagent_id, _fit in matcher(text, category, limit)]


def matcher_for(app, session: Session) -> TextMatcher:
    """The app's matcher: its suggestion index, brought up to date (reading through
    ``session``) before each search."""

    def matches(text: str, category: str | None, limit: int) -> list[tuple[int, float]]:
        found = app_state(app).suggestions.matching(session, text, category=category, limit=limit)
        return [(match.subagent_id, match.fit) for match in found]

    return matches
