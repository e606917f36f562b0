"""The stats reads: a sub-agent's or a creator's series, totals and retention over a window,
the rating summary, the creator's per-sub-agent table, and the lineage figures (forks by
others, the lineage's reach, the credit flowing back)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from sqlalchemy import Select, bindparam, distinct, func, null, select, true, tuple_
from sqlmodel import Session

from feedback import credit, rollup
from market.catalog.models import SubAgent
from market.identity.access import counted_fork_clause, tree_visible
from market.identity.models import User
from market.platform.db import PerDatabase, in_bound_ids
from market.platform.time import utcnow
from market.usage.models import (
    COUNTED_RATING,
    DailyStats,
    Feedback,
    RetentionCohort,
    UsageEvent,
)

SUM_FIELDS = (
    "opens",
    "sessions",
    "time_spent_ms",
    "installs",
    "uninstalls",
    "errors",
    "ratings",
    *rollup.STAR_FIELDS,
    "thumbs_up",
    "thumbs_down",
)
COHORT_FIELDS = ("cohort_size", "day1", "day7", "day30")


def period_start(day: date, granularity: str) -> date:
    return day - timedelta(days=day.weekday()) if granularity == "week" else day


# ---- the statements, built once per database (``platform.db.PerDatabase``) --------------


def _in_window(day_column):
    return day_column.between(bindparam("start"), bindparam("end"))


def _descendants_query(dialect: str, filtered: bool) -> Select:
    """Every descendant of the sub-agents ``ids`` (see ``descendants``); ``filtered``: only
    those ``viewer_id`` may see listed."""
    columns = (
        SubAgent.id,
        SubAgent.ancestry,
        SubAgent.author_id,
        SubAgent.visibility,
        SubAgent.status,
    )
    # The columns travel in the recursion: joining the result back to the table by id makes
    # PostgreSQL guess thousands of rows and hash the whole table instead.
    below = (
        select(*columns)
        .where(in_bound_ids(dialect, SubAgent.parent_id, "ids"))
        .cte("below", recursive=True)
    )
    if dialect == "postgresql":
        # PostgreSQL guesses the work table at ten times the first step's rows and, below
        # about 40,000 sub-agents, hashes the whole table at each step rather than probe the
        # parent index: 18 ms for a creator with 85 descendants among 25,000, against 2.5 ms
        # probing. Each node's children as a LATERAL subquery that OFFSET 0 keeps from being
        # flattened into a join can only be probed.
        children = (
            select(*columns).where(SubAgent.parent_id == below.c.id).offset(0).lateral("children")
        )
        step = select(*children.c).select_from(below).join(children, true())
    else:
        step = select(*columns).join(below, SubAgent.parent_id == below.c.id)
    below = below.union(step)
    found = select(below.c.id, below.c.ancestry, below.c.author_id)
    if filtered:
        found = found.where(tree_visible(below.c, bindparam("viewer_id")))
    return found


def _window_sums_query(dialect: str) -> Select:
    """The window's daily stats summed per day (``subagent_id`` NULL) and per sub-agent
    (``day`` NULL): the series and totals, and the installs that order a creator's table.
    PostgreSQL reads the rows once, as two grouping sets; at 3,000 sub-agents a second read
    for the table cost 0.15 s."""
    sums = [func.sum(getattr(DailyStats, name)) for name in SUM_FIELDS]
    window = (in_bound_ids(dialect, DailyStats.subagent_id, "ids"), _in_window(DailyStats.day))
    if dialect == "postgresql":
        return (
            select(DailyStats.day, DailyStats.subagent_id, *sums)
            .where(*window)
            .group_by(func.grouping_sets(tuple_(DailyStats.day), tuple_(DailyStats.subagent_id)))
        )
    per_day = select(DailyStats.day, null(), *sums).where(*window).group_by(DailyStats.day)
    each = select(null(), DailyStats.subagent_id, *sums).where(*window)
    return per_day.union_all(each.group_by(DailyStats.subagent_id))


def _users_per_subagent_query(dialect: str) -> Select:
    """Distinct users of each of ``ids`` in the window, and a last row (``subagent_id`` NULL)
    of distinct users of them all: a lineage's reach is not the sum of its members'."""
    window = (
        in_bound_ids(dialect, UsageEvent.subagent_id, "ids"),
        _in_window(UsageEvent.occurred_day),
    )
    users = func.count(distinct(UsageEvent.user_id))
    if dialect == "postgresql":
        # One read of the events for both: the whole is a grouping set of its own.
        return (
            select(UsageEvent.subagent_id, users)
            .where(*window)
            .group_by(func.grouping_sets(tuple_(UsageEvent.subagent_id), tuple_()))
        )
    each = select(UsageEvent.subagent_id, users).where(*window).group_by(UsageEvent.subagent_id)
    return each.union_all(select(null(), users).where(*window))


@dataclass(frozen=True)
class _Statements:
    distinct_users: Select
    daily_active: Select
    users_by_day: Select
    window_sums: Select
    cohorts: Select
    ratings: Select
    descendants: Select
    visible_descendants: Select
    users_per_subagent: Select
    direct_forks: Select
    daily_rows: Select
    forks_by_others: Select


def _statements(dialect: str) -> _Statements:
    def ids(column):
        return in_bound_ids(dialect, column, "ids")

    return _Statements(
        distinct_users=select(func.count(distinct(UsageEvent.user_id))).where(
            ids(UsageEvent.subagent_id), _in_window(UsageEvent.occurred_day)
        ),
        daily_active=select(DailyStats.day, func.sum(DailyStats.active_users))
        .where(ids(DailyStats.subagent_id), _in_window(DailyStats.day))
        .group_by(DailyStats.day),
        users_by_day=select(UsageEvent.occurred_day, UsageEvent.user_id)
        .where(ids(UsageEvent.subagent_id), _in_window(UsageEvent.occurred_day))
        .distinct(),
        # Summed in the database: a row per day and per sub-agent, not one per sub-agent and day.
        window_sums=_window_sums_query(dialect),
        cohorts=select(
            RetentionCohort.install_day,
            *(getattr(RetentionCohort, name) for name in COHORT_FIELDS),
        ).where(ids(RetentionCohort.subagent_id), _in_window(RetentionCohort.install_day)),
        ratings=select(
            Feedback.scale, func.count(), func.avg(Feedback.rating), func.sum(Feedback.rating)
        )
        .where(ids(Feedback.subagent_id), COUNTED_RATING)
        .group_by(Feedback.scale),
        descendants=_descendants_query(dialect, filtered=False),
        visible_descendants=_descendants_query(dialect, filtered=True),
        users_per_subagent=_users_per_subagent_query(dialect),
        direct_forks=select(func.count(SubAgent.id)).where(
            ids(SubAgent.parent_id),
            SubAgent.author_id != bindparam("author_id"),
            counted_fork_clause(SubAgent),
        ),
        daily_rows=select(
            DailyStats.subagent_id,
            DailyStats.day,
            DailyStats.active_users,
            DailyStats.installs,
            DailyStats.opens,
            DailyStats.errors,
        ).where(ids(DailyStats.subagent_id), _in_window(DailyStats.day)),
        forks_by_others=select(
            SubAgent.id, SubAgent.title, SubAgent.parent_id, SubAgent.install_count
        )
        .add_columns(User.display_name)
        .join(User, User.id == SubAgent.author_id)
        .where(
            ids(SubAgent.parent_id),
            SubAgent.author_id != bindparam("author_id"),
            tree_visible(SubAgent, bindparam("viewer_id")),
        )
        .order_by(SubAgent.install_count.desc(), SubAgent.id)
        .limit(bindparam("limit")),
    )


_of = PerDatabase(_statements)


# ---- the reads ---------------------------------------------------------------------------


def _distinct_users(session: Session, subagent_ids: list[int], start: date, end: date) -> int:
    if not subagent_ids:
        return 0
    window = {"ids": subagent_ids, "start": start, "end": end}
    return session.execute(_of(session).distinct_users, window).scalar_one()


def _active_users(
    session: Session, subagent_ids: list[int], start: date, end: date, granularity: str
) -> tuple[dict[date, int], int]:
    """Distinct users per period (a week's actives are not the sum of its days'), and over
    the whole window. Where the periods are read from the events, the window's figure is the
    union of theirs, so it costs no second read."""
    if not subagent_ids:
        return {}, 0
    window = {"ids": subagent_ids, "start": start, "end": end}
    if granularity == "day" and len(subagent_ids) == 1:
        rows = session.execute(_of(session).daily_active, window)
        per_day = {day: int(users) for day, users in rows}
        return per_day, _distinct_users(session, subagent_ids, start, end)
    users: dict[date, set] = {}
    for day, user_id in session.execute(_of(session).users_by_day, window):
        users.setdefault(period_start(day, granularity), set()).add(user_id)
    everyone = set().union(*users.values())
    return {period: len(members) for period, members in users.items()}, len(everyone)


@dataclass(frozen=True)
class WindowSums:
    """One read of a window's daily stats (``window_sums``)."""

    per_day: dict[date, tuple[int, ...]]  # the SUM_FIELDS summed over the sub-agents, by day
    installs: dict[int, int]  # each sub-agent's installs in the window (none: absent)


def window_sums(session: Session, subagent_ids: list[int], start: date, end: date) -> WindowSums:
    per_day: dict[date, tuple[int, ...]] = {}
    installs: dict[int, int] = {}
    if subagent_ids:
        window = {"ids": subagent_ids, "start": start, "end": end}
        at_installs = SUM_FIELDS.index("installs")
        for day, subagent_id, *sums in session.execute(_of(session).window_sums, window):
            # PostgreSQL sums a bigint column as numeric.
            if subagent_id is None:
                per_day[day] = tuple(int(value) for value in sums)
            else:
                installs[subagent_id] = int(sums[at_installs])
    return WindowSums(per_day, installs)


def usage_stats(
    session: Session,
    subagent_ids: list[int],
    start: date,
    end: date,
    granularity: str,
    sums: WindowSums | None = None,
) -> dict:
    """Series, totals and retention over [start, end] for one or several sub-agents; ``sums``
    when the caller has read them (``window_sums``) for a creator's table too."""
    totals = dict.fromkeys(SUM_FIELDS, 0)
    series: dict[date, dict] = {}
    sums = sums or window_sums(session, subagent_ids, start, end)
    for day, day_sums in sums.per_day.items():
        bucket = series.setdefault(period_start(day, granularity), dict.fromkeys(SUM_FIELDS, 0))
        for name, value in zip(SUM_FIELDS, day_sums, strict=True):
            bucket[name] += value
            totals[name] += value
    active, window_users = _active_users(session, subagent_ids, start, end, granularity)
    points = []
    cursor = period_start(start, granularity)
    step = timedelta(days=7 if granularity == "week" else 1)
    while cursor <= end:
        bucket = series.get(cursor, dict.fromkeys(SUM_FIELDS, 0))
        points.append(
            {"period_start": cursor.isoformat(), "active_users": active.get(cursor, 0), **bucket}
        )
        cursor += step
    cohorts = _retention(session, subagent_ids, start, end, granularity)
    histogram = {name: totals[name] for name in (*rollup.STAR_FIELDS, "thumbs_up", "thumbs_down")}
    return {
        "totals": {
            **{
                k: totals[k]
                for k in ("installs", "uninstalls", "opens", "sessions", "time_spent_ms", "errors")
            },
            "active_users": window_users,
            "error_rate": round(totals["errors"] / totals["opens"], 4) if totals["opens"] else 0.0,
            "ratings": {"count": totals["ratings"], "histogram": histogram},
        },
        "series": points,
        "retention": cohorts,
    }


def _retention(session, subagent_ids, start, end, granularity) -> list[dict]:
    if not subagent_ids:
        return []
    grouped: dict[date, dict] = {}
    window = {"ids": subagent_ids, "start": start, "end": end}
    for install_day, *counts in session.execute(_of(session).cohorts, window):
        bucket = grouped.setdefault(
            period_start(install_day, granularity), dict.fromkeys(COHORT_FIELDS, 0)
        )
        for name, count in zip(COHORT_FIELDS, counts, strict=True):
            bucket[name] += count
    today = utcnow().date()
    curves = []
    for period, bucket in sorted(grouped.items()):
        size = bucket["cohort_size"]
        curve = {"cohort_start": period.isoformat(), **bucket}
        for offset in rollup.RETENTION_OFFSETS:
            # A cohort too young to have reached day N has no figure yet, not a zero.
            matured = period + timedelta(days=offset) <= today
            curve[f"day{offset}_rate"] = (
                round(bucket[f"day{offset}"] / size, 4) if size and matured else None
            )
        curves.append(curve)
    return curves


def rating_summary(session: Session, subagent_ids: list[int]) -> dict:
    """The current ratings (one per user and version), all time."""
    stars_count, stars_avg, up, down = 0, None, 0, 0
    if subagent_ids:
        rows = session.execute(_of(session).ratings, {"ids": subagent_ids})
        for scale, count, average, positive in rows:
            if scale == "stars":
                stars_count, stars_avg = count, round(float(average), 2)
            else:
                up, down = int(positive or 0), count - int(positive or 0)
    return {
        "stars_count": stars_count,
        "stars_average": stars_avg,
        "thumbs_up": up,
        "thumbs_down": down,
        "count": stars_count + up + down,
    }


def descendants(
    session: Session, subagent_ids: list[int], *, visible_to: int | None = None
) -> dict[int, tuple[str, int]]:
    """Every descendant of the given sub-agents: id → (ancestry, author_id). With
    ``visible_to``, only those that person may see listed (their own, and public ones that are
    active or yanked): a count of someone else's private or unlisted forks would tell that
    they exist. The walk still passes through hidden ones to reach what lies below them.

    One recursive query down the parent links (the parent index), so the cost follows the
    number of descendants, not the size of the lineages they sit in: a popular root's
    lineage can hold thousands of sub-agents of which a creator's fork has a handful.
    UNION (not UNION ALL) keeps a node once when it sits below two of the given ones."""
    if not subagent_ids:
        return {}
    statements = _of(session)
    if visible_to is None:
        rows = session.execute(statements.descendants, {"ids": subagent_ids})
    else:
        rows = session.execute(
            statements.visible_descendants, {"ids": subagent_ids, "viewer_id": visible_to}
        )
    return {node_id: (ancestry, author_id) for node_id, ancestry, author_id in rows}


def lineage_stats(
    session: Session, own_ids: list[int], author_id: int, start: date, end: date, viewer_id: int
) -> dict:
    """Forks of a creator's work, the reach of its lineage and the credit flowing back, over
    the forks the viewer sees in the tree (for the creator, others' private and unlisted ones
    are not counted; for a moderator, nor are the creator's own)."""
    statements = _of(session)
    below = descendants(session, own_ids, visible_to=viewer_id)
    others = {node: ancestry for node, (ancestry, author) in below.items() if author != author_id}
    usage, reach = {}, 0
    if below:
        window = {"ids": list(below), "start": start, "end": end}
        for subagent_id, users in session.execute(statements.users_per_subagent, window):
            if subagent_id is None:
                reach = users
            else:
                usage[subagent_id] = users
    direct_forks = 0
    if own_ids:
        direct_forks = session.execute(
            statements.direct_forks, {"ids": own_ids, "author_id": author_id}
        ).scalar_one()
    flows = credit.credit_to_ancestors({n: a for n, (a, _) in below.items()}, usage)
    own = set(own_ids)
    return {
        "forks_by_others": direct_forks,
        "descendants_by_others": len(others),
        "lineage_reach": reach,
        "credit": {str(k): v for k, v in flows.items() if k in own},
        "credit_decay": credit.DECAY,
    }


def forks_by_others(
    session: Session, own_ids: list[int], author_id: int, viewer_id: int, limit: int
) -> list:
    """The most installed direct forks of ``own_ids`` by others, as ``viewer_id`` sees the
    tree: (id, title, parent_id, install_count, the author's display name)."""
    if not own_ids:
        return []
    return list(
        session.execute(
            _of(session).forks_by_others,
            {"ids": own_ids, "author_id": author_id, "viewer_id": viewer_id, "limit": limit},
        )
    )


@dataclass(frozen=True)
class TablePage:
    """Some rows of a creator's table of sub-agents (``subagent_table``)."""

    rows: list[dict]  # as ``per_subagent_summary`` makes them, in the table's order
    total: int  # rows in the whole table: the creator's sub-agents the viewer sees
    offset: int  # the first row's place in the table, from 0
    next_offset: int | None  # where the next rows start; None when these are the last


def table_order(subagents: list, window_installs: dict[int, int]) -> list:
    """A creator's table: most installed in the window first, then most installed now, then
    the oldest id."""
    return sorted(subagents, key=lambda s: (-window_installs.get(s.id, 0), -s.install_count, s.id))


def subagent_table(
    session: Session,
    subagents: list,
    start: date,
    end: date,
    window_installs: dict[int, int],
    *,
    offset: int,
    limit: int,
) -> TablePage:
    """``limit`` rows of a creator's table from ``offset``, ordered by ``window_installs``
    (``WindowSums.installs``); only the rows shown read their days. A creator with thousands
    of sub-agents gets a page as small as one with a few: at 3,000, every row's daily line
    made 2 MB of HTML and two seconds of work."""
    ordered = table_order(subagents, window_installs)
    shown = ordered[offset : offset + limit]
    return TablePage(
        rows=per_subagent_summary(session, shown, start, end),
        total=len(ordered),
        offset=offset,
        next_offset=offset + limit if offset + limit < len(ordered) else None,
    )


def per_subagent_summary(session: Session, subagents: list, start: date, end: date) -> list[dict]:
    """One row per sub-agent for a creator's table: window totals and a daily sparkline."""
    ids = [s.id for s in subagents]
    days = (end - start).days + 1
    lines = {s.id: [0] * days for s in subagents}
    totals = {s.id: {"installs": 0, "opens": 0, "errors": 0} for s in subagents}
    if ids:
        window = {"ids": ids, "start": start, "end": end}
        for subagent_id, day, active_users, installs, opens, errors in session.execute(
            _of(session).daily_rows, window
        ):
            lines[subagent_id][(day - start).days] = active_users
            row_totals = totals[subagent_id]
            row_totals["installs"] += installs
            row_totals["opens"] += opens
            row_totals["errors"] += errors
    return [
        {
            "id": s.id,
            "title": s.title,
            "visibility": s.visibility,
            "status": s.status,
            "install_count": s.install_count,
            "fork_count": s.fork_count,
            **totals[s.id],
            "daily_active_users": lines[s.id],
        }
        for s in subagents
    ]
