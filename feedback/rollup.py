"""What the daily stats and retention cohorts mean, as pure functions.

The service computes the same figures with SQL over the touched days only; these functions are
the definition it is tested against (a brute-force recount over raw rows) and do the cohort
arithmetic the service needs.

Definitions (every figure is per sub-agent and UTC day):
- opens: events of kind ``open``; sessions: events of kind ``session_end``;
- time_spent_ms: the sum of ``duration_ms`` of ``session_end`` events;
- active_users: distinct users with any event that day (one user's flood counts once);
- errors: events of kind ``error``;
- installs: distinct users who installed that day; uninstalls: distinct users who
  uninstalled that day (through the API or an ``uninstall`` event);
- ratings: ratings whose last write was that day, with their histogram;
- retention: of the users whose first install was on day D, how many were active on
  D+1, D+7 and D+30 (classic day-N retention).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

RETENTION_OFFSETS = (1, 7, 30)
STAR_FIELDS = ("stars_1", "stars_2", "stars_3", "stars_4", "stars_5")


@dataclass
class DayStats:
    opens: int = 0
    active_users: int = 0
    sessions: int = 0
    time_spent_ms: int = 0
    installs: int = 0
    uninstalls: int = 0
    errors: int = 0
    ratings: int = 0
    stars_1: int = 0
    stars_2: int = 0
    stars_3: int = 0
    stars_4: int = 0
    stars_5: int = 0
    thumbs_up: int = 0
    thumbs_down: int = 0


@dataclass
class Cohort:
    cohort_size: int = 0
    day1: int = 0
    day7: int = 0
    day30: int = 0
    users: set = field(default_factory=set, repr=False, compare=False)


def cohort_days_touched_by(day: date) -> list[date]:
    """Cohorts whose figures can change when activity or installs on ``day`` change."""
    return [day] + [day - timedelta(days=k) for k in RETENTION_OFFSETS]


def rating_fields(scale: str, rating: int) -> str:
    if scale == "thumbs":
        return "thumbs_up" if rating else "thumbs_down"
    return STAR_FIELDS[rating - 1]


def daily_stats(
    events: Iterable[tuple],
    install_actions: Iterable[tuple],
    ratings: Iterable[tuple],
) -> dict[tuple[int, date], DayStats]:
    """Brute force over raw rows.

    events: (subagent_id, user_id, kind, day, duration_ms); install_actions: (subagent_id,
    user_id, action, day); ratings: (subagent_id, scale, rating, updated_day).
    """
    stats: dict[tuple[int, date], DayStats] = defaultdict(DayStats)
    active: dict[tuple[int, date], set] = defaultdict(set)
    uninstallers: dict[tuple[int, date], set] = defaultdict(set)
    installers: dict[tuple[int, date], set] = defaultdict(set)
    for subagent_id, user_id, kind, day, duration_ms in events:
        key = (subagent_id, day)
        row = stats[key]
        active[key].add(user_id)
        if kind == "open":
            row.opens += 1
        elif kind == "session_end":
            row.sessions += 1
            row.time_spent_ms += duration_ms or 0
        elif kind == "error":
            row.errors += 1
        elif kind == "uninstall":
            uninstallers[key].add(user_id)
    for subagent_id, user_id, action, day in install_actions:
        key = (subagent_id, day)
        stats[key]
        (installers if action == "install" else uninstallers)[key].add(user_id)
    for subagent_id, scale, rating, day in ratings:
        row = stats[(subagent_id, day)]
        row.ratings += 1
        name = rating_fields(scale, rating)
        setattr(row, name, getattr(row, name) + 1)
    for key, row in stats.items():
        row.active_users = len(active[key])
        row.installs = len(installers[key])
        row.uninstalls = len(uninstallers[key])
    return dict(stats)


def retention(
    first_install_day: dict[tuple[int, int], date], active_days: set[tuple[int, int, date]]
) -> dict[tuple[int, date], Cohort]:
    """first_install_day: (subagent_id, user_id) → day; active_days: (subagent_id, user_id, day)."""
    cohorts: dict[tuple[int, date], Cohort] = defaultdict(Cohort)
    for (subagent_id, user_id), day in first_install_day.items():
        cohort = cohorts[(subagent_id, day)]
        cohort.cohort_size += 1
        for offset, name in zip(RETENTION_OFFSETS, ("day1", "day7", "day30"), strict=True):
            if (subagent_id, user_id, day + timedelta(days=offset)) in active_days:
                setattr(cohort, name, getattr(cohort, name) + 1)
    return dict(cohorts)
