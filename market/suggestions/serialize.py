"""The suggestion request from its API body, and the answer as its response model (for the
API and the MCP tool alike)."""

from __future__ import annotations

from evolution.suggest import Quality
from evolution.themes import Theme
from market.suggestions.schemas import (
    ImprovementOut,
    MatchOut,
    QualityOut,
    SuggestionOut,
    SuggestionsIn,
    SuggestionsOut,
    ThemeOut,
)
from market.suggestions.services import ImprovingFork, Suggestion, SuggestionRequest, Suggestions


def suggestion_request(body: SuggestionsIn) -> SuggestionRequest:
    return SuggestionRequest(
        text=body.request,
        category=body.category.value if body.category else None,
        granted_scopes=body.granted_scopes,
        locale=body.locale,
        k=body.k,
        gloss=body.gloss,
    )


def suggestions_out(answer: Suggestions) -> SuggestionsOut:
    return SuggestionsOut(
        verdict=answer.verdict,
        best_fit=round(answer.best_fit, 6),
        items=[_suggestion_out(s) for s in answer.items],
        indexed=answer.indexed,
    )


def _suggestion_out(suggestion: Suggestion) -> SuggestionOut:
    matched = suggestion.matched
    return SuggestionOut(
        subagent_id=suggestion.subagent_id,
        title=suggestion.title,
        summary=suggestion.summary,
        category=suggestion.category,
        version_id=suggestion.version_id,
        version_number=suggestion.version_number,
        scopes=suggestion.scopes,
        relevance=round(suggestion.relevance, 6),
        fit=round(suggestion.fit, 6),
        quality=_quality_out(suggestion.quality),
        score=round(suggestion.score, 6),
        why=MatchOut(
            terms=list(dict.fromkeys(t for terms in matched.values() for t in terms)),
            fields=matched,
        ),
        themes=[_theme_out(theme) for theme in suggestion.themes],
        improving_forks=[_improvement_out(fork) for fork in suggestion.improving_forks],
    )


def _quality_out(quality: Quality) -> QualityOut:
    return QualityOut(
        mean=round(quality.mean, 6),
        sd=round(quality.sd, 6),
        young=quality.young,
        rating_count=quality.rating_count,
        ranked=quality.ranked,
    )


def _theme_out(theme: Theme) -> ThemeOut:
    return ThemeOut(
        label=theme.label, kind=theme.kind, count=theme.count, examples=list(theme.examples)
    )


def _improvement_out(improving: ImprovingFork) -> ImprovementOut:
    improvement = improving.improvement
    fork, change = improvement.fork, improvement.fork.change
    return ImprovementOut(
        fork_id=fork.subagent_id,
        title=fork.title,
        version_id=improving.version_id,
        improvement=round(improvement.improvement, 6),
        p_better=round(improvement.p_better, 6),
        rating_count=fork.quality.rating_count,
        request=fork.request,
        changelog=fork.changelog,
        scopes_added=list(change.scopes_added),
        scopes_removed=list(change.scopes_removed),
        hosts_added=list(change.hosts_added),
        hosts_removed=list(change.hosts_removed),
        files_added=list(change.files_added),
        files_changed=list(change.files_changed),
        files_removed=list(change.files_removed),
        summary=improvement.summary,
    )
