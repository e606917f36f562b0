"""Run the ranking (evolution.ranking) over the database and store its scores.

One run reads three things as flat arrays: every sub-agent's parent link (the fork forest),
every rating (user, sub-agent, value, scale, age), and one row per distinct (sub-agent, user,
day) of use over the last 180 days (older use weighs under 2^-6 with the 30-day half-life).
It runs :func:`evolution.ranking.rank` and writes one ``subagent_score`` row per sub-agent.

Two kinds of run:
* a full run (``mode = "full"``: the first one, one a day, ``sprig rank --force``) fits what
  is global (the rating scales, every rater's leniency, the lineage prior of each round:
  ``evolution.ranking.GlobalFit``) and scores every sub-agent; it stores the fit (leniencies in
  ``rater_offset``, the rest in its ``parameters``). Rater leniencies also warm-start the next
  full fit (3 rounds, not 10).
* a lineage run (``mode = "incremental"``, the 5-minute beat in between) finds the root
  families that changed since the last run's watermark (a sub-agent published, forked,
  edited or its visibility changed; a rating written; a usage event received), reads those
  families only, and scores them with the last full run's fit: each gets exactly the figures
  a full run with that fit gives it (``evolution.ranking.rank(fit=...)``); every other row is
  left as it is. The next full run refits the global part and refreshes every row (usage and
  rating ages decay with time, so figures of quiet families drift until then).
A run with nothing new since the last one does nothing (``mode = "skipped"``). Only rows whose
figures changed are written (on PostgreSQL through COPY into a temporary table and one upsert).
A run holds a lock for its transaction (``Lock.RANKING``), so two workers never rank at
once: the second waits, then finds nothing new and skips.

After a full run has committed its scores, the personal taste (``evolution.personal``) is fitted
on what that run's model leaves of every rating, in a transaction of its own under a lock of
its own (``learn_taste``). At a million sub-agents the taste fit costs several times the
ranking itself; in the same transaction, the new scores would wait for it and the ranking lock
would hold every lineage run back meanwhile. A full run whose taste was never stored (its fit
failed, or its worker died during it) is followed by another full run once its fit has surely
ended (past the rank task's time limit), which fits the taste again: once, not in a loop.
"""

from __future__ import annotations

import io
import json
import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

import numpy as np
from sqlalchemy import func, or_, select, text, true
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from evolution.language import language_of, reads
from evolution.personal import PATH_SWEEPS, TASTE_RANK, NonPersonal, Taste, fit_taste
from evolution.ranking import (
    BEST_DESCENDANT_CONFIDENCE,
    GlobalFit,
    LineagePrior,
    Ratings,
    Scores,
    rank,
    to_common_scale,
    usage_stats,
)
from evolution.tree import Forest
from market.catalog.models import SubAgent
from market.catalog.services import Branch, mark_catalog_changed
from market.identity.access import can_view, publicly_listed, publicly_listed_clause
from market.platform import metrics
from market.platform.db import Lock, UnitOfWork, begin_writing, wait_for_lock
from market.platform.time import utcnow
from market.ranking.models import (
    RankingRun,
    RaterOffset,
    RaterTaste,
    SubAgentScore,
    SubAgentTaste,
)
from market.usage.models import COUNTED_RATING, Feedback, UsageEvent

USAGE_WINDOW_DAYS = 180
# Threads of one ranking run: usage counted beside the ratings' pass, and two chunks of the
# branch values' draws at once (numpy lets go of the GIL in its loops). At a million
# sub-agents that is most of the run's CPU; a third thread found nothing left to overlap.
RANKING_THREADS = min(2, os.cpu_count() or 1)
# A full run refits the global part (and refreshes every row's time decay) this often; the
# runs in between recompute only the families that changed.
FULL_RUN_EVERY = timedelta(hours=24)
# A lineage run re-reads changes this far before the last watermark: a transaction that
# stamped its rows before the last run read it but committed after is still seen (its rows
# are stamped when written, committed up to a request's or an ingest batch's length later;
# recomputing a family twice gives the same figures).
DIRTY_LOOKBACK = timedelta(minutes=2)
# Ingest rejects events that happened more than 7 days before they arrive, so an event
# received since the watermark has a day at most this far before it.
EVENT_MAX_LATENESS = timedelta(days=8)
# With more changed families than this, a full run is taken instead: it costs little more
# than reading that many families (a fifth of a million-sub-agent catalog's) one by one, and
# it refreshes everything.
INCREMENTAL_MAX_ROOTS = 20_000
# How long a run waits for SQLite's write lock before it fails (_hold_lock).
SQLITE_LOCK_WAIT_SECONDS = 120
# How often a full run chooses the taste's strength λ anew; the runs in between keep the last
# λ and start from the last factors (``learn_taste``). Choosing costs about seven times as much.
TASTE_REG_EVERY = timedelta(days=7)
# Full runs looked back through for the last stored taste (runs whose fit failed store none).
TASTE_LOOKBACK_RUNS = 10
# A full run without a stored taste this long after its scores has lost its fit, for a run with
# no time limit of its own (``sprig rank``, the embedded schedule): the rank task passes its
# own limit plus ``TASTE_RETRY_MARGIN`` instead (``market.ranking.tasks``), since its fit may
# run that long before it is killed.
TASTE_RETRY_AFTER = timedelta(minutes=20)
TASTE_RETRY_MARGIN = timedelta(minutes=5)
# Scores are rounded before they are compared and stored: a change in the 7th digit is not a
# change anyone can see, and rewriting every row for it would make every run a full write.
STORED_DIGITS = 6
SCORE_COLUMNS = (
    "quality",
    "quality_sd",
    "display",
    "branch_value",
    "best_descendant_id",
    "p_descendant_better",
    "fork_gain",
    "rising",
    "trending",
    "active_users",
    "retention",
    "usage_score",
    "rating_count",
    "young",
)


@dataclass
class RankingInputs:
    forest: Forest
    eligible: np.ndarray  # public and active: may be named a best descendant
    item_age_days: np.ndarray
    ratings: Ratings
    user_ids: np.ndarray  # rating user index -> user id
    usage_item: np.ndarray
    usage_user: np.ndarray
    usage_age: np.ndarray
    watermark: dict
    roots: list[int] | None = None  # the families read; None: the whole catalog


def numbered_by_level(inputs: RankingInputs) -> RankingInputs:
    """``inputs`` with the sub-agents numbered level by level (``Forest.in_level_order``), as
    every run reads them: the ranking's passes then read each node's parent from nearby memory
    rather than from anywhere in a million (a 1M run takes about 0.8 of its time in id order).
    Ratings and usage rows keep their order, so each sub-agent's sums add in the same order."""
    forest, old_index = inputs.forest.in_level_order()
    new_index = np.empty(forest.n, dtype=np.int64)
    new_index[old_index] = np.arange(forest.n)
    return replace(
        inputs,
        forest=forest,
        eligible=inputs.eligible[old_index],
        item_age_days=inputs.item_age_days[old_index],
        ratings=replace(inputs.ratings, item_idx=new_index[inputs.ratings.item_idx]),
        usage_item=new_index[inputs.usage_item],
    )


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def watermark(session: Session) -> dict:
    """What the last run saw: the newest sub-agent change, rating and event receipt."""
    newest_subagent = session.exec(select(func.max(SubAgent.updated_at), func.count())).one()
    newest_rating = session.exec(
        select(func.max(Feedback.updated_at), func.count()).where(COUNTED_RATING)
    ).one()
    newest_event = session.execute(select(func.max(UsageEvent.received_at))).scalar()

    def stamp(value) -> str | None:
        return _as_utc(value).isoformat() if value is not None else None

    return {
        "subagents": [stamp(newest_subagent[0]), int(newest_subagent[1])],
        "ratings": [stamp(newest_rating[0]), int(newest_rating[1])],
        "events": stamp(newest_event),
    }


def load_inputs(
    session: Session, now: datetime, mark: dict, roots: list[int] | None = None
) -> RankingInputs:
    """Everything a run reads; ``mark`` is the watermark the caller checked before loading.
    With ``roots``, only those root families (whole trees) and their ratings and usage.

    Rows are read in id order: a sub-agent's ratings are then summed in the same order
    whether its family is read alone or with the whole catalog, so both give the same bits."""
    in_families = SubAgent.root_id.in_(roots) if roots is not None else true()
    rows = session.exec(
        select(
            SubAgent.id, SubAgent.parent_id, SubAgent.visibility, SubAgent.status,
            SubAgent.created_at,
        ).where(in_families).order_by(SubAgent.id)
    ).all()  # fmt: skip
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    parents = np.fromiter(
        (r[1] if r[1] is not None else -1 for r in rows), dtype=np.int64, count=len(rows)
    )
    eligible = np.fromiter((publicly_listed(r[2], r[3]) for r in rows), dtype=bool, count=len(rows))
    item_age = np.fromiter(
        ((now - _as_utc(r[4])).total_seconds() / 86400 for r in rows),
        dtype=np.float64,
        count=len(rows),
    )
    forest = Forest.from_parents(ids, parents)
    position = {int(i): k for k, i in enumerate(ids)}

    rating_query = select(
        Feedback.user_id, Feedback.subagent_id, Feedback.rating, Feedback.scale,
        Feedback.updated_at,
    ).where(COUNTED_RATING).order_by(Feedback.id)  # fmt: skip
    if roots is not None:
        rating_query = rating_query.join(SubAgent, SubAgent.id == Feedback.subagent_id).where(
            in_families
        )
    ratings = session.exec(rating_query).all()
    ratings = [r for r in ratings if r[1] in position]
    user_ids, user_idx = np.unique(
        np.fromiter((r[0] for r in ratings), dtype=np.int64, count=len(ratings)),
        return_inverse=True,
    )
    rating_values = Ratings(
        user_idx=user_idx.astype(np.int64),
        item_idx=np.fromiter((position[r[1]] for r in ratings), np.int64, len(ratings)),
        value=np.fromiter((r[2] for r in ratings), np.float64, len(ratings)),
        is_thumb=np.fromiter((r[3] == "thumbs" for r in ratings), bool, len(ratings)),
        age_days=np.fromiter(
            (max(0.0, (now - _as_utc(r[4])).total_seconds() / 86400) for r in ratings),
            np.float64,
            len(ratings),
        ),
    )

    today = now.date()
    since = today - timedelta(days=USAGE_WINDOW_DAYS)
    # Distinct (sub-agent, user, day): all usage_stats needs (first use, last use, weeks seen),
    # at a fraction of the rows of the raw events.
    day_query = select(UsageEvent.subagent_id, UsageEvent.user_id, UsageEvent.occurred_day).where(
        UsageEvent.occurred_day >= since
    )
    if roots is not None:
        day_query = day_query.join(SubAgent, SubAgent.id == UsageEvent.subagent_id).where(
            in_families
        )
    days = session.exec(
        day_query.group_by(UsageEvent.subagent_id, UsageEvent.user_id, UsageEvent.occurred_day)
    ).all()
    days = [d for d in days if d[0] in position]
    usage_item = np.fromiter((position[d[0]] for d in days), np.int64, len(days))
    usage_user = np.fromiter((d[1] for d in days), np.int64, len(days))
    usage_age = np.fromiter(((today - _day(d[2])).days for d in days), np.float64, len(days))
    return numbered_by_level(
        RankingInputs(
            forest=forest,
            eligible=eligible,
            item_age_days=item_age,
            ratings=rating_values,
            user_ids=user_ids,
            usage_item=usage_item,
            usage_user=usage_user,
            usage_age=usage_age,
            watermark=mark,
            roots=roots,
        )
    )


def _day(value) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value))


@dataclass(frozen=True)
class StoredFit:
    """A full run's global fit as stored: ``fit`` with ``user_offset`` empty (the leniencies
    live in ``rater_offset``), the catalog-wide retention rate, and the run that made it."""

    fit: GlobalFit
    retention_rate: float
    run_id: int | None = None

    def as_parameters(self) -> dict:
        return {
            "scale_centre": list(self.fit.scale_centre),
            "scale_spread": list(self.fit.scale_spread),
            "global_mean": self.fit.global_mean,
            "noise_var": self.fit.noise_var,
            "priors": [
                [p.prior_mean, p.prior_var, p.drift_mean, p.drift_var] for p in self.fit.priors
            ],
            "retention_rate": self.retention_rate,
        }

    @classmethod
    def from_run(cls, run: RankingRun) -> StoredFit | None:
        stored = run.parameters.get("fit")
        if stored is None:
            return None
        fit = GlobalFit(
            scale_centre=tuple(stored["scale_centre"]),
            scale_spread=tuple(stored["scale_spread"]),
            global_mean=stored["global_mean"],
            noise_var=stored["noise_var"],
            user_offset=np.zeros(0),
            priors=tuple(LineagePrior(*p) for p in stored["priors"]),
        )
        return cls(fit=fit, retention_rate=stored["retention_rate"], run_id=run.id)


def compute(
    inputs: RankingInputs,
    offsets: dict[int, float],
    seed: int = 0,
    fit: StoredFit | None = None,
) -> Scores:
    """The pure part of a run (what bench/evolution_scale.py times). Without ``fit``, a full
    run: ``offsets`` (rater leniencies by user id) warm-start the rater fit. With the ``fit`` of
    a full run, a lineage run over the families in ``inputs``: ``offsets`` are that fit's."""
    forest = inputs.forest
    with ThreadPoolExecutor(RANKING_THREADS) as pool:
        # Usage figures need nothing of the ratings' pass: they are counted meanwhile. User
        # ids go in as they are: usage_stats only needs them bounded (32-bit ids times a
        # million sub-agents still fit its int64 keys), and re-indexing them cost a sort.
        usage = pool.submit(
            usage_stats,
            inputs.usage_item,
            inputs.usage_user,
            inputs.usage_age,
            forest.n,
            retention_rate=None if fit is None else fit.retention_rate,
        )
        by_user = offsets_by_index(offsets, inputs.user_ids) if offsets else None
        pinned = None
        if fit is not None:
            user_offset = by_user if by_user is not None else np.zeros(len(inputs.user_ids))
            pinned = replace(fit.fit, user_offset=user_offset)
        scores = rank(
            forest,
            inputs.ratings,
            n_users=len(inputs.user_ids),
            item_age_days=inputs.item_age_days,
            warm_user_offset=by_user if fit is None else None,
            eligible=inputs.eligible,
            fit=pinned,
            noise_seed=seed,
            threads=RANKING_THREADS,
        )
        return replace(scores, usage=usage.result())


def offsets_by_index(offsets: dict[int, float], user_ids: np.ndarray) -> np.ndarray:
    """The stored leniency of each of ``user_ids`` (0 for a rater not seen before), looked up
    as sorted arrays: a dict lookup per rater took a tenth of a second at a million."""
    known = np.fromiter(offsets.keys(), dtype=np.int64, count=len(offsets))
    values = np.fromiter(offsets.values(), dtype=np.float64, count=len(offsets))
    by_id = np.argsort(known)
    known, values = known[by_id], values[by_id]
    user_ids = np.asarray(user_ids, dtype=np.int64)
    at = np.minimum(np.searchsorted(known, user_ids), max(known.size - 1, 0))
    found = known[at] == user_ids if known.size else np.zeros(user_ids.size, dtype=bool)
    return np.where(found, values[at] if known.size else 0.0, 0.0)


def score_rows(inputs: RankingInputs, scores: Scores) -> list[tuple]:
    """One tuple per sub-agent: (subagent_id, *SCORE_COLUMNS), rounded, None for no value, in
    id order (``inputs.forest.by_id``), as the table's key is."""
    forest, usage = inputs.forest, scores.usage
    ids = forest.ids
    best = np.where(scores.best_descendant >= 0, ids[np.maximum(scores.best_descendant, 0)], -1)
    columns = [
        np.round(scores.mean, STORED_DIGITS),
        np.round(scores.sd, STORED_DIGITS),
        np.round(scores.display, STORED_DIGITS),
        np.round(scores.branch_value, STORED_DIGITS),
        best,
        np.round(scores.p_descendant_better, STORED_DIGITS),
        np.round(scores.fork_gain, STORED_DIGITS),
        np.round(np.where(np.isfinite(scores.rising), scores.rising, np.nan), STORED_DIGITS),
        np.round(usage.trending, STORED_DIGITS),
        np.round(usage.active_users, STORED_DIGITS),
        np.round(usage.retention, STORED_DIGITS),
        np.round(usage.score, STORED_DIGITS),
        scores.rating_count.astype(np.int64),
        scores.young,
    ]
    by_id = forest.by_id
    lists = [c[by_id].tolist() for c in columns]
    best_list, rising_list = lists[4], lists[7]
    lists[4] = [None if b < 0 else b for b in best_list]
    lists[7] = [None if r != r else r for r in rising_list]  # NaN -> NULL
    return list(zip(ids[by_id].tolist(), *lists, strict=True))


def lineages_of_rows(inputs: RankingInputs, rows: list[int]) -> list[int]:
    """The root ids of the sub-agents at positions ``rows`` of ``score_rows(inputs, …)``."""
    forest = inputs.forest
    nodes = forest.by_id[np.asarray(rows, dtype=np.int64)]  # the rows are in id order
    return np.unique(forest.ids[forest.root[nodes]]).tolist()


def _previous_rows(session: Session, roots: list[int] | None) -> dict[int, tuple]:
    columns = [getattr(SubAgentScore, name) for name in SCORE_COLUMNS]
    query = select(SubAgentScore.subagent_id, *columns)
    if roots is not None:
        query = query.join(SubAgent, SubAgent.id == SubAgentScore.subagent_id).where(
            SubAgent.root_id.in_(roots)
        )
    return {row[0]: tuple(row[1:]) for row in session.exec(query).all()}


def _same(old: tuple, new: tuple) -> bool:
    for a, b in zip(old, new, strict=True):
        if isinstance(a, float) or isinstance(b, float):
            if a is None or b is None or abs(a - b) > 10**-STORED_DIGITS:
                return False
        elif a != b:
            return False
    return True


def _moment(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp) if stamp else None


def changed_families(
    session: Session, since: dict, lookback: timedelta = DIRTY_LOOKBACK
) -> list[int]:
    """The root ids of the families with something new after the watermark ``since`` (less
    ``lookback``): a sub-agent written (published, forked, edited, visibility or status
    changed), a counted rating written, a usage event received."""
    found: set[int] = set()
    newest_subagent = _moment(since["subagents"][0])
    query = select(SubAgent.root_id).distinct()
    if newest_subagent is not None:
        query = query.where(SubAgent.updated_at > newest_subagent - lookback)
    found.update(session.scalars(query).all())
    newest_rating = _moment(since["ratings"][0])
    query = select(SubAgent.root_id).distinct().join(Feedback, Feedback.subagent_id == SubAgent.id)
    if newest_rating is not None:
        query = query.where(Feedback.updated_at > newest_rating - lookback)
    found.update(session.scalars(query).all())
    newest_event = _moment(since["events"])
    used = select(UsageEvent.subagent_id).distinct()
    if newest_event is not None:
        used = used.where(
            UsageEvent.occurred_day >= (newest_event - EVENT_MAX_LATENESS).date(),
            UsageEvent.received_at > newest_event - lookback,
        )
    query = select(SubAgent.root_id).distinct().where(SubAgent.id.in_(used.scalar_subquery()))
    found.update(session.scalars(query).all())
    return sorted(int(root) for root in found)


def _last_full_run(session: Session) -> RankingRun | None:
    return session.scalars(
        select(RankingRun).where(RankingRun.mode == "full").order_by(RankingRun.id.desc())
    ).first()


def _taste_lost(last_full: RankingRun | None, now: datetime, retry_after: timedelta) -> bool:
    """Whether the last full run's taste was never stored (its fit failed, or its worker died
    during it) and will not be: no summary ``retry_after`` after its scores. Then the next run
    is a full one, and its taste is fitted. A run that was itself such a retry is not retried:
    a fit that fails twice waits for the next daily run."""
    if last_full is None or {"taste", "taste_retry_of"} & last_full.parameters.keys():
        return False
    scored = _as_utc(last_full.finished_at or last_full.started_at)
    return now - scored > retry_after


def _hold_lock(session: Session, lock: Lock) -> None:
    """One holder of ``lock`` at a time across every worker, until the transaction ends: a
    transaction advisory lock on PostgreSQL (writers elsewhere carry on), the write lock on
    SQLite (its only writer lock; the embedded default's runs take well under a second).

    A run waits its turn on either: on SQLite past the busy timeout (a request's wait, 5 s),
    asking again until ``SQLITE_LOCK_WAIT_SECONDS``, as a run on a loaded machine can hold
    the lock for longer than that."""
    if session.connection().dialect.name == "postgresql":
        wait_for_lock(session, lock)
        return
    deadline = time.monotonic() + SQLITE_LOCK_WAIT_SECONDS
    while True:
        try:
            begin_writing(session)
            return
        except OperationalError as error:
            busy = getattr(error.orig, "sqlite_errorname", "") == "SQLITE_BUSY"
            if not busy or time.monotonic() > deadline:
                raise


@dataclass(frozen=True)
class _FullFit:
    """What a full run's taste fit needs from it, kept in memory between its two transactions."""

    run_id: int
    inputs: RankingInputs
    scores: Scores


def run_ranking(
    unit_of_work: Callable[[], UnitOfWork],
    *,
    now: datetime | None = None,
    force: bool = False,
    seed: int = 0,
    lookback: timedelta = DIRTY_LOOKBACK,
    taste_retry_after: timedelta = TASTE_RETRY_AFTER,
) -> RankingRun:
    """Rank what changed since the last run (module docstring): a lineage run over the changed
    families, or a full run when ``force`` is set, when no full run has stored its
    fit yet, when the last one is older than ``FULL_RUN_EVERY``, when more than
    ``INCREMENTAL_MAX_ROOTS`` families changed or when the last one's taste was lost
    (``_taste_lost``). Skips when nothing changed since the last run (unless ``force``).

    Two transactions from ``unit_of_work``: the run with its scores and offsets, committed;
    then, after a full run, its taste (``learn_taste``). If the taste fit fails, the scores
    stay committed and the previous taste is kept; the error is raised."""
    with unit_of_work() as unit:
        run, full = _rank(
            unit.session,
            now=now,
            force=force,
            seed=seed,
            lookback=lookback,
            taste_retry_after=taste_retry_after,
        )
        unit.commit()
    if full is not None:
        with unit_of_work() as unit:
            taste = learn_taste(unit.session, full)
            unit.commit()
        run.parameters = {**run.parameters, "taste": taste}
    return run


def _rank(
    session: Session,
    *,
    now: datetime | None,
    force: bool,
    seed: int,
    lookback: timedelta,
    taste_retry_after: timedelta,
) -> tuple[RankingRun, _FullFit | None]:
    """The run itself, in the caller's transaction: the run row, its scores and (a full run)
    the rater offsets, with what its taste fit will need."""
    started = time.perf_counter()
    now = now or utcnow()
    _hold_lock(session, Lock.RANKING)
    last = session.scalars(
        select(RankingRun).where(RankingRun.mode != "skipped").order_by(RankingRun.id.desc())
    ).first()
    mark = watermark(session)
    last_full = _last_full_run(session)
    taste_lost = _taste_lost(last_full, now, taste_retry_after)
    if not (force or taste_lost) and last is not None and last.parameters.get("watermark") == mark:
        metrics.record_ranking(time.perf_counter() - started, "skipped")
        return RankingRun(mode="skipped", parameters={"watermark": mark}), None

    stored = StoredFit.from_run(last_full) if last_full is not None else None
    roots = None
    if not (force or taste_lost or stored is None or last is None) and (
        now - _as_utc(last_full.started_at) < FULL_RUN_EVERY
    ):
        roots = changed_families(session, last.parameters["watermark"], lookback)
        if len(roots) > INCREMENTAL_MAX_ROOTS:
            roots = None
    inputs = load_inputs(session, now, mark, roots)
    if roots is None:
        offsets = dict(session.exec(select(RaterOffset.user_id, RaterOffset.leniency)).all())
        scores = compute(inputs, offsets, seed=seed)
    else:
        raters = (
            select(Feedback.user_id)
            .join(SubAgent, SubAgent.id == Feedback.subagent_id)
            .where(SubAgent.root_id.in_(roots))
        )
        offsets = dict(
            session.exec(
                select(RaterOffset.user_id, RaterOffset.leniency).where(
                    RaterOffset.user_id.in_(raters.scalar_subquery())
                )
            ).all()
        )
        scores = compute(inputs, offsets, seed=seed, fit=stored)
    parameters = {
        "watermark": inputs.watermark,
        "prior": {
            "mu0": scores.prior.prior_mean,
            "sigma0_sq": scores.prior.prior_var,
            "drift_mean": scores.prior.drift_mean,
            "drift_var": scores.prior.drift_var,
        },
        "noise_var": scores.baseline.noise_var,
        "global_mean": scores.baseline.global_mean,
    }
    if roots is None:
        parameters["fit"] = StoredFit(
            fit=scores.fit, retention_rate=scores.usage.retention_rate
        ).as_parameters()
        if taste_lost:
            parameters["taste_retry_of"] = last_full.id
    else:
        parameters["fit_run_id"] = stored.run_id
    run = RankingRun(
        started_at=now,
        mode="full" if roots is None else "incremental",
        subagents=inputs.forest.n,
        ratings=int(inputs.ratings.item_idx.size),
        trees_recomputed=int(np.count_nonzero(inputs.forest.parent < 0)),
        parameters=parameters,
    )
    session.add(run)
    session.flush()

    rows = score_rows(inputs, scores)
    previous = _previous_rows(session, roots)
    changed_at = [
        i for i, r in enumerate(rows) if r[0] not in previous or not _same(previous[r[0]], r[1:])
    ]
    changed = [rows[i] for i in changed_at]
    _write_scores(session, changed, run.id, now)
    if changed:
        # Cached pages of those lineages and every cached sort show the new order.
        mark_catalog_changed(session, *lineages_of_rows(inputs, changed_at))
    if roots is None:
        _write_offsets(session, inputs.user_ids, scores.baseline.user_offset, offsets)
    run.parameters = {**run.parameters, "rows_written": len(changed)}
    run.finished_at = utcnow()
    run.seconds = round(time.perf_counter() - started, 3)
    metrics.record_ranking(run.seconds, run.mode)
    session.add(run)
    session.flush()
    return run, (_FullFit(run.id, inputs, scores) if roots is None else None)


def learn_taste(session: Session, full: _FullFit) -> dict:
    """Fit the personal taste on what the full run ``full`` leaves of every rating and replace
    the stored one with it, recording what was stored in the run's ``parameters["taste"]``
    (returned).

    Its strength λ is chosen anew (a path of fits checked on a tenth of the ratings set aside:
    most of the fit's cost) when the last choice is ``TASTE_REG_EVERY`` old or more; in between,
    the last λ is kept and the fit starts from the stored factors, ``PATH_SWEEPS`` sweeps (a
    λ of "no taste" is kept as it is, with nothing to fit).

    A run whose scores a later full run has replaced stores nothing (``"superseded"``), so an
    older fit that finishes last never overwrites a newer one. The fit runs before the lock
    (``Lock.TASTE``) is taken: on SQLite that lock is the database's one write lock, which
    every request that writes would otherwise wait on."""
    started = time.perf_counter()
    summary: dict = {"superseded": True}
    run = session.get(RankingRun, full.run_id)
    if _is_latest_full_run(session, full.run_id):
        last = _last_taste(session, full.run_id)
        moment = _as_utc(run.started_at)
        keep = (
            last is not None
            and moment - datetime.fromisoformat(last["reg_chosen_at"]) < TASTE_REG_EVERY
        )
        if keep:
            reg = math.inf if last["reg"] is None else float(last["reg"])
            start = _last_factors(session, full.inputs) if math.isfinite(reg) else None
            taste = taste_of(full.inputs, full.scores, reg=reg, start=start)
        else:
            taste = taste_of(full.inputs, full.scores)
        _hold_lock(session, Lock.TASTE)
        if _is_latest_full_run(session, full.run_id):
            summary = {
                "rank": taste.rank,
                "reg": taste.reg if math.isfinite(taste.reg) else None,
                "reg_chosen_at": last["reg_chosen_at"] if keep else moment.isoformat(),
                "sweeps": taste.sweeps,
                **_write_taste(session, full.inputs, taste),
                "seconds": round(time.perf_counter() - started, 3),
            }
    run.parameters = {**run.parameters, "taste": summary}
    session.add(run)
    session.flush()
    return summary


def _last_taste(session: Session, before_run_id: int) -> dict | None:
    """The taste summary of the latest full run before ``before_run_id`` that stored one of
    this code's rank (runs whose fit failed or was superseded stored none)."""
    for parameters in session.scalars(
        select(RankingRun.parameters)
        .where(RankingRun.mode == "full", RankingRun.id < before_run_id)
        .order_by(RankingRun.id.desc())
        .limit(TASTE_LOOKBACK_RUNS)
    ):
        taste = (parameters or {}).get("taste") or {}
        if taste.get("rank") == TASTE_RANK and "reg_chosen_at" in taste:
            return taste
    return None


def _last_factors(session: Session, inputs: RankingInputs) -> np.ndarray:
    """The stored sub-agent factors (``subagent_taste``) laid out by ``inputs.forest``; rows of
    zeros for sub-agents without one (new since, or said nothing about)."""
    start = np.zeros((inputs.forest.n, TASTE_RANK))
    position = {int(i): n for n, i in enumerate(inputs.forest.ids.tolist())}
    for subagent_id, factors in session.execute(
        select(SubAgentTaste.subagent_id, SubAgentTaste.factors)
    ):
        at = position.get(subagent_id)
        if at is not None and len(factors) == TASTE_RANK:
            start[at] = factors
    return start


def _is_latest_full_run(session: Session, run_id: int) -> bool:
    latest = _last_full_run(session)
    return latest is not None and latest.id == run_id


_UPSERT_SCORES = """
INSERT INTO subagent_score (subagent_id, {columns}, run_id, computed_at)
SELECT subagent_id, {columns}, %(run)s, %(now)s FROM scores_incoming
ON CONFLICT (subagent_id) DO UPDATE SET {updates}, run_id = EXCLUDED.run_id,
    computed_at = EXCLUDED.computed_at
"""


def _write_scores(session: Session, rows: list[tuple], run_id: int, now: datetime) -> None:
    if not rows:
        return
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        cursor = connection.connection.dbapi_connection.cursor()
        names = ", ".join(("subagent_id", *SCORE_COLUMNS))
        # The columns' types without their NOT NULL constraints (run_id comes later).
        create = (
            "CREATE TEMPORARY TABLE IF NOT EXISTS scores_incoming ON COMMIT DELETE ROWS AS "  # noqa: S608 - fixed names
            f"SELECT {names} FROM subagent_score WITH NO DATA"
        )
        cursor.execute(create)
        cursor.execute("TRUNCATE scores_incoming")
        buffer = io.StringIO()
        for row in rows:
            buffer.write("\t".join(_copy_text(v) for v in row))
            buffer.write("\n")
        with cursor.copy(f"COPY scores_incoming ({names}) FROM STDIN") as copy:
            copy.write(buffer.getvalue())
        columns = ", ".join(SCORE_COLUMNS)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in SCORE_COLUMNS)
        cursor.execute(
            _UPSERT_SCORES.format(columns=columns, updates=updates), {"run": run_id, "now": now}
        )
        return
    placeholders = ", ".join(f":{c}" for c in ("subagent_id", *SCORE_COLUMNS))
    updates = ", ".join(f"{c} = excluded.{c}" for c in SCORE_COLUMNS)
    statement = text(
        f"INSERT INTO subagent_score (subagent_id, {', '.join(SCORE_COLUMNS)}, run_id, "  # noqa: S608 - fixed names
        f"computed_at) VALUES ({placeholders}, :run_id, :computed_at) "
        f"ON CONFLICT (subagent_id) DO UPDATE SET {updates}, run_id = excluded.run_id, "
        "computed_at = excluded.computed_at"
    )
    names = ("subagent_id", *SCORE_COLUMNS)
    session.execute(
        statement,
        [dict(zip(names, row, strict=True), run_id=run_id, computed_at=now) for row in rows],
    )


def taste_of(
    inputs: RankingInputs,
    scores: Scores,
    *,
    reg: float | None = None,
    start: np.ndarray | None = None,
) -> Taste:
    """The personal scores' taste (``evolution.personal``) on what this full run's model leaves
    of every rating: ratings on the run's common scale, its μ, b_u and E[θ] as the
    non-personal part. ``reg`` None chooses λ; given, ``PATH_SWEEPS`` sweeps from ``start``
    (the last fit's sub-agent factors, ``_last_factors``) at most."""
    ratings = inputs.ratings
    value = to_common_scale(ratings.value, ratings.is_thumb, scores.fit.scale)
    base = NonPersonal(
        global_mean=float(scores.baseline.global_mean),
        user_offset=scores.baseline.user_offset,
        item_mean=scores.mean,
    )
    kept = {} if reg is None else {"reg": reg, "sweeps": PATH_SWEEPS, "start": start}
    return fit_taste(ratings.user_idx, ratings.item_idx, value, inputs.forest, base, **kept)


def _write_taste(session: Session, inputs: RankingInputs, taste: Taste) -> dict[str, int]:
    """Replace the stored factors by this run's; none when no taste beat none (everyone then
    gets the non-personal order). Factors of zero (a rater or sub-agent the taste says
    nothing about) are not stored."""
    session.execute(RaterTaste.__table__.delete())
    session.execute(SubAgentTaste.__table__.delete())
    if not math.isfinite(taste.reg):
        return {"raters": 0, "subagents": 0}
    written = {}
    for table, key, ids, factors in (
        (RaterTaste.__table__, "user_id", inputs.user_ids, taste.user_factors),
        (SubAgentTaste.__table__, "subagent_id", inputs.forest.ids, taste.item_factors),
    ):
        keep = np.flatnonzero(np.any(factors != 0.0, axis=1))
        rows = list(zip(ids[keep].tolist(), np.round(factors[keep], 6).tolist(), strict=True))
        _insert_factors(session, table.name, key, rows)
        written["raters" if key == "user_id" else "subagents"] = len(rows)
    return written


def _insert_factors(session: Session, table: str, key: str, rows: list[tuple]) -> None:
    if not rows:
        return
    connection = session.connection()
    if connection.dialect.name == "postgresql":  # a million rows: COPY, not INSERTs
        cursor = connection.connection.dbapi_connection.cursor()
        with cursor.copy(f"COPY {table} ({key}, factors) FROM STDIN") as copy:
            for identifier, factors in rows:
                copy.write_row((identifier, json.dumps(factors)))
        return
    session.execute(
        text(f"INSERT INTO {table} ({key}, factors) VALUES (:id, :factors)"),  # noqa: S608 - fixed names
        [{"id": i, "factors": json.dumps(f)} for i, f in rows],
    )


def _copy_text(value) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    return repr(value) if isinstance(value, float) else str(value)


def _write_offsets(
    session: Session, user_ids: np.ndarray, offsets: np.ndarray, previous: dict[int, float]
) -> None:
    """Store the fit's leniencies exactly as it used them (not rounded): the lineage runs until
    the next full run score with these very numbers."""
    changed = [
        {"user_id": u, "leniency": b}
        for u, b in zip(user_ids.tolist(), offsets.tolist(), strict=True)
        if previous.get(u) != b
    ]
    if not changed:
        return
    statement = text(
        "INSERT INTO rater_offset (user_id, leniency) VALUES (:user_id, :leniency) "
        "ON CONFLICT (user_id) DO UPDATE SET leniency = excluded.leniency"
    )
    session.execute(statement, changed)


@dataclass
class RankingFigures:
    """A sub-agent's row of the last ranking run, and its best descendant when one shows:
    ``best_probability`` that it is better, ``best_language`` the language it is written in."""

    score: SubAgentScore
    # The columns of the run's best descendant that a detail reads, or the row of a branch
    # in the reader's language.
    best_descendant: Branch | SubAgent | None
    best_probability: float = 0.0
    best_language: str | None = None


# How many of a sub-agent's best-scored descendants are read to find one in the reader's
# language.
LANGUAGE_BRANCH_CANDIDATES = 50


def listing_language(subagent: SubAgent) -> str:
    """The language a listing is written in (``evolution.language.language_of``)."""
    return language_of(f"{subagent.title} {subagent.summary}")


def ranking_figures(
    session: Session,
    viewer,
    subagent_id: int,
    language: str | None = None,
    *,
    score: SubAgentScore | None,
    best: Branch | None,
) -> RankingFigures | None:
    """The figures of the last run (None before it scored the sub-agent). The best descendant
    was chosen among public, active sub-agents; it is checked again here, since a yank or a
    visibility change since the run must not show through.

    With the reader's ``language``, a better branch they read is named before the run's best
    when there is one (``_branch_in_language``): someone reading English is better served by
    a loved English branch than by a better-loved Chinese one.

    ``score`` and ``best`` (the columns of the descendant the score names) are read with the
    sub-agent (``market.catalog.services.get_visible_detail``)."""
    if score is None:
        return None
    if score.best_descendant_id == subagent_id or not (
        best is not None and best.status == "active" and can_view(viewer, best)
    ):
        best = None
    figures = RankingFigures(score=score, best_descendant=best)
    if best is not None:
        figures.best_probability = score.p_descendant_better
        figures.best_language = listing_language(best)
    if language is None or (best is not None and reads(language, figures.best_language)):
        return figures
    found = _branch_in_language(session, session.get(SubAgent, subagent_id), score, language)
    if found is not None:
        figures.best_descendant, figures.best_probability = found
        figures.best_language = listing_language(figures.best_descendant)
    return figures


def _branch_in_language(
    session: Session, subagent: SubAgent, score: SubAgentScore, language: str
) -> tuple[SubAgent, float] | None:
    """The listed descendant the reader of ``language`` reads with the best display score
    among those
    better than ``subagent`` with probability ≥ BEST_DESCENDANT_CONFIDENCE, and that
    probability. It is computed as if the two were independent, Φ((μ_d − μ_v) / √(σ_d² + σ_v²)),
    from the stored figures: a descendant's quality is positively correlated with its
    ancestor's, so the true probability is higher, and a branch named here is at least as sure
    as the run's own best descendant."""
    family = subagent.root_id
    prefix = f"{subagent.ancestry}/{subagent.id}" if subagent.ancestry else str(subagent.id)
    rows = session.execute(
        select(SubAgent, SubAgentScore)
        .join(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
        .where(
            SubAgent.root_id == family,
            or_(SubAgent.ancestry == prefix, SubAgent.ancestry.startswith(prefix + "/")),
            publicly_listed_clause(),
            SubAgentScore.quality > score.quality,
        )
        .order_by(SubAgentScore.display.desc(), SubAgent.id)
        .limit(LANGUAGE_BRANCH_CANDIDATES)
    )
    for descendant, figures in rows:
        if not reads(language, listing_language(descendant)):
            continue
        spread = math.hypot(figures.quality_sd, score.quality_sd)
        z = (figures.quality - score.quality) / spread if spread else math.inf
        probability = 0.5 * math.erfc(-z / math.sqrt(2))
        if probability >= BEST_DESCENDANT_CONFIDENCE:
            return descendant, probability
    return None


class EmbeddedSchedule:
    """Beat's job when there is no beat (the embedded default): at most every ``every``
    seconds, the first request that reads scores runs the ranking first. A run with nothing
    new returns after its watermark check, so the cost is a few aggregate queries per interval.
    """

    def __init__(self, every: float = 300.0):
        self.every = every
        self._last = float("-inf")
        self._lock = threading.Lock()

    def refresh_if_due(self, unit_of_work: Callable[[], UnitOfWork]) -> None:
        if time.monotonic() - self._last < self.every or not self._lock.acquire(blocking=False):
            return
        try:
            run_ranking(unit_of_work)
            self._last = time.monotonic()
        finally:
            self._lock.release()
