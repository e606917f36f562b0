"""Which sub-agents the main agent shows: Thompson sampling with a share reserved for young forks.

For each slot of a slate of k, the policy draws one value per remaining candidate from its
posterior with the spread narrowed, N(E[θ], (τ·sd(θ))²) with τ = ``SD_SCALE``, and shows the
candidate with the highest draw. A sub-agent is thus shown more often the likelier it is to be
the best: well-known good ones most of the time, uncertain ones sometimes, known-bad ones almost
never.

Why τ = 0.5 and not plain Thompson sampling (τ = 1): a slate is drawn for every request between
two ranking runs, so many people see draws from one posterior before any of their ratings are
read, and the young-fork slots below already buy the exploration that new forks need. Plain
Thompson sampling then spends its regular slots exploring twice. In the evolution simulator
(``bench/evolution_sim.py``, one catalog for every policy, 15 seeds, nine worlds) τ = 0.5 cut
Sprig's regret by 12-20% in every world (0.65-0.78x of the best fair baseline's with the same
budget became 0.57-0.65x). The price is learning: the ranking's Spearman on young forks, in the
log the policy made, fell from 0.51-0.65 to 0.39-0.53; τ = 0.3 cut regret only a little more
and learnt less still (docs/ope.md, "Choosing the spread"). Chapelle and Li saw the same on
display ads ("An Empirical Evaluation of Thompson Sampling", 2011): draws from a narrowed
posterior did better than from the exact one. Every candidate keeps a chance to be shown, so
the log still supports off-policy estimates, and ``sprig ope`` estimates another τ
(``sd-scale:τ``) from the production log before a switch.

New forks have few ratings and would rarely win a draw against established sub-agents even when
their posterior is wide, so a share of slots (``young_share``, 15% by default) is reserved for
them: per slate, floor(k·share) slots plus one more with probability frac(k·share), always the
last slots of the slate, are filled by the same Thompson draw restricted to young candidates
(falling back to all remaining candidates when no young one is left).

Each decision is logged with its propensity: the probability that the policy would have shown
that sub-agent in that slot given the sub-agents already placed in earlier slots,
    P(slot j shows i | earlier) = P(slot j young)·P_young(i wins) + P(slot j regular)·P_all(i wins),
so off-policy estimates can reweight by 1/propensity (as Chatbot Arena reweights by 1/P(pair)).
P(i wins) is estimated from ``n_draws`` draws of the same kind plus the draw actually used, so
each slot's distribution over candidates sums to exactly 1 and the shown item's propensity is
never 0. The same ``n_draws`` draws serve every slot of a slate (candidates already placed are
struck out), so the estimate costs one draw matrix per slate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# /1 drew from the exact posterior (τ = 1).
POLICY_VERSION = "thompson-young-share/2"
SD_SCALE = 0.5


@dataclass(frozen=True)
class Slate:
    items: np.ndarray  # chosen item indices (from candidate_idx), one per slot
    propensity: np.ndarray  # per slot, P(policy shows that item there | earlier slots)
    slot_distribution: np.ndarray  # (slots, candidates): that distribution over candidate_idx
    young_slot: np.ndarray  # per slot, whether it was reserved for young forks this time
    young_slot_probability: np.ndarray  # per slot, the chance it is reserved
    policy_version: str = POLICY_VERSION


def young_slot_probability(k: int, young_share: float) -> np.ndarray:
    """Per slot, the probability that it is a young slot (young slots are the last ones)."""
    expected = k * young_share
    whole, frac = int(np.floor(expected)), expected - np.floor(expected)
    from_end = k - np.arange(k)  # slot j is young iff n_young >= k - j
    return np.where(from_end <= whole, 1.0, np.where(from_end == whole + 1, frac, 0.0))


def thompson_slates(
    post_mean: np.ndarray,
    post_sd: np.ndarray,
    *,
    n_slates: int,
    k: int,
    rng: np.random.Generator,
    young_mask: np.ndarray,
    young_share: float = 0.15,
    sd_scale: float = SD_SCALE,
) -> tuple[np.ndarray, np.ndarray]:
    """``n_slates`` independent slates over all items of the given arrays, vectorized: the
    policy of ``choose_slate`` without the propensity bookkeeping. Returns the (n_slates, k)
    item indices (-1 where fewer than k items exist) and the (n_slates, k) young-slot flags."""
    post_mean = np.asarray(post_mean, dtype=np.float64)
    post_sd = sd_scale * np.asarray(post_sd, dtype=np.float64)
    young_mask = np.asarray(young_mask, dtype=bool)
    n = post_mean.size
    expected = k * young_share
    whole = int(np.floor(expected))
    n_young = whole + (rng.random(n_slates) < expected - whole)
    young_slot = (k - np.arange(k))[None, :] <= n_young[:, None]
    chosen = np.full((n_slates, k), -1, dtype=np.int64)
    taken = np.zeros((n_slates, n), dtype=bool)
    rows = np.arange(n_slates)
    for slot in range(min(k, n)):
        draws = post_mean + post_sd * rng.standard_normal((n_slates, n))
        draws[taken] = -np.inf
        young_left = (young_mask[None, :] & ~taken).any(axis=1)
        restrict = young_slot[:, slot] & young_left
        draws[restrict[:, None] & ~young_mask[None, :]] = -np.inf
        pick = np.argmax(draws, axis=1)
        chosen[:, slot] = pick
        taken[rows, pick] = True
    return chosen, young_slot


def choose_slate(
    candidate_idx: np.ndarray,
    post_mean: np.ndarray,
    post_sd: np.ndarray,
    *,
    k: int,
    rng: np.random.Generator,
    young_mask: np.ndarray,
    young_share: float = 0.15,
    n_draws: int = 2000,
    sd_scale: float = SD_SCALE,
) -> Slate:
    """One slate of up to k items from ``candidate_idx`` (e.g. the relevance top-K), with
    propensities. ``post_mean``, ``post_sd`` and ``young_mask`` are indexed by item, like
    ``candidate_idx``'s values. Deterministic given ``rng``'s state."""
    candidate_idx = np.asarray(candidate_idx, dtype=np.int64)
    mean = np.asarray(post_mean, dtype=np.float64)[candidate_idx]
    sd = np.asarray(post_sd, dtype=np.float64)[candidate_idx]
    young = np.asarray(young_mask, dtype=bool)[candidate_idx]
    slots = min(k, candidate_idx.size)
    local, young_slot = thompson_slates(
        mean,
        sd,
        n_slates=1,
        k=slots,
        rng=rng,
        young_mask=young,
        young_share=young_share,
        sd_scale=sd_scale,
    )
    local, young_slot = local[0], young_slot[0]
    # The young-slot chances of a k-slot slate, for the slots actually filled.
    p_young_slot = young_slot_probability(slots, young_share)

    distribution = slot_distributions(
        mean,
        sd,
        young,
        local,
        young_share=young_share,
        rng=rng,
        n_draws=n_draws,
        young_slot=young_slot,
        sd_scale=sd_scale,
    )
    propensity = distribution[np.arange(slots), local]
    return Slate(
        items=candidate_idx[local],
        propensity=propensity,
        slot_distribution=distribution,
        young_slot=young_slot,
        young_slot_probability=p_young_slot,
    )


def slot_distributions(
    post_mean: np.ndarray,
    post_sd: np.ndarray,
    young_mask: np.ndarray,
    picks: np.ndarray,
    *,
    young_share: float,
    rng: np.random.Generator,
    n_draws: int = 2000,
    young_slot: np.ndarray | None = None,
    sd_scale: float = SD_SCALE,
) -> np.ndarray:
    """The (slots, candidates) distribution of each slot of the slate ``picks`` (candidate
    indices in slot order) under Thompson sampling with ``young_share``, each slot given the
    picks before it: what ``choose_slate`` logs, and what a policy with another young share
    would have done at each slot of a logged slate (off-policy evaluation, ``sprig ope``).

    ``young_slot``: whether each slot's actual pick came from the young pool, for the slate
    this policy drew itself: its own draw then counts as one more (frequencies sum to one and
    the shown candidate's propensity is never 0). None for someone else's slate.

    One matrix of draws serves every slot's estimate (common random numbers): a slot's
    distribution is the share of these draws each remaining candidate wins, among everyone or
    among the young. Placed candidates are struck out (-inf) as the slate fills, so the cost is
    one (n_draws x candidates) draw per slate, not one per slot and pool (k=20 over 200
    candidates: 9x faster). Each slot's estimate is unbiased all the same."""
    mean = np.asarray(post_mean, dtype=np.float64)
    sd = np.asarray(post_sd, dtype=np.float64)
    young = np.asarray(young_mask, dtype=bool)
    picks = np.asarray(picks, dtype=np.int64)
    slots = picks.size
    p_young_slot = young_slot_probability(slots, young_share)
    draws = mean + sd_scale * sd * rng.standard_normal((n_draws, mean.size))
    young_draws = np.where(young[None, :], draws, -np.inf)
    distribution = np.zeros((slots, mean.size))
    remaining = np.ones(mean.size, dtype=bool)
    for slot, pick in enumerate(picks.tolist()):
        young_pool = young_draws if (remaining & young).any() else draws
        own_young = None if young_slot is None else bool(young_slot[slot])
        for pool_draws, share, used in (
            (draws, 1.0 - p_young_slot[slot], own_young is False),
            (young_pool, p_young_slot[slot], own_young is True),
        ):
            if share > 0:
                distribution[slot] += share * _win_frequency(
                    pool_draws, actual=pick if used else None
                )
        remaining[pick] = False
        draws[:, pick] = -np.inf
        young_draws[:, pick] = -np.inf
    return distribution


def _win_frequency(draws: np.ndarray, *, actual: int | None) -> np.ndarray:
    """Share of the draws (rows) each candidate (column) wins, counting the draw that was
    actually used, if any, as one more: frequencies, so they sum to exactly 1. Struck-out
    candidates (-inf in every row) never win while any candidate is left."""
    n_draws, n = draws.shape
    wins = np.bincount(np.argmax(draws, axis=1), minlength=n).astype(np.float64)
    total = float(n_draws)
    if actual is not None:
        wins[actual] += 1.0
        total += 1.0
    return wins / total
