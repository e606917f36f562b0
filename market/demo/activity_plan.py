"""The plan of the demo's ninety days: every event, rating and uninstall, decided before
anything is written (:mod:`market.demo.activity` writes it through the real paths).

The world has a known truth, so that what the ranking recovers can be checked against it:

* every sub-agent has a latent quality on a logit scale. A root's is drawn (popular roots
  lean better); a fork's is its parent's plus a mutation that is usually a small tweak
  (60 %), sometimes an improvement (30 %) and occasionally breaks the app (10 %; 3 % for
  forks that others built on, since nobody forks an app that crashes, and a fork of a
  broken one usually fixes it). Later versions nudge quality up a little (fixes);
* people differ in leniency (a few harsh, a few generous raters) and in activity
  (Pareto-distributed: most open an app a couple of times a week, a few every day);
* an install is *habitual* (long-lived) or a *trial* (gone within days) with odds that
  rise with quality; broken versions throw errors, and errors drive people away and
  towards uninstalling; stars follow quality plus the rater's leniency plus noise, and
  only some people rate (more after errors), never before using the version they rate;
* the agent asks for a rating after some sessions, so people who use an app for weeks
  nearly all rate it, and rate it again after an update about half the time; installs
  older than the window were used and rated before it (their ratings are kept, their
  events are not replayed), and three people in four share their feedback for training.

Planning is pure (:func:`plan_activity` over a :class:`Community` snapshot and a fixed
"now"), so the same seed and snapshot always give the same events, ids included. Only
today's date comes from the clock, once, in :func:`market.demo.activity.simulate_activity`.
"""

from __future__ import annotations

import bisect
import functools
import math
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from random import Random

from market.demo.material import COMMENTS

__all__ = [
    "DAY",
    "FEEDBACK_TAGS",
    "CInstall",
    "CSubAgent",
    "CUser",
    "CVersion",
    "Community",
    "Plan",
    "PlannedEvent",
    "PlannedRating",
    "PlannedUninstall",
    "as_utc",
    "day_start",
    "plan_activity",
]

DAY = timedelta(days=1)

COMPLAINTS = ("too slow", "confusing", "crashes")
WISHES = (
    "wants reminders",
    "needs dark mode",
    "wants sharing with family",
    "wants metric units",
    "wants export",
)
FEEDBACK_TAGS: tuple[str, ...] = (*COMPLAINTS, "love it", *WISHES)

# Rough UTC offsets, so people open their apps at their own breakfast and bedtime.
_TZ = {"en-US": -5, "es-US": -6, "en-CA": -5, "fr-CA": -5, "es-MX": -6, "zh-CN": 8, "ja-JP": 9}
_HABIT_HOURS = (7, 7, 8, 9, 12, 13, 17, 19, 20, 21, 21, 22)
_SHARING_CATEGORIES = frozenset({"family", "diet", "finance", "hobby", "travel"})
_UNIT_CATEGORIES = frozenset({"diet", "fitness", "hydration", "travel"})
_METRIC_LOCALES = frozenset({"en-CA", "fr-CA", "en-GB", "es-MX", "zh-CN", "ja-JP"})
_ACTIONS = ("log_entry", "log_entry", "log_entry", "edit_entry", "view_chart", "open_settings")
_OPEN_SOURCES = ("home", "home", "home", "reminder", "chat")
_ERRORS = (
    "TypeError: cannot read properties of undefined",
    "storage quota exceeded",
    "render timeout",
    "invalid date",
)


# --------------------------------------------------------------------------- snapshot


@dataclass(frozen=True)
class CUser:
    id: int
    handle: str
    kind: str
    locale: str


@dataclass(frozen=True)
class CSubAgent:
    id: int
    author_id: int
    parent_id: int | None
    depth: int
    category: str
    visibility: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class CVersion:
    id: int
    subagent_id: int
    created_at: datetime


@dataclass(frozen=True)
class CInstall:
    id: int
    user_id: int
    subagent_id: int
    created_at: datetime


@dataclass(frozen=True)
class Community:
    """What the simulation reads from the database; nothing it writes changes it."""

    users: tuple[CUser, ...]
    subagents: tuple[CSubAgent, ...]
    versions: tuple[CVersion, ...]
    installs: tuple[CInstall, ...]
    client_id: int


def as_utc(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes (stored in UTC); PostgreSQL aware ones.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# --------------------------------------------------------------------------- the plan

# An event: (occurred_at, event_id, user_id, subagent_id, version_id, kind, duration_ms, props)
PlannedEvent = tuple[datetime, uuid.UUID, int, int, int, str, int | None, dict]


@dataclass(frozen=True)
class PlannedRating:
    at: datetime
    user_id: int
    subagent_id: int
    version_id: int
    scale: str
    rating: int
    comment: str | None
    tags: tuple[str, ...]


@dataclass(frozen=True)
class PlannedUninstall:
    at: datetime
    install_id: int
    user_id: int
    subagent_id: int


@dataclass
class Plan:
    now: datetime
    first_day: date
    days: int
    events: dict[date, list[PlannedEvent]] = field(default_factory=lambda: defaultdict(list))
    ratings: dict[date, list[PlannedRating]] = field(default_factory=lambda: defaultdict(list))
    uninstalls: dict[date, list[PlannedUninstall]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # Trials that ended (and were uninstalled) before the window: no events can be sent
    # for them any more (ingestion takes a week back), only the install log remembers.
    early_uninstalls: list[PlannedUninstall] = field(default_factory=list)
    # Ratings written before the window by people who used an app then: the events of those
    # sessions are older than the window, the ratings stay (written first, in time order).
    early_ratings: list[PlannedRating] = field(default_factory=list)
    skipped_installs: int = 0  # installs nobody may use (someone else's private sub-agent)

    def event_count(self) -> int:
        return sum(len(v) for v in self.events.values())

    def rating_count(self) -> int:
        return len(self.early_ratings) + sum(len(v) for v in self.ratings.values())

    def uninstall_count(self) -> int:
        return len(self.early_uninstalls) + sum(len(v) for v in self.uninstalls.values())


@dataclass(frozen=True)
class _Person:
    leniency: float
    activity: float  # Pareto: 1 is a quiet user, 10 a daily one
    use_p: float
    tz: int
    habit_hour: int
    thumbs: bool
    talkative: float
    rates: float


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _people(community: Community, rng: Random) -> dict[int, _Person]:
    people = {}
    for user in community.users:
        roll = rng.random()
        if roll < 0.10:
            leniency = rng.gauss(-1.4, 0.4)  # the harsh ones: two stars is praise
        elif roll < 0.22:
            leniency = rng.gauss(1.2, 0.4)  # everything is five stars
        else:
            leniency = rng.gauss(0.1, 0.5)
        activity = min(rng.paretovariate(1.3), 12.0)
        people[user.id] = _Person(
            leniency=leniency,
            activity=activity,
            use_p=min(0.8, 0.03 + 0.07 * activity),
            tz=_TZ.get(user.locale, 0),
            habit_hour=rng.choice(_HABIT_HOURS),
            thumbs=rng.random() < 0.25,
            talkative=rng.choice((0.05, 0.15, 0.3, 0.6)),
            rates=rng.choice((0.15, 0.5, 1.0, 1.6)),
        )
    return people


def _qualities(community: Community, rng: Random) -> tuple[dict[int, float], dict[int, float]]:
    """Latent quality per sub-agent and per version, parents before children."""
    by_id = {s.id: s for s in community.subagents}
    root_of: dict[int, int] = {}
    for s in sorted(community.subagents, key=lambda s: (s.depth, s.id)):
        root_of[s.id] = root_of.get(s.parent_id, s.id) if s.parent_id else s.id
    installs: dict[int, int] = defaultdict(int)
    installs_per_root: dict[int, int] = defaultdict(int)
    for inst in community.installs:
        installs[inst.subagent_id] += 1
        installs_per_root[root_of.get(inst.subagent_id, inst.subagent_id)] += 1
    forked = {s.parent_id for s in community.subagents if s.visibility != "private"}
    quality: dict[int, float] = {}
    broke: set[int] = set()
    for s in sorted(community.subagents, key=lambda s: (s.depth, s.id)):
        if s.parent_id is None or s.parent_id not in quality:
            # Popular roots got popular for a reason, mostly.
            q = rng.gauss(-0.2, 0.6) + 0.12 * math.log1p(installs_per_root[s.id])
        else:
            # People rarely build on an app that crashes: forked apps seldom broke.
            breaks = 0.10 if s.id not in forked else 0.03
            roll = rng.random()
            if roll < breaks:
                delta = rng.gauss(-1.5, 0.5)  # broke something
                broke.add(s.id)
            elif roll < breaks + 0.3:
                delta = rng.gauss(0.3, 0.3)  # an improvement
            else:
                delta = rng.gauss(-0.1, 0.3)  # a tweak
            if s.parent_id in broke and rng.random() < 0.6:
                delta += rng.gauss(1.3, 0.3)  # the fork's first job was fixing the crash
            q = quality[s.parent_id] + delta + 0.05 * math.log1p(installs[s.id])
        quality[s.id] = max(-3.0, min(3.0, q))
    versions: dict[int, float] = {}
    latest: dict[int, float] = {}
    for v in sorted(community.versions, key=lambda v: (v.subagent_id, v.created_at, v.id)):
        if v.subagent_id not in by_id:
            continue
        if v.subagent_id in latest:
            latest[v.subagent_id] += rng.gauss(0.1, 0.15)  # later versions mostly fix things
        else:
            latest[v.subagent_id] = quality[v.subagent_id]
        versions[v.id] = max(-3.0, min(3.0, latest[v.subagent_id]))
    return quality, versions


@functools.cache
def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def plan_activity(community: Community, seed: int, *, now: datetime, days: int = 90) -> Plan:
    """Every event, rating and uninstall of the ``days`` up to and including ``now``'s day.

    Pure: the same community, seed and ``now`` give the same plan, event ids included."""
    now = as_utc(now)
    today = now.date()
    first_day = today - timedelta(days=days - 1)
    plan = Plan(now=now, first_day=first_day, days=days)
    rng = Random(f"sprig-demo-activity/{seed}")
    people = _people(community, rng)
    quality, version_quality = _qualities(community, rng)
    users = {u.id: u for u in community.users}
    subagents = {s.id: s for s in community.subagents}
    versions: dict[int, list[CVersion]] = defaultdict(list)
    for v in sorted(community.versions, key=lambda v: (v.created_at, v.id)):
        versions[v.subagent_id].append(v)
    stamps = {sid: [v.created_at for v in vs] for sid, vs in versions.items()}
    ctx = _Context(plan, people, users, subagents, versions, stamps, quality, version_quality)
    for inst in community.installs:
        user = users.get(inst.user_id)
        sub = subagents.get(inst.subagent_id)
        if user is None or sub is None or user.kind != "person" or not versions[sub.id]:
            plan.skipped_installs += 1
            continue
        if sub.visibility == "private" and sub.author_id != user.id:
            plan.skipped_installs += 1  # only its author may use a private sub-agent
            continue
        _plan_install(
            ctx,
            inst,
            Random(f"sprig-demo-activity/{seed}/{inst.id}"),
            Random(f"sprig-demo-activity/{seed}/{inst.id}/ratings"),
        )
    return plan


@dataclass
class _Context:
    plan: Plan
    people: dict[int, _Person]
    users: dict[int, CUser]
    subagents: dict[int, CSubAgent]
    versions: dict[int, list[CVersion]]
    stamps: dict[int, list[datetime]]
    quality: dict[int, float]
    version_quality: dict[int, float]


def _version_at(versions: list[CVersion], stamps: list[datetime], moment: datetime) -> CVersion:
    """The version a user had at ``moment``: agents update installed sub-agents."""
    return versions[max(0, bisect.bisect_right(stamps, moment) - 1)]


def _plan_install(ctx: _Context, inst: CInstall, rng: Random, rates: Random) -> None:
    """One install's life: its sessions and uninstall drawn from ``rng``, its ratings from
    ``rates`` (a stream of their own, so that how people rate never moves what they did)."""
    plan = ctx.plan
    person = ctx.people[inst.user_id]
    user = ctx.users[inst.user_id]
    sub = ctx.subagents[inst.subagent_id]
    versions, stamps = ctx.versions[sub.id], ctx.stamps[sub.id]
    q = ctx.quality[sub.id]
    own = sub.author_id == inst.user_id
    install_day = inst.created_at.date()
    today = plan.now.date()

    # Habitual users stay for months; trial users are gone within days.
    habitual = rng.random() < _sigmoid(
        1.3 * q - 0.6 + 0.25 * math.log(person.activity) + (1.5 if own else 0.0)
    )
    mean_life = 20 + 160 * _sigmoid(q) if habitual else 1 + 5 * _sigmoid(q)
    life = int(rng.expovariate(1 / mean_life))
    end_day = install_day + timedelta(days=life)
    uninstaller = rng.random() < (0.15 + 0.6 * _sigmoid(-1.5 * q - 1.0)) * (0.3 if own else 1)
    base_use = person.use_p * (0.6 + 0.4 * _sigmoid(q)) if habitual else 0.35
    if own:
        base_use = max(base_use, 0.35)  # creators dogfood their own apps
    state = _UseState(rerates_new_versions=rates.random() < 0.5, changes_mind=rates.random() < 0.12)
    if install_day < plan.first_day and not own:
        # Creators don't rate their own work.
        left_at = inst.created_at + timedelta(days=life)
        _rate_before_window(ctx, inst, rates, state, base_use, min(left_at, plan.now))

    if end_day < plan.first_day:
        if uninstaller:
            at = inst.created_at + timedelta(days=life, seconds=rng.randint(60, 20 * 3600))
            if at < day_start(plan.first_day):
                plan.early_uninstalls.append(PlannedUninstall(at, inst.id, inst.user_id, sub.id))
        return

    day = max(install_day, plan.first_day)
    last_day = min(end_day, today)
    churned_early = False
    last_moment: datetime | None = None
    while day <= last_day:
        use = _use_chance((day - install_day).days, base_use, day, sub.category)
        if rng.random() >= use:
            day += DAY
            continue
        lo = max(day_start(day), inst.created_at + timedelta(seconds=30))
        hi = min(day_start(day) + DAY, plan.now) - timedelta(seconds=1)
        n_sessions = 1 + (rng.random() < 0.06 * min(person.activity, 8.0))
        for _ in range(n_sessions):
            start = _session_start(rng, person, day, lo, hi)
            if start is None:
                break
            version = _version_at(versions, stamps, start)
            qv = ctx.version_quality[version.id]
            events, end, errors = _session(rng, inst.user_id, sub.id, version.id, qv, start, hi)
            if not events:
                break
            plan.events[day].extend(events)
            state.day, state.hi = day, hi
            state.sessions += 1
            state.errors, state.errors_seen = errors, state.errors_seen + errors
            lo = end + timedelta(seconds=rng.randint(600, 4 * 3600))
            last_moment = end
            # Creators don't rate their own work.
            rating = None if own else _maybe_rate(rates, person, user, sub, state, version, qv, end)
            if rating is not None:
                plan.ratings[day].append(rating)
                state.rated[version.id] = day
                last_moment = rating.at
            if errors and rng.random() < (0.12 if habitual else 0.3):
                churned_early = True  # that was the last straw
                break
        if churned_early:
            end_day = day
            break
        day += DAY

    if (end_day < today and uninstaller) or (churned_early and rng.random() < 0.7):
        # Uninstalled right after the last use if that was recent, else in a later clean-up.
        recent = last_moment is not None and (end_day - last_moment.date()).days < 7
        day = last_moment.date() if recent else end_day
        lo = max(day_start(day), inst.created_at + timedelta(seconds=30))
        same_day = last_moment is not None and last_moment.date() == day
        if same_day:
            lo = max(lo, last_moment + timedelta(seconds=5))
        hi = min(day_start(day) + DAY, plan.now) - timedelta(seconds=1)
        if lo < hi:
            # Right after the last straw, or some time on the day they give up.
            at = lo + (hi - lo) * rng.random() * (0.05 if same_day else 1.0)
            at = at.replace(microsecond=at.microsecond // 1000 * 1000)
            at = max(at, lo)
            version = _version_at(versions, stamps, at)
            event = (at, _uuid(rng), inst.user_id, sub.id, version.id, "uninstall", None, {})
            plan.events[day].append(event)
            plan.uninstalls[day].append(PlannedUninstall(at, inst.id, inst.user_id, sub.id))


def _use_chance(k: int, base_use: float, day: date, category: str) -> float:
    """The chance of opening an app on ``day``, the ``k``-th day after installing it: nearly
    sure on the first day, more often while it is new, a little differently at weekends."""
    if k == 0:
        return 0.92
    use = min(0.95, base_use * (1 + 0.8 * math.exp(-k / 5)))
    if day.weekday() >= 5:
        use *= 1.15 if category in ("hobby", "family", "travel") else 0.9
    return use


def _rate_before_window(
    ctx: _Context,
    inst: CInstall,
    rng: Random,
    state: _UseState,
    base_use: float,
    left_at: datetime,
) -> None:
    """The ratings of an install's days before the window (up to ``left_at``, when its user
    stopped using it). Those sessions' events are older than the window and not replayed, but
    the agent asked for ratings after them as it does now, and ratings are kept: without them
    the months before the window would have left no feedback at all. Same rule as inside the
    window (``_maybe_rate``), each session's errors drawn as ``_session`` draws them."""
    plan = ctx.plan
    person, user = ctx.people[inst.user_id], ctx.users[inst.user_id]
    sub = ctx.subagents[inst.subagent_id]
    versions, stamps = ctx.versions[sub.id], ctx.stamps[sub.id]
    window_start = day_start(plan.first_day)
    install_day = inst.created_at.date()
    day = install_day
    while day < plan.first_day and day <= left_at.date():
        use = _use_chance((day - install_day).days, base_use, day, sub.category)
        if rng.random() >= use:
            day += DAY
            continue
        lo = max(day_start(day), inst.created_at + timedelta(seconds=30))
        hi = min(day_start(day) + DAY, window_start, left_at) - timedelta(seconds=1)
        start = _session_start(rng, person, day, lo, hi)
        if start is None:
            day += DAY
            continue
        version = _version_at(versions, stamps, start)
        quality = ctx.version_quality[version.id]
        errors = int(rng.random() < _sigmoid(-2.2 * quality - 3.0))
        end = min(start + timedelta(seconds=rng.randint(20, 300)), hi)
        state.day, state.hi = day, hi
        state.sessions += 1
        state.errors, state.errors_seen = errors, state.errors_seen + errors
        rating = _maybe_rate(rng, person, user, sub, state, version, quality, end)
        if rating is not None:
            plan.early_ratings.append(rating)
            state.rated[version.id] = day
        day += DAY


def _uuid(rng: Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _session_start(
    rng: Random, person: _Person, day: date, lo: datetime, hi: datetime
) -> datetime | None:
    """When a person opens an app on ``day``: around their habit hour, within [lo, hi)."""
    if hi - lo < timedelta(minutes=10):
        return None
    hour = (person.habit_hour + rng.gauss(0, 1.5) - person.tz) % 24
    start = day_start(day) + timedelta(seconds=int(hour * 3600))
    if not lo <= start < hi - timedelta(minutes=5):
        start = lo + (hi - lo - timedelta(minutes=5)) * rng.random()
    return start.replace(microsecond=start.microsecond // 1000 * 1000) + timedelta(milliseconds=1)


def _session(
    rng: Random,
    user_id: int,
    subagent_id: int,
    version_id: int,
    quality: float,
    start: datetime,
    hi: datetime,
) -> tuple[list[PlannedEvent], datetime, int]:
    """One session: open, some actions, maybe errors, then session_end with its duration."""
    broken = rng.random() < _sigmoid(-2.2 * quality - 3.0)
    duration_ms = int(math.exp(rng.gauss(math.log(55_000) + 0.3 * quality, 0.7)))
    if broken:
        duration_ms = min(duration_ms, rng.randint(2_000, 25_000))
    room_ms = int((hi - start).total_seconds() * 1000) - 1_000
    duration_ms = min(max(duration_ms, 3_000), 45 * 60_000, room_ms)
    if duration_ms < 3_000:
        return [], start, 0
    end = start + timedelta(milliseconds=duration_ms)
    ids = (user_id, subagent_id, version_id)
    events: list[PlannedEvent] = [
        (start, _uuid(rng), *ids, "open", None, {"source": rng.choice(_OPEN_SOURCES)})
    ]
    n_actions = min(int(rng.expovariate(1 / (1.0 + 0.3 * max(quality, 0)))), 8)
    if broken:
        n_actions = min(n_actions, 1)
    moments = sorted(rng.randint(1, duration_ms - 1) for _ in range(n_actions + broken))
    errors = 0
    for i, offset in enumerate(moments):
        at = start + timedelta(milliseconds=offset)
        if broken and i == len(moments) - 1:
            message = rng.choice(_ERRORS)
            events.append((at, _uuid(rng), *ids, "error", None, {"message": message}))
            errors += 1
        else:
            action = rng.choice(_ACTIONS)
            events.append((at, _uuid(rng), *ids, "action", None, {"action": action}))
    events.append((end, _uuid(rng), *ids, "session_end", duration_ms, {}))
    return events, end, errors


@dataclass
class _UseState:
    """One install's history so far, as its rating decisions see it."""

    rerates_new_versions: bool
    changes_mind: bool
    rated: dict[int, date] = field(default_factory=dict)  # version id -> day first rated
    sessions: int = 0
    errors: int = 0  # in the session just ended
    errors_seen: int = 0
    day: date | None = None
    hi: datetime | None = None  # the latest moment usable today


def _maybe_rate(
    rng: Random,
    person: _Person,
    user: CUser,
    sub: CSubAgent,
    state: _UseState,
    version: CVersion,
    quality: float,
    end: datetime,
) -> PlannedRating | None:
    """Rate the version just used, right after the session, or not."""
    if version.id in state.rated:
        # Changing one's mind weeks later replaces the rating of that version.
        first = state.rated[version.id]
        if not state.changes_mind or (state.day - first).days < 14 or rng.random() > 0.05:
            return None
    elif state.rated and not state.rerates_new_versions:
        return None
    else:
        # The main agent asks now and then after a session, so ratings are commoner than in
        # app stores, where one user in a hundred rates.
        chance = 0.2 if state.sessions < 2 else 0.3
        if state.errors:
            chance += 0.25  # angry ratings come quickly
        if rng.random() > min(0.9, chance * person.rates):
            return None
    at = end + timedelta(seconds=rng.randint(5, 90))
    if at >= state.hi:
        return None
    errors_seen = state.errors_seen
    score = quality + person.leniency + rng.gauss(0, 0.7) - 0.4 * min(errors_seen, 3)
    if rng.random() < 0.03:
        score = -3.0  # a bad day, a sync problem elsewhere, a misplaced thumb: one star
    if person.thumbs:
        scale, value = "thumbs", int(score > 0.2)
        stars = 5 if value else 1
    else:
        cuts = (-1.3, -0.5, 0.2, 1.0)
        scale, value = "stars", 1 + sum(score > c for c in cuts)
        stars = value
    tags = _tags(rng, user, sub, stars, errors_seen)
    comment = _comment(rng, person, user, stars, tags)
    return PlannedRating(at, user.id, sub.id, version.id, scale, value, comment, tags)


def _wishes(user: CUser, sub: CSubAgent) -> list[str]:
    has = " ".join(sub.tags)
    out = []
    if "reminder" not in has:
        out.append("wants reminders")
    if "dark" not in has:
        out.append("needs dark mode")
    if "csv" not in has and "export" not in has:
        out.append("wants export")
    if sub.category in _SHARING_CATEGORIES:
        out.append("wants sharing with family")
    metric = any(t in has for t in ("metric", "kg", "ml", "litre"))
    if sub.category in _UNIT_CATEGORIES and user.locale in _METRIC_LOCALES and not metric:
        out.append("wants metric units")
    return out


def _tags(rng: Random, user: CUser, sub: CSubAgent, stars: int, errors_seen: int) -> tuple:
    tags: list[str] = []
    wishes = _wishes(user, sub)
    if stars <= 2:
        if errors_seen and rng.random() < 0.8:
            tags.append("crashes")
        elif rng.random() < 0.6:
            tags.append(rng.choice(("too slow", "confusing")))
        wish_p = 0.2
    elif stars == 3:
        if rng.random() < 0.3:
            tags.append("crashes" if errors_seen else rng.choice(("too slow", "confusing")))
        wish_p = 0.6
    else:
        if rng.random() < (0.5 if stars == 5 else 0.2):
            tags.append("love it")
        wish_p = 0.35
    if wishes and rng.random() < wish_p:
        tags.append(rng.choice(wishes))
    return tuple(sorted(set(tags)))


def _comment(
    rng: Random, person: _Person, user: CUser, stars: int, tags: tuple[str, ...]
) -> str | None:
    if rng.random() > person.talkative:
        return None
    lang = user.locale[:2] if user.locale[:2] in ("zh", "ja", "es") else "en"
    if lang != "en" and rng.random() < 0.15:
        lang = "en"
    # The tag that matters most to the rater leads the comment.
    order = ("crashes", "love it", "confusing", "too slow", *WISHES)
    key = next((t for t in order if t in tags), None)
    key = key or ("low" if stars <= 2 else "mid" if stars == 3 else "high")
    return rng.choice(COMMENTS[key][lang])
