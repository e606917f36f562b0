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
* ``young-share:X``: Thompson sampling over the same pool with X of the slots kept for young
  forks (the logging policy uses ``YOUNG_SHARE``), drawn at the policy's spread
  (``evolution.explore.SD_SCALE``);
* ``sd-scale:τ``: Thompson sampling with the logging policy's young share, drawn from the
  posterior with its sd scaled by τ (below ``SD_SCALE`` it explores less; 1 is the exact
  posterior, the most a replay can judge: ``MAX_SD_SCALE``). The value estimated is what the
  logged requests would have earned, not what exploring teaches the ranking for later, so a
  smaller τ tends to look better here than it is (``bench/evolution_sim.py`` measures both).

Replaying Thompson sampling (the last two): a decision's first exposure keeps what the policy
believed of each candidate (``pool_belief``: E[θ], sd(θ), young), so each logged slot's
distribution under the candidate, given the logged slots before it, is recomputed by the
policy's own Monte Carlo (``evolution.explore.slot_distributions``, ``N_DRAWS`` draws a
decision, about 5 ms each over a pool of 300). Decisions logged before pool beliefs were kept
cannot be replayed so: asking for such a candidate leaves them out of every candidate's
estimate (the output counts them), so all candidates are judged on the same rows. The pool is
the logged one, pruned for the logging policy; a candidate's pruned sub-agent had a chance below
10⁻⁴ there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import and_, select
from sqlmodel import Session

from evolution.explore import SD_SCALE, slot_distributions
from evolution.ope import Distributions, Estimate, LoggedRows, evaluate, mean_reward_model
from evolution.ope import unsupported_mass as unsupported
from market.recommend.models import Exposure
from market.recommend.services import N_DRAWS, YOUNG_SHARE
from market.usage.models import COUNTED_RATING, Feedback

REWARDS = ("liked", "rated")
DEFAULT_CANDIDATES = ("logged", "uniform", "greedy", "tempered:0.5", "tempered:2")
LIKED_STARS = 4
REPLAY_SEED = 20261202  # the Monte Carlo of young-share candidates, per decision
# The widest spread a replay can judge: the pool was pruned of sub-agents ``PRUNE_Z`` exact sds
# below the best (a chance under 10⁻⁴ at 1), which a wider draw would show and the pool lacks.
MAX_SD_SCALE = 1.0


@dataclass(frozen=True)
class ExposureLog:
    """The logged exposures, one per row; sub-agents as indices into ``subagent_ids``."""

    action: np.ndarray
    propensity: np.ndarray
    reward: np.ndarray
    logged: Distributions  # each row's logged slot distribution
    subagent_ids: np.ndarray
    decision: np.ndarray  # per row, its decision's number: standard errors count slates
    slot: np.ndarray  # per row, its place in the slate
    # Per decision number, what the policy believed of its pool (None: logged before that was
    # kept): pool sub-agents as indices into ``subagent_ids``, E[θ], sd(θ), young.
    beliefs: tuple[PoolBelief | None, ...] = ()

    @property
    def decisions(self) -> int:
        return int(np.unique(self.decision).size)

    def replayable(self) -> ExposureLog:
        """Only the decisions whose pool belief was kept, renumbered."""
        keep_decision = np.array([b is not None for b in self.beliefs], dtype=bool)
        rows = np.flatnonzero(keep_decision[self.decision]) if self.beliefs else np.zeros(0, int)
        kept = np.flatnonzero(keep_decision)
        renumber = np.full(len(self.beliefs), -1, dtype=np.int64)
        renumber[kept] = np.arange(kept.size)
        return ExposureLog(
            action=self.action[rows],
            propensity=self.propensity[rows],
            reward=self.reward[rows],
            logged=self.logged.rows(rows),
            subagent_ids=self.subagent_ids,
            decision=renumber[self.decision[rows]],
            slot=self.slot[rows],
            beliefs=tuple(self.beliefs[d] for d in kept),
        )


@dataclass(frozen=True)
class PoolBelief:
    members: np.ndarray  # indices into ExposureLog.subagent_ids
    mean: np.ndarray
    sd: np.ndarray
    young: np.ndarray


@dataclass(frozen=True)
class CandidateValue:
    candidate: str
    estimates: dict[str, Estimate]
    unsupported_mass: float


@dataclass
class _LoggedExposure:
    decision_id: uuid.UUID
    slot: int
    subagent_id: int
    propensity: float
    distribution: dict[str, float]  # sub-agent id (as JSON keeps it) → probability
    pool_belief: dict[str, list] | None  # on a decision's first slot: id → [E, sd, young]
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
            Exposure.slot,
            Exposure.subagent_id,
            Exposure.propensity,
            Exposure.slot_distribution,
            Exposure.pool_belief,
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
                row.decision_id,
                row.slot,
                row.subagent_id,
                row.propensity,
                row.slot_distribution,
                row.pool_belief,
                value,
            )
        else:
            # Two ratings can cite one exposure (two versions of the sub-agent): the best counts.
            seen.reward = max(seen.reward, value)
    entries = list(exposures.values())
    ids = sorted(
        {int(i) for e in entries for i in e.distribution}
        | {int(i) for e in entries for i in (e.pool_belief or ())}
        | {e.subagent_id for e in entries}
    )
    index = {subagent_id: position for position, subagent_id in enumerate(ids)}
    row_of, action_of, probability = [], [], []
    for r, entry in enumerate(entries):
        for subagent_id, p in entry.distribution.items():
            row_of.append(r)
            action_of.append(index[int(subagent_id)])
            probability.append(p)
    decision_number: dict[uuid.UUID, int] = {}
    decision = np.array(
        [decision_number.setdefault(e.decision_id, len(decision_number)) for e in entries],
        dtype=np.int64,
    )
    beliefs: list[PoolBelief | None] = [None] * len(decision_number)
    for entry, number in zip(entries, decision.tolist(), strict=True):
        if entry.pool_belief:
            members = list(entry.pool_belief.items())
            beliefs[number] = PoolBelief(
                members=np.array([index[int(i)] for i, _ in members], dtype=np.int64),
                mean=np.array([float(b[0]) for _, b in members]),
                sd=np.array([float(b[1]) for _, b in members]),
                young=np.array([bool(b[2]) for _, b in members]),
            )
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
        decision=decision,
        slot=np.array([e.slot for e in entries], dtype=np.int64),
        beliefs=tuple(beliefs),
    )


def needs_pool_beliefs(candidates: list[str]) -> bool:
    """Whether any candidate replays Thompson sampling from the logged pool beliefs."""
    return any(candidate.startswith(("young-share:", "sd-scale:")) for candidate in candidates)


def candidate_distributions(log: ExposureLog, candidate: str) -> Distributions:
    if candidate == "logged":
        return log.logged
    if candidate == "uniform":
        return log.logged.tempered(0.0)
    if candidate == "greedy":
        return log.logged.greedy()
    name, _, value = candidate.partition(":")
    if name == "tempered":
        try:
            return log.logged.tempered(float(value))
        except ValueError:
            pass
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if name == "young-share" and 0.0 <= number <= 1.0:
        return _thompson_replayed(log, number, SD_SCALE)
    if name == "sd-scale" and 0.0 <= number <= MAX_SD_SCALE:
        return _thompson_replayed(log, YOUNG_SHARE, number)
    raise ValueError(
        f"unknown candidate {candidate!r}: logged, uniform, greedy, tempered:α (α ≥ 0), "
        f"young-share:X (0 ≤ X ≤ 1) or sd-scale:τ (0 ≤ τ ≤ {MAX_SD_SCALE:g})"
    )


def _thompson_replayed(log: ExposureLog, young_share: float, sd_scale: float) -> Distributions:
    """Each logged slot's distribution under Thompson sampling with ``young_share``, drawn at
    ``sd_scale``, given the logged slots before it, from the decision's pool belief (every
    decision must have one: ``ExposureLog.replayable``). Seeded per decision, so a run repeats
    exactly."""
    rows, actions, probabilities = [], [], []
    order = np.lexsort((log.slot, log.decision))
    starts = np.flatnonzero(np.r_[True, np.diff(log.decision[order]) != 0])
    for members in np.split(order, starts[1:]):
        number = int(log.decision[members[0]])
        belief = log.beliefs[number]
        if belief is None:
            raise ValueError("a decision without its pool belief cannot be replayed")
        place = {int(member): j for j, member in enumerate(belief.members.tolist())}
        picks = [place[int(a)] for a in log.action[members]]
        distribution = slot_distributions(
            belief.mean,
            belief.sd,
            belief.young,
            np.array(picks, dtype=np.int64),
            young_share=young_share,
            rng=np.random.default_rng([REPLAY_SEED, number]),
            n_draws=N_DRAWS,
            sd_scale=sd_scale,
        )
        for row, slot_distribution in zip(members.tolist(), distribution, strict=True):
            support = np.flatnonzero(slot_distribution)
            rows.append(np.full(support.size, row, dtype=np.int64))
            actions.append(belief.members[support])
            probabilities.append(slot_distribution[support])
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return Distributions(empty, empty, np.zeros(0))
    return Distributions(
        np.concatenate(rows), np.concatenate(actions), np.concatenate(probabilities)
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
