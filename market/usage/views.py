"""The creator dashboard: installs, active users, retention and ratings over a window; a table
of the creator's sub-agents with sparklines; forks of their work and the lineage's reach; CSV.

The figures come from ``market.usage.stats`` (the same functions behind
``/api/v1/creators/<handle>/stats``), so the page and the API always agree.

And the sub-agent page's rating form, which rates through ``market.usage.ratings`` as the API
does: who may rate is decided there, and its refusal is shown as the page's message.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

from flask import Response, flash, redirect, render_template, request, url_for
from flask_babel import gettext
from pydantic import ValidationError
from sqlmodel import select

from market.catalog import services as catalog
from market.identity.access import creator_for_stats, creator_subagents
from market.identity.tokens import caller
from market.platform import metrics
from market.platform.api_deps import commit, db
from market.platform.db import id_in
from market.platform.errors import BadRequest, SprigError
from market.platform.schemas import typed_number
from market.platform.time import utcnow
from market.platform.translation import N_
from market.usage import ratings, stats
from market.usage.api import fresh_rollups
from market.usage.models import DailyStats
from market.usage.schemas import FeedbackIn
from market.web import charts
from market.web.blueprint import bp

# The windows a dashboard offers, named for the reader (translated as the page renders).
WINDOWS = {7: N_("7 days"), 30: N_("30 days"), 90: N_("90 days"), 365: N_("a year")}
DEFAULT_WINDOW = 30
CSV_FIELDS = (
    "day",
    "subagent_id",
    "title",
    "active_users",
    "opens",
    "sessions",
    "installs",
    "uninstalls",
    "errors",
    "ratings",
)


# A dashboard's table shows this many of a creator's sub-agents at a time (the CSV has all).
TABLE_ROWS = 50
# The furthest a table may be paged: far past any creator's sub-agents, short of an absurd
# number that only a hand-edited link would send.
MAX_TABLE_OFFSET = 1_000_000


def _table_offset() -> int:
    """Where the table's rows start (``?from=``): a row number from 0. Past the last row, the
    table says so and links back to its first rows."""
    offset = typed_number(request.args.get("from", "0"), MAX_TABLE_OFFSET)
    if offset is None:
        raise BadRequest("'from' is the number of the table's first row to show, from 0.")
    return offset


def _window_days() -> int:
    days = typed_number(request.args.get("window", str(DEFAULT_WINDOW)), max(WINDOWS))
    if days not in WINDOWS:
        raise BadRequest(f"The window is one of {', '.join(map(str, WINDOWS))} days.")
    return days


# What a rating form's refusal says, by the field the rating's request model refused.
RATING_FORM_PROBLEMS = {
    "stars": "Choose from 1 to 5 stars.",
    "comment": "A comment is plain text of at most 1,000 characters.",
    "tags": "Pick tags from the list.",
    "version_id": "That version is not one of this sub-agent's.",
}


def _form_number(name: str) -> int | str | None:
    """A whole number typed in a form, as the request model reads JSON: digits become an int,
    anything else is passed on for the model to refuse."""
    raw = request.form.get(name, "").strip()
    number = typed_number(raw, 9_999_999_999)
    return number if number is not None else raw or None


def _rating_from_form() -> FeedbackIn:
    comment = request.form.get("comment", "").strip()
    try:
        return FeedbackIn.model_validate(
            {
                "version_id": _form_number("version_id"),
                "stars": _form_number("stars"),
                "comment": comment or None,
                "tags": request.form.getlist("tags"),
            }
        )
    except ValidationError as error:
        # The model's first complaint, in the page's words ("exactly one of stars or
        # thumbs" has no field: on this form it means no stars were chosen).
        where = error.errors()[0]["loc"]
        raise BadRequest(RATING_FORM_PROBLEMS[where[0] if where else "stars"]) from None


@bp.post("/s/<int(max=2147483647):subagent_id>/rate")
def rate_subagent(subagent_id: int):
    """The rating form: stars, tags and a comment on the version the form names. The rating
    service decides whether this person may rate it; a refusal comes back as a message."""
    session, viewer = db(), caller()
    page = url_for("web.subagent_page", subagent_id=subagent_id)
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=page + "#rate"))
    subagent = catalog.get_visible(session, viewer, subagent_id)
    try:
        body = _rating_from_form()
        version = catalog.get_version(session, subagent, body.version_id)
        _row, created = ratings.rate_version(
            session,
            viewer,
            version_id=version.id,
            user_id=None,
            stars=body.stars,
            thumbs=None,
            comment=body.comment,
            tags=body.tags,
            exposure_id=None,
        )
    except SprigError as error:
        flash(error.detail, "error")
        return redirect(page + "#rate")
    commit()
    metrics.record_feedback(created)
    flash("Thanks: your rating is on the page." if created else "Your rating is updated.", "ok")
    return redirect(page + "#rate")


@bp.get("/dashboard")
def my_dashboard():
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next="/dashboard"))
    return redirect(url_for("web.dashboard_page", handle=viewer.handle))


def _retention_chart(cohorts: list[dict]) -> charts.Chart | None:
    """Share of each install cohort active again on day 1, 7 and 30: the size-weighted
    average as a bold curve, six recent cohorts as thin ones, each its own colour (named in
    the legend). Unripe points are gaps."""
    if not cohorts:
        return None
    labels = [gettext("install day"), gettext("day 1"), gettext("day 7"), gettext("day 30")]
    series = []
    totals = {1: [0, 0], 7: [0, 0], 30: [0, 0]}
    for cohort in cohorts:
        for offset in (1, 7, 30):
            if cohort[f"day{offset}_rate"] is not None:
                totals[offset][0] += cohort[f"day{offset}"]
                totals[offset][1] += cohort["cohort_size"]
    # The latest cohorts old enough to have a day-7 figure say the most; the very latest
    # would be single dots.
    ripe = [c for c in cohorts if c["day7_rate"] is not None] or cohorts
    for number, cohort in enumerate(ripe[-6:], start=1):
        values = [1.0] + [cohort[f"day{k}_rate"] for k in (1, 7, 30)]
        name = gettext("cohort of %(day)s", day=cohort["cohort_start"])
        series.append((name, f"cohort-{number}", values))
    average = [1.0] + [(a / n if n else None) for a, n in (totals[k] for k in (1, 7, 30))]
    series.append((gettext("all cohorts (weighted)"), "average", average))
    return charts.line_chart(labels, series, percent=True, top=1.0)


def _sign_in_to_read():
    """A signed-out visitor to a dashboard (a link shared by its creator, a bookmark) is asked
    to sign in and comes back here; any handle answers so, so handles cannot be probed."""
    back = request.full_path if request.query_string else request.path
    return redirect(url_for("web.signin_page", next=back))


@bp.get("/creators/<handle>")
def dashboard_page(handle: str):
    days = _window_days()
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_to_read()
    creator = creator_for_stats(session, viewer, handle)
    end = utcnow().date()
    start = end - timedelta(days=days - 1)
    granularity = "week" if days > 90 else "day"
    fresh_rollups()
    own = creator_subagents(session, viewer, creator)
    ids = [s.id for s in own]
    sums = stats.window_sums(session, ids, start, end)
    figures = stats.usage_stats(session, ids, start, end, granularity, sums)
    labels = [point["period_start"][5:] for point in figures["series"]]
    installs_chart = charts.bar_chart(labels, [p["installs"] for p in figures["series"]])
    active_chart = charts.line_chart(
        labels,
        [(gettext("active users"), "active", [p["active_users"] for p in figures["series"]])],
    )
    histogram = figures["totals"]["ratings"]["histogram"]
    stars = [histogram[f"stars_{k}"] for k in range(1, 6)]
    rating_chart = charts.bar_chart([f"{k}★" for k in range(1, 6)], stars)
    table = stats.subagent_table(
        session, own, start, end, sums.installs, offset=_table_offset(), limit=TABLE_ROWS
    )
    for row in table.rows:
        row["sparkline"] = charts.sparkline(row["daily_active_users"])
        row["peak"] = max(row["daily_active_users"], default=0)
    lineage = stats.lineage_stats(session, ids, creator.id, start, end, viewer.user_id)
    forks_by_others = stats.forks_by_others(session, ids, creator.id, viewer.user_id, limit=10)
    titles = {s.id: s.title for s in own}
    return render_template(
        "web/dashboard.html",
        creator=creator,
        days=days,
        windows=WINDOWS,
        start=start,
        end=end,
        granularity=granularity,
        totals=figures["totals"],
        series=figures["series"],
        installs_chart=installs_chart,
        active_chart=active_chart,
        retention=figures["retention"],
        retention_chart=_retention_chart(figures["retention"]),
        stars=stars,
        thumbs=(histogram["thumbs_up"], histogram["thumbs_down"]),
        rating_chart=rating_chart,
        table=table,
        table_rows=TABLE_ROWS,
        lineage=lineage,
        forks_by_others=forks_by_others,
        titles=titles,
    )


def _csv_cell(value):
    """Spreadsheets run a cell that starts with = + - @ as a formula: a title like
    "=HYPERLINK(…)" must stay text."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


@bp.get("/creators/<handle>/stats.csv")
def dashboard_csv(handle: str):
    """One row per sub-agent and day of the window with any activity."""
    days = _window_days()
    session, viewer = db(), caller()
    if not viewer.is_authenticated:
        return _sign_in_to_read()
    creator = creator_for_stats(session, viewer, handle)
    end = utcnow().date()
    start = end - timedelta(days=days - 1)
    fresh_rollups()
    titles = {s.id: s.title for s in creator_subagents(session, viewer, creator)}
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_FIELDS)
    if titles:
        for row in session.execute(
            select(DailyStats)
            .where(
                id_in(session, DailyStats.subagent_id, titles),
                DailyStats.day >= start,
                DailyStats.day <= end,
            )
            .order_by(DailyStats.day, DailyStats.subagent_id)
        ).scalars():
            writer.writerow(
                [
                    row.day.isoformat(),
                    row.subagent_id,
                    _csv_cell(titles[row.subagent_id]),
                    row.active_users,
                    row.opens,
                    row.sessions,
                    row.installs,
                    row.uninstalls,
                    row.errors,
                    row.ratings,
                ]
            )
    safe_handle = re.sub(r"[^A-Za-z0-9._-]", "_", creator.handle)
    filename = f"sprig-{safe_handle}-{start.isoformat()}-{end.isoformat()}.csv"
    return Response(
        buffer.getvalue(),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
