"""Usage events, feedback and creator stats."""

from __future__ import annotations

import collections
from datetime import date, timedelta

import orjson
from apiflask import APIBlueprint
from flask import Response, request

from market.catalog import services as catalog
from market.identity.access import can_read_full_stats, creator_for_stats, creator_subagents
from market.identity.tokens import caller
from market.platform import limits, metrics
from market.platform.api_deps import commit, db, parse_model
from market.platform.errors import BadRequest, PayloadTooLarge
from market.platform.pagination import decode_offset, encode_cursor
from market.platform.state import app_state
from market.platform.time import utcnow
from market.usage import ingest, ratings, rollups, stats
from market.usage.schemas import (
    CreatorStats,
    CreatorStatsQuery,
    EventBatchIn,
    EventBatchOut,
    EventBatchRead,
    FeedbackIn,
    FeedbackOut,
    StatsQuery,
    StatsWindow,
    SubAgentStats,
)

bp = APIBlueprint("usage", __name__, tag="Usage and stats")

MAX_BATCH_BYTES = 1024 * 1024
MAX_WINDOW_DAYS = 400


# Read by hand (size caps before parsing; each event judged alone): the document is told.
HAND_PARSED_BODIES = {("/events", "post"): EventBatchIn}


@bp.post("/events")
@bp.output(EventBatchOut, status_code=202, description="durably stored (per-item results)")
@bp.doc(
    operation_id="logEvents",
    description=(
        "A batch of up to 1,000 usage events (1 MiB). Each event: `event_id` (UUID made by "
        "the client), `user_id`, `subagent_id`, `version_id`, `kind` (open, action, "
        "session_end, error, uninstall), `occurred_at` (ISO 8601 with zone, at most 7 days "
        "old), optional `duration_ms`, `properties` (≤ 1 KiB) and `exposure_id`. The 202 is "
        "sent after the batch is committed: retry freely, each event is stored once."
    ),
)
def post_events():
    """Log usage events (scope `events:write`)."""
    who = caller()
    who.require("events:write")
    if (request.content_length or 0) > MAX_BATCH_BYTES:
        raise PayloadTooLarge("A batch is at most 1 MiB.")
    # Read at most one byte past the cap: a chunked upload declares no length up front.
    data = request.stream.read(MAX_BATCH_BYTES + 1)
    if len(data) > MAX_BATCH_BYTES:
        raise PayloadTooLarge("A batch is at most 1 MiB.")
    raw = request.json_body(data)
    events = raw.get("events") if isinstance(raw, dict) else None
    if isinstance(events, list) and len(events) > 1000:
        raise PayloadTooLarge("A batch is at most 1,000 events.")
    body = parse_model(EventBatchRead, raw)
    limits.enforce("events", who, amount=len(body.events))
    session = db()
    results = ingest.ingest_events(session, who.user_id, body.events)
    commit()
    counts = collections.Counter(result["status"] for result in results)
    metrics.record_events(counts)
    # Serialized here rather than through EventBatchOut: validating a thousand result objects
    # on the way out cost more than storing them. The shape is the documented EventBatchOut.
    body = {
        "stored": counts["stored"],
        "duplicates": counts["duplicate"],
        "rejected": counts["rejected"],
        "results": results,
    }
    return Response(orjson.dumps(body), status=202, mimetype="application/json")


@bp.post("/feedback")
@bp.input(FeedbackIn, arg_name="body")
@bp.output(FeedbackOut, status_code=201, description="recorded (200 if it replaced a rating)")
@bp.doc(operation_id="rateVersion")
def post_feedback(body: FeedbackIn):
    """Rate a version (stars 1–5 or thumbs), with an optional comment and tags. One rating
    per user and version: rating again replaces it. Only people who installed or used the
    sub-agent rate it, never its author (403 with the reason); a service rates for a person
    with the `feedback:on-behalf` scope, and the rating says which service wrote it."""
    row, created = ratings.rate_version(
        db(),
        caller(),
        version_id=body.version_id,
        user_id=body.user_id,
        stars=body.stars,
        thumbs=body.thumbs,
        comment=body.comment,
        tags=body.tags,
        exposure_id=body.exposure_id,
    )
    commit()
    metrics.record_feedback(created)
    out = FeedbackOut.model_validate(row, from_attributes=True)
    out = out.model_copy(update={"rated_by_service_id": row.client_id})
    return out, 201 if created else 200


def _window(query: StatsQuery) -> tuple[date, date]:
    end = query.to or utcnow().date()
    start = query.from_ or end - timedelta(days=29)
    if start > end:
        raise BadRequest("`from` is after `to`.")
    if (end - start).days + 1 > MAX_WINDOW_DAYS:
        raise BadRequest(f"A window is at most {MAX_WINDOW_DAYS} days.")
    return start, end


@bp.get("/subagents/<int(max=2147483647):subagent_id>/stats")
@bp.input(StatsQuery, location="query", arg_name="query")
@bp.output(SubAgentStats)
@bp.doc(operation_id="getSubagentStats")
def subagent_stats(subagent_id: int, query: StatsQuery):
    """Usage of one sub-agent. Its author and moderators get the full figures; everyone else
    gets installs and the rating with its count."""
    session = db()
    who = caller()
    subagent = catalog.get_visible(session, who, subagent_id)
    if not can_read_full_stats(who, subagent):
        return SubAgentStats(
            subagent_id=subagent.id,
            view="public",
            install_count=subagent.install_count,
            rating=stats.rating_summary(session, [subagent.id]),
        )
    start, end = _window(query)
    fresh_rollups()
    figures = stats.usage_stats(session, [subagent.id], start, end, query.granularity)
    return SubAgentStats(
        subagent_id=subagent.id,
        view="full",
        window=StatsWindow(
            start=start.isoformat(), end=end.isoformat(), granularity=query.granularity
        ),
        install_count=subagent.install_count,
        fork_count=subagent.fork_count,
        rating=stats.rating_summary(session, [subagent.id]),
        lineage=stats.lineage_stats(
            session, [subagent.id], subagent.author_id, start, end, who.user_id
        ),
        **figures,
    )


@bp.get("/creators/<handle>/stats")
@bp.input(CreatorStatsQuery, location="query", arg_name="query")
@bp.output(CreatorStats)
@bp.doc(operation_id="getCreatorStats")
def creator_stats(handle: str, query: CreatorStatsQuery):
    """Everything a creator's sub-agents did in the window (the creator and moderators). The
    figures cover every sub-agent; `subagents` lists them `limit` at a time, in the
    dashboard's order, with `next_cursor` for the rest."""
    session = db()
    who = caller()
    who.require()
    creator = creator_for_stats(session, who, handle)
    start, end = _window(query)
    fresh_rollups()
    own = creator_subagents(session, who, creator)
    ids = [s.id for s in own]
    sums = stats.window_sums(session, ids, start, end)
    figures = stats.usage_stats(session, ids, start, end, query.granularity, sums)
    table = stats.subagent_table(
        session,
        own,
        start,
        end,
        sums.installs,
        offset=decode_offset(query.cursor),
        limit=query.limit,
    )
    return CreatorStats(
        handle=creator.handle,
        window=StatsWindow(
            start=start.isoformat(), end=end.isoformat(), granularity=query.granularity
        ),
        subagents=table.rows,
        subagents_total=table.total,
        next_cursor=None if table.next_offset is None else encode_cursor(table.next_offset),
        rating=stats.rating_summary(session, ids),
        lineage=stats.lineage_stats(session, ids, creator.id, start, end, who.user_id),
        **figures,
    )


def fresh_rollups() -> None:
    """Embedded mode has no beat: bring the rollups up to date before reading them. In a
    transaction of its own (GET requests read in autocommit), so the rollup's lock holds while
    it runs; skipped when no mark waits (a mark committed just after the check waits for the
    next reader, as one committed during a rollup does)."""
    settings = app_state().settings
    if not settings.tasks_run_inline:
        return
    if not rollups.rollup_pending(db()):
        return
    with app_state().unit_of_work() as unit:
        rollups.run_rollup(unit.session)
        unit.commit()
