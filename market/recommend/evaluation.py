"""Off-policy evaluation on the production log (``sprig ope``): what another slate policy would
have earned, estimated from the logged exposures (the math is ``evolution.ope``).

A row is one logged exposure: one slot of a decision, with the sub-agent shown, its propensity
and the slot's whole distribution (sub-agent id → probability, given the earlier slots).
Its outcome is the export's (``market.exports.services.load_feedback``): the counted rating
(``COUNTED_RATING``) that cites the exposure (``Feedback.exposure_id``). The reward is
``liked`` (1 when that rating is a thumbs up or 4-5 stars, else 0, also when there is no rating)
or ``rated`` (1 when there is a counted rating at all). The export's consent filter is not
applied: it decides what may leave the platform for training, and this stays inside.

Candidates, all defined from the logged distributions, since that is what the log holds:
* ``logged``: the logging policy itself (every weight 1: IPS is the observed mean reward);
* ``uniform``: uniform over the sub-agents the slot could have shown;
* ``greedy``: the slot's most probable sub-agent;
* ``tempered:α``: the slot's probabilities to the power α, renormalized (α < 1 explores more,
  α > 1 less).
Missing for a candidate such as "Thompson with another young share": the exposure rows do not
hold each candidate's E[θ], sd(θ) and young flag (nor the young-slot and all-slot parts of the
distribution apart), so the young share's effect cannot be recomputed from the log; logging
them would let this module evaluate it by Monte Carlo as bench/ope.py does in the simulator.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import and_, select
from sqlmodel import Session

from evolution.ope import Distributions, Estimate, LoggedRows, evaluate, mean_reward_model
from evolution.ope import unsupported_mass as unsupported
from market.recommend.models import Exposure
from market.usage.models import COUNTED_RATING, Feedback

REWARDS = ("liked", "rated")
DEFAULT_CANDIDATES = ("logged", "uniform", "greedy", "tempered:0.5", "tempered:2")
LIKED_STARS = 4


@dataclass(frozen=True)
class ExposureLog:
    """The logged exposures, one per row; sub-agents as indices into ``subagent_ids``."""

    action: np.ndarray
    propensity: np.ndarray
    reward: np.ndarray
    logged: Distributions  # each row's logged slot distribution
    subagent_ids: np.ndarray
    decision: np.ndarray  # per row, its decision's number: standard errors count slates

    @property
    def decisions(self) -> int:
        return int(np.unique(self.decision).size)


@dataclass(frozen=True)
class CandidateValue:
    candidate: str
    estimates: dict[str, Estimate]
    unsupported_mass: float


@dataclass
class _LoggedExposure:
    decision_id: uuid.UUID
    subagent_id: int
    propensity: float
    distribution: dict[str, float]  # sub-agent id (as JSON keeps it) → probability
    reward: float


def _reward(scale: str | None, rating: int | None, kind: str) -> float:
    if scale is None:
        return 0.0
    if kind == "rated":
        return 1.0
    return float(rating == 1 if scale == "thumbs" else rating >= LIKED_STARS)


def load_exposure_log(
    session: Session, *, reward: str = "liked", since: datetime | None = None
) -> ExposureLog:
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    query = (
        select(
            Exposure.id,
            Exposure.decision_id,
            Exposure.subagent_id,
            Exposure.propensity,
            Exposure.slot_distribution,
            Feedback.scale,
            Feedback.rating,
        )
        .outerjoin(Feedback, and_(Feedback.exposure_id == Exposure.id, COUNTED_RATING))
        .order_by(Exposure.created_at, Exposure.decision_id, Exposure.slot)
    )
    if since is not None:
        query = query.where(Exposure.created_at >= since)
    exposures: dict[uuid.UUID, _LoggedExposure] = {}
    for row in session.execute(query):
        value = _reward(row.scale, row.rating, reward)
        seen = exposures.get(row.id)
        if seen is None:
            exposures[row.id] = _LoggedExposure(
                row.decision_id, row.subagent_id, row.propensity, row.slot_distribution, value
            )
        else:
            # Two ratings can cite one exposure (two versions of the sub-agent): the best counts.
            seen.reward = max(seen.reward, value)
    entries = list(exposures.values())
    ids = sorted(
        {int(i) for e in entries for i in e.distribution} | {e.subagent_id for e in entries}
    )
    index = {subagent_id: position for position, subagent_id in enumerate(ids)}
    row_of, action_of, probability = [], [], []
    for r, entry in enumerate(entries):
        for subagent_id, p in entry.distribution.items():
            row_of.append(r)
            action_of.append(index[int(subagent_id)])
            probability.append(p)
    decision_number: dict[uuid.UUID, int] = {}
    return ExposureLog(
        action=np.array([index[e.subagent_id] for e in entries], dtype=np.int64),
        propensity=np.array([e.propensity for e in entries], dtype=np.float64),
        reward=np.array([e.reward for e in entries], dtype=np.float64),
        logged=Distributions(
            np.array(row_of, dtype=np.int64),
            np.array(action_of, dtype=np.int64),
            np.array(probability, dtype=np.float64),
        ),
        subagent_ids=np.array(ids, dtype=np.int64),
        decision=np.array(
            [decision_number.setdefault(e.decision_id, len(decision_number)) for e in entries],
            dtype=np.int64,
        ),
    )


def candidate_distributions(log: ExposureLog, candidate: str) -> Distributions:
    if candidate == "logged":
        return log.logged
    if candidate == "uniform":
        return log.logged.tempered(0.0)
    if candidate == "greedy":
        return log.logged.greedy()
    name, _, alpha = candidate.partition(":")
    if name == "tempered":
        try:
            return log.logged.tempered(float(alpha))
        except ValueError:
            pass
    raise ValueError(
        f"unknown candidate {candidate!r}: logged, uniform, greedy or tempered:α (α ≥ 0)"
    )


def evaluate_candidates(
    log: ExposureLog, candidates: list[str], *, weight_cap: float
) -> list[CandidateValue]:
    if log.action.size == 0:
        raise ValueError("no logged exposures to evaluate")
    model = mean_reward_model(log.action, log.reward, log.subagent_ids.size)
    n = log.action.size
    values = []
    for candidate in candidates:
        target = candidate_distributions(log, candidate)
        rows = LoggedRows(
            log.propensity,
            log.reward,
            target.probability_of(log.action),
            group=log.decision,
        )
        estimates = evaluate(
            rows,
            predicted_logged=model[log.action],
            predicted_under_target=target.expected(model, n),
            weight_cap=weight_cap,
        )
        values.append(CandidateValue(candidate, estimates, unsupported(target, log.logged, n)))
    return values
