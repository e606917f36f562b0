r"""Reward rows for the training cluster, from correlated feedback. Pure: arrays in, rows out.

The unit is a **version** (an immutable bundle): the completion a coding agent produced for a
prompt. Versions form a forest: version n+1 of a sub-agent hangs under version n (a revision),
and the first version of a fork under the exact version it was forked from.

1. The reward is the ranking's model (evolution.ranking), fitted on versions instead of
   sub-agents, through the ranking's own ``lineage_belief``: ratings on one scale (stars and
   thumbs in standard units of their own kind), Koren's baseline μ + b_u + b_v to take each
   rater's leniency out, end-of-scale ratings read as bounds (five stars says "at least 4.5",
   a censored reading re-made at the current belief), then the exact Gaussian posterior of
   quality θ on the version forest with each branch's own fork drift (a version with few
   ratings borrows from its parent, siblings and children). ``reward`` = E[θ], ``reward_sd`` =
   sd(θ), in rating standard units: for the same ratings, exactly the ranking's E[θ] and
   sd(θ). No half-life here: a version never changes, so old ratings of it stay as true.

2. Pairs (TRL preference rows) come from three relations, each bounded to O(ratings) candidates:
   * ``parent_child``: a version against its parent (a fork against what it was forked from,
     a revision against the previous version);
   * ``sibling``: two children of the same parent, each paired with the next
     ``sibling_window`` siblings (by id);
   * ``co_rated``: versions of one category rated by the same users; per user and category
     (and split), the rated versions are put in a pseudo-random order and consecutive ones
     paired, so a user with n ratings in c such groups proposes n − c pairs, every one usable
     (ordering a user's ratings across categories and then dropping the pairs that straddle
     two would waste most of them: people rate a few apps of each kind), and the rater model
     (which compares exactly such ratings) speaks to each. Past 12 ratings per exported
     version, a fixed pseudo-random sample of the ratings proposes them (``co_raters``
     counts the users of that sample who rated both).
   A pair is kept only when its debiased margin is confident:
       P(θ_chosen > θ_rejected) = Φ(E[θ_a − θ_b] / sd(θ_a − θ_b)) ≥ confidence,
       Var(θ_a − θ_b) = Var θ_a + Var θ_b − 2 Cov(θ_a, θ_b),
   with the posterior covariance of relatives read from the tree model: g_c Var θ_p for a child
   c of p, g_a g_b Var θ_p for siblings (g = 1/(1 + τ² J), the share of a parent's draw that a
   child's draw keeps). Other pairs are taken as independent, which can only understate the
   confidence (related versions covary positively). Each version enters at most
   ``max_pairs_per_item`` pairs, the most confident first; the two sides of a pair are always
   in the same split.

3. Unpaired rows (TRL KTO): ``label`` is True when P(θ > reference) ≥ confidence and False
   when it is ≤ 1 − confidence, the reference being the median reward of the exported versions
   of the same category (the whole export's median when a category has fewer than 3); versions
   in between are left out, because KTO treats every label as certain.

4. Train/test split by lineage root: a root is in ``test`` when splitmix64(root id) / 2⁶⁴ <
   ``test_share``, so a whole tree (every prompt derived from one original request) sits in one
   split, in every export.

5. Prompts. A version's own prompt (``version_prompt``) is the request that produced it: a
   root's description, a fork's request with what it was forked from, a revision's change note.
   A pair carries one prompt that *both* sides answer, so that the preference says which answer
   people liked and not which one matches the question (``prompt_versions``):
   * when one side descends from the other (every ``parent_child`` pair, and co-rated
     versions of one line), the descendant's own prompt: it asked for the change, and the
     ancestor is the answer that did not make it;
   * when both descend from one version (``sibling`` pairs, co-rated cousins), the prompt of
     their nearest common ancestor: each side is that request carried further, and neither
     side's own request, which only it answers, is favoured;
   * versions of different lineages (co-rated only) share no request: the chosen side's own
     prompt, the need its raters had, which the rejected side is the other app they tried for.
   The category alone ("Write a diet mini-app.") is never a prompt: every version has a
   request of its own.

Only versions with at least k distinct raters are exported (rows and pairs); the model itself is
fitted on all the consenting ratings, so small versions still inform their relatives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from evolution.ranking import (
    LOWER_BOUND_Z,
    CensoredReading,
    LineagePosterior,
    LineagePrior,
    censoring_bounds,
    common_scale_table,
    debias,
    lineage_belief,
    rating_levels,
    scale_of_kind,
)
from evolution.tree import Forest

RELATIONS = ("parent_child", "sibling", "co_rated")
PARENT_CHILD, SIBLING, CO_RATED = range(3)
DEFAULT_CONFIDENCE = 0.95
DEFAULT_K_ANONYMITY = 5
DEFAULT_TEST_SHARE = 0.1
DEFAULT_SIBLING_WINDOW = 3
DEFAULT_CO_RATED_SAMPLE_PER_ITEM = 12
DEFAULT_MAX_PAIRS_PER_ITEM = 8
MIN_CATEGORY_FOR_OWN_REFERENCE = 3


# --------------------------------------------------------------------------- the reward
@dataclass(frozen=True)
class RatingArrays:
    """Plain (user, item, rating) data; items are node indices of the forest."""

    user_idx: np.ndarray
    item_idx: np.ndarray
    value: np.ndarray  # stars 1..5 or thumbs 0/1
    is_thumb: np.ndarray | None = None
    propensity: np.ndarray | None = None  # P(shown) of the exposure a rating cites; NaN: none
    # True when no (user, item) pair repeats (the feedback table's unique key guarantees it):
    # distinct raters are then plain counts, without sorting millions of keys.
    unique_pairs: bool = False


@dataclass(frozen=True)
class RewardEstimate:
    mean: np.ndarray  # E[θ]: the reward
    sd: np.ndarray  # sd(θ)
    ratings: np.ndarray  # ratings received
    raters: np.ndarray  # distinct raters
    own_mean: np.ndarray  # y_v: the rater-corrected mean of the version's own ratings
    own_precision: np.ndarray  # π_v: what its own ratings are worth (0 without ratings)
    raw_mean: np.ndarray  # mean rating on the common scale, no rater correction (NaN: none)
    stars_count: np.ndarray
    stars_sum: np.ndarray
    thumbs_up: np.ndarray
    thumbs_down: np.ndarray
    exposed: np.ndarray  # ratings citing an exposure
    propensity_mean: np.ndarray  # NaN where none
    propensity_min: np.ndarray  # NaN where none
    ips_mean: np.ndarray  # Σ z/p / Σ 1/p over exposed ratings (self-normalized IPS); NaN: none
    rating_z: np.ndarray  # per rating: its value on the common scale
    user_offset: np.ndarray  # b_u per user: how much more generous than average
    global_mean: float
    noise_var: float
    prior: LineagePrior
    posterior: LineagePosterior

    @property
    def lower(self) -> np.ndarray:
        """E[θ] − 1.64 sd(θ), the ranking's display score."""
        return self.mean - LOWER_BOUND_Z * self.sd


def estimate_rewards(
    forest: Forest,
    ratings: RatingArrays,
    *,
    n_users: int,
    epochs: int = 10,
) -> RewardEstimate:
    """The debiased reward of every node (module docstring, 1)."""
    n = forest.n
    item = np.asarray(ratings.item_idx, dtype=np.int64)
    user = np.asarray(ratings.user_idx, dtype=np.int64)
    thumb = None if ratings.is_thumb is None else np.asarray(ratings.is_thumb, bool)
    # Every per-rating figure of the value alone is a small table read at each rating's code.
    levels = rating_levels(ratings.value, thumb)
    scale = scale_of_kind(levels)
    z = levels.per_code(common_scale_table(levels, scale))
    baseline = debias(user, item, z, n_users, n, epochs=epochs)
    # The ranking's belief, end-of-scale ratings read as bounds: one reward, one rank.
    reading = (
        CensoredReading(baseline, user, item, *censoring_bounds(ratings.value, thumb, scale))
        if item.size
        else None
    )
    belief = lineage_belief(forest, baseline, reading=reading)
    prior, posterior = belief.prior, belief.posterior
    count = np.bincount(item, minlength=n)
    if ratings.unique_pairs or item.size == 0:
        raters = count
    else:
        pairs = np.unique(item * max(n_users, 1) + user)
        raters = np.bincount(pairs // max(n_users, 1), minlength=n)
    z_sum = np.bincount(item, z, minlength=n)
    # Stars, thumbs down and thumbs up counted in one pass: class 0, 2, 3 of item·4 + class.
    level = levels.levels
    rating_class = np.vstack([np.zeros_like(level), 2 + (level > 0.5)]).astype(np.uint8)
    key = item * 4
    key += levels.per_code(rating_class)
    by_class = np.bincount(key, minlength=4 * n).reshape(n, 4)
    del key
    stars_count, thumbs_down, thumbs_up = by_class[:, 0], by_class[:, 2], by_class[:, 3]
    stars_sum = np.bincount(item, levels.per_code([level, np.zeros_like(level)]), minlength=n)

    if ratings.propensity is None:
        propensity = np.full(item.shape, np.nan)
    else:
        propensity = np.asarray(ratings.propensity, dtype=np.float64)
    exposed_mask = np.isfinite(propensity) & (propensity > 0)
    e_item, e_p, e_z = item[exposed_mask], propensity[exposed_mask], z[exposed_mask]
    exposed = np.bincount(e_item, minlength=n)
    p_sum = np.bincount(e_item, e_p, minlength=n)
    p_min = np.full(n, np.inf)
    np.minimum.at(p_min, e_item, e_p)
    inverse = np.bincount(e_item, 1.0 / e_p, minlength=n)
    weighted_z = np.bincount(e_item, e_z / e_p, minlength=n)

    def per_exposed(total: np.ndarray, over: np.ndarray) -> np.ndarray:
        return np.divide(total, over, out=np.full(n, np.nan), where=over > 0)

    return RewardEstimate(
        mean=posterior.mean,
        sd=posterior.sd,
        ratings=count,
        raters=raters,
        own_mean=np.where(count > 0, baseline.item_evidence, np.nan),
        own_precision=baseline.item_precision,
        raw_mean=per_exposed(z_sum, count.astype(np.float64)),
        stars_count=stars_count,
        stars_sum=stars_sum,
        thumbs_up=thumbs_up,
        thumbs_down=thumbs_down,
        exposed=exposed,
        propensity_mean=per_exposed(p_sum, exposed.astype(np.float64)),
        propensity_min=np.where(exposed > 0, p_min, np.nan),
        ips_mean=per_exposed(weighted_z, inverse),
        rating_z=z,
        user_offset=baseline.user_offset,
        global_mean=baseline.global_mean,
        noise_var=baseline.noise_var,
        prior=prior,
        posterior=posterior,
    )


def eligible_items(estimate: RewardEstimate, k: int) -> np.ndarray:
    """k-anonymity: only versions rated by at least k distinct (consenting) people."""
    return estimate.raters >= k


# --------------------------------------------------------------------------- splits
def splitmix64(values: np.ndarray) -> np.ndarray:
    """A fixed 64-bit mix (Steele et al.'s SplitMix64 finalizer) of integer keys."""
    return _splitmix64_in_place(np.asarray(values).astype(np.uint64))


def _splitmix64_in_place(x: np.ndarray) -> np.ndarray:
    """``splitmix64`` overwriting the uint64 array ``x`` (one scratch array, not one per step:
    on ten million keys each temporary costs more in page faults than its arithmetic)."""
    shifted = np.empty_like(x)
    with np.errstate(over="ignore"):
        x += np.uint64(0x9E3779B97F4A7C15)
        x ^= np.right_shift(x, np.uint64(30), out=shifted)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= np.right_shift(x, np.uint64(27), out=shifted)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= np.right_shift(x, np.uint64(31), out=shifted)
    return x


def is_test_root(root_ids: np.ndarray, test_share: float) -> np.ndarray:
    """Whether each lineage root belongs to the test split (module docstring, 4)."""
    unit = splitmix64(root_ids).astype(np.float64) / 2.0**64
    return unit < test_share


# --------------------------------------------------------------------------- pairs
@dataclass(frozen=True)
class Pairs:
    chosen: np.ndarray  # node index of the better one
    rejected: np.ndarray
    relation: np.ndarray  # int8 index into RELATIONS
    margin: np.ndarray  # E[θ_chosen − θ_rejected] > 0
    margin_sd: np.ndarray  # sd(θ_chosen − θ_rejected)
    p_better: np.ndarray  # P(θ_chosen > θ_rejected)
    co_raters: np.ndarray  # users whose sampled chains linked the two (co_rated; else 0)

    def __len__(self) -> int:
        return int(self.chosen.size)

    def take(self, index: np.ndarray) -> Pairs:
        return Pairs(**{name: value[index] for name, value in vars(self).items()})


def _parent_child_candidates(forest: Forest, eligible: np.ndarray) -> np.ndarray:
    child = np.flatnonzero((forest.parent >= 0) & eligible)
    child = child[eligible[forest.parent[child]]]
    return np.stack([child, forest.parent[child].astype(np.int64)], axis=1)


def _sibling_candidates(forest: Forest, eligible: np.ndarray, window: int) -> np.ndarray:
    node = np.flatnonzero((forest.parent >= 0) & eligible)
    parent = forest.parent[node]
    order = np.lexsort((node, parent))
    node, parent = node[order], parent[order]
    out = []
    for step in range(1, window + 1):
        same = parent[:-step] == parent[step:]
        out.append(np.stack([node[:-step][same], node[step:][same]], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 2), np.int64)


def co_rated_candidates(
    ratings: RatingArrays,
    eligible: np.ndarray,
    category: np.ndarray,
    test: np.ndarray,
    *,
    sample_per_item: int = DEFAULT_CO_RATED_SAMPLE_PER_ITEM,
) -> tuple[np.ndarray, np.ndarray]:
    """The co-rated candidate pairs of ``select_pairs``: consecutive items of each user's
    ratings of one category and split, in a pseudo-random order; returns the unique pairs
    and how many users proposed each. At most ``sample_per_item`` ratings per eligible version
    (a fixed pseudo-random sample) propose pairs: each version can only use a few pairs, and
    proposing one per rating would cost a sort of every rating. They depend on who rated what,
    not on the model: a caller can find them while it fits the model and hand them to
    ``select_pairs``."""
    eligible = np.asarray(eligible, dtype=bool)
    category = np.asarray(category)
    test = np.asarray(test, dtype=bool)
    max_ratings = sample_per_item * max(int(eligible.sum()), 1)
    user = np.asarray(ratings.user_idx, dtype=np.int64)
    item = np.asarray(ratings.item_idx, dtype=np.int64)
    # Every rating's place in the pseudo-random order, then one mask for "eligible and in the
    # sample" and one compaction (the hash of a rating does not depend on which are kept).
    shuffle = user * np.int64(1_000_003)
    shuffle += item
    shuffle = _splitmix64_in_place(shuffle.view(np.uint64))
    keep = eligible[item]
    kept = int(np.count_nonzero(keep))
    if kept < 2:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64)
    if kept > max_ratings:
        keep &= shuffle < np.uint64(int(max_ratings / kept * 2.0**64))
    user, item, shuffle = user[keep], item[keep], shuffle[keep]
    # The group (user, category, split) as one key, the shuffle as the order within it.
    n_groups = np.int64(2 * (int(category.max(initial=0)) + 1))
    group = user * n_groups
    group += category[item].astype(np.int64) * 2 + test[item]
    order = np.lexsort(((shuffle >> np.uint64(1)).astype(np.int64), group))
    group, item = group[order], item[order]
    same = (group[:-1] == group[1:]) & (item[:-1] != item[1:])
    a, b = item[:-1][same], item[1:][same]
    a, b = np.minimum(a, b), np.maximum(a, b)
    n = np.int64(eligible.size)
    keys, counts = np.unique(a * n + b, return_counts=True)
    return np.stack([keys // n, keys % n], axis=1), counts


def _rank_within(groups: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Position of each entry among the entries of its group, by ascending ``priority``."""
    order = np.lexsort((priority, groups))
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(sorted_groups[1:] != sorted_groups[:-1]) + 1]
    run_start = np.repeat(starts, np.diff(np.r_[starts, sorted_groups.size]))
    rank = np.empty(groups.size, dtype=np.int64)
    rank[order] = np.arange(groups.size) - run_start
    return rank


def pair_covariance(
    forest: Forest, posterior: LineagePosterior, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Posterior Cov(θ_a, θ_b) for a parent and its child or two siblings; 0 otherwise (a
    lower bound: relatives covary positively in the tree model)."""
    parent_a = forest.parent[a].astype(np.int64)
    parent_b = forest.parent[b].astype(np.int64)
    var, gain = posterior.var, posterior.gain
    a_child_of_b = parent_a == b
    b_child_of_a = parent_b == a
    siblings = (parent_a == parent_b) & (parent_a >= 0)
    safe_parent = np.maximum(parent_a, 0)
    return np.where(
        a_child_of_b,
        gain[a] * var[b],
        np.where(
            b_child_of_a,
            gain[b] * var[a],
            np.where(siblings, gain[a] * gain[b] * var[safe_parent], 0.0),
        ),
    )


def select_pairs(
    forest: Forest,
    estimate: RewardEstimate,
    ratings: RatingArrays,
    *,
    eligible: np.ndarray,
    category: np.ndarray,
    test: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
    sibling_window: int = DEFAULT_SIBLING_WINDOW,
    max_pairs_per_item: int = DEFAULT_MAX_PAIRS_PER_ITEM,
    relations: tuple[str, ...] = RELATIONS,
    co_rated_sample_per_item: int = DEFAULT_CO_RATED_SAMPLE_PER_ITEM,
    co_rated: tuple[np.ndarray, np.ndarray] | None = None,
) -> Pairs:
    """Preference pairs whose debiased margin is confident (module docstring, 2).
    ``co_rated``: the co-rated candidates, if already found (``co_rated_candidates`` with the
    same ratings, eligibility, categories and splits)."""
    eligible = np.asarray(eligible, dtype=bool)
    category = np.asarray(category)
    test = np.asarray(test, dtype=bool)
    blocks, codes, co_counts = [], [], []
    if "parent_child" in relations:
        found = _parent_child_candidates(forest, eligible)
        blocks.append(found)
        codes.append(np.full(len(found), PARENT_CHILD, np.int8))
        co_counts.append(np.zeros(len(found), np.int64))
    if "sibling" in relations:
        found = _sibling_candidates(forest, eligible, sibling_window)
        blocks.append(found)
        codes.append(np.full(len(found), SIBLING, np.int8))
        co_counts.append(np.zeros(len(found), np.int64))
    if "co_rated" in relations:
        found, counts = co_rated or co_rated_candidates(
            ratings, eligible, category, test, sample_per_item=co_rated_sample_per_item
        )
        blocks.append(found)
        codes.append(np.full(len(found), CO_RATED, np.int8))
        co_counts.append(counts)
    if not blocks or sum(len(b) for b in blocks) == 0:
        empty = np.zeros(0, np.int64)
        return Pairs(empty, empty, empty.astype(np.int8), *(np.zeros(0),) * 3, empty)
    both = np.concatenate(blocks).astype(np.int64)
    relation = np.concatenate(codes)
    co_raters = np.concatenate(co_counts)

    # One row per unordered pair, the first relation (in RELATIONS order) naming it.
    low, high = both.min(axis=1), both.max(axis=1)
    key = low * np.int64(forest.n) + high
    order = np.lexsort((relation, key))
    first = order[np.r_[True, key[order][1:] != key[order][:-1]]]
    first = first[test[low[first]] == test[high[first]]]
    a, b, relation, co_raters = low[first], high[first], relation[first], co_raters[first]

    posterior = estimate.posterior
    difference = posterior.mean[a] - posterior.mean[b]
    covariance = pair_covariance(forest, posterior, a, b)
    diff_var = np.maximum(posterior.var[a] + posterior.var[b] - 2.0 * covariance, 1e-12)
    diff_sd = np.sqrt(diff_var)
    p_better = ndtr(np.abs(difference) / diff_sd)
    confident = p_better >= confidence
    a_wins = difference > 0
    chosen = np.where(a_wins, a, b)[confident]
    rejected = np.where(a_wins, b, a)[confident]
    pairs = Pairs(
        chosen=chosen,
        rejected=rejected,
        relation=relation[confident],
        margin=np.abs(difference)[confident],
        margin_sd=diff_sd[confident],
        p_better=p_better[confident],
        co_raters=co_raters[confident],
    )
    if len(pairs) == 0:
        return pairs
    # At most max_pairs_per_item pairs per version, the most confident first (ties: by pair).
    priority = np.lexsort((np.minimum(chosen, rejected), -pairs.p_better)).argsort()
    # A version's rank counts its pairs as chosen and as rejected together.
    ends = np.concatenate([pairs.chosen, pairs.rejected])
    rank_any = _rank_within(ends, np.concatenate([priority, priority]))
    keep = np.maximum(rank_any[: len(pairs)], rank_any[len(pairs) :]) < max_pairs_per_item
    kept = pairs.take(np.flatnonzero(keep))
    final = np.lexsort((kept.rejected, kept.chosen))
    return kept.take(final)


# --------------------------------------------------------------------------- unpaired labels
@dataclass(frozen=True)
class UnpairedLabels:
    item: np.ndarray  # node indices that get a row
    label: np.ndarray  # bool: confidently above the reference
    p_above: np.ndarray  # P(θ > reference)
    reference: np.ndarray  # the reference each was compared with


def unpaired_labels(
    estimate: RewardEstimate,
    *,
    eligible: np.ndarray,
    category: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
) -> UnpairedLabels:
    """KTO labels (module docstring, 3)."""
    items = np.flatnonzero(eligible)
    if items.size == 0:
        empty = np.zeros(0)
        return UnpairedLabels(items, empty.astype(bool), empty, empty)
    mean, sd = estimate.mean[items], estimate.sd[items]
    codes = np.asarray(category)[items]
    overall = float(np.median(mean))
    reference = np.full(items.size, overall)
    for code in np.unique(codes):
        members = codes == code
        if members.sum() >= MIN_CATEGORY_FOR_OWN_REFERENCE:
            reference[members] = float(np.median(mean[members]))
    p_above = ndtr((mean - reference) / np.maximum(sd, 1e-12))
    decided = (p_above >= confidence) | (p_above <= 1.0 - confidence)
    return UnpairedLabels(
        item=items[decided],
        label=p_above[decided] >= confidence,
        p_above=p_above[decided],
        reference=reference[decided],
    )


# --------------------------------------------------------------------------- prompts and rows
@dataclass(frozen=True)
class VersionText:
    """What the rows say about one version (loaded per batch by the caller)."""

    version_id: int
    number: int
    category: str
    title: str
    summary: str
    description: str  # the manifest's description ("" if none)
    completion: str  # the bundle: canonical JSON of manifest and files
    fork_request: str | None = None  # a fork's first version: the words that asked for it
    changelog: str = ""  # a revision: what changed
    parent_title: str | None = None  # the parent version's sub-agent, if it is exported
    parent_summary: str | None = None
    is_fork: bool = False


def version_prompt(text: VersionText) -> str:
    """The request that produced this version: a root's description, a fork's request with
    what it was forked from, or a revision's change note."""
    if text.number > 1:
        change = text.changelog.strip() or "(no change note)"
        return (
            f"Revise this {text.category} mini-app, “{text.title}”: {text.summary}\n"
            f"Change requested: {change}"
        )
    if text.is_fork:
        request = (text.fork_request or "").strip() or "(no request text)"
        if text.parent_title is None:
            return f"Fork a {text.category} mini-app.\nRequest: {request}"
        return (
            f"Fork this {text.category} mini-app, “{text.parent_title}”: "
            f"{text.parent_summary or ''}\nRequest: {request}"
        )
    what = text.description.strip() or text.summary.strip()
    return f"Write a {text.category} mini-app, “{text.title}”: {what}"


def prompt_versions(forest: Forest, chosen: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """For each pair, the node whose own prompt the pair carries (module docstring, 5): the
    descendant when one side descends from the other, else the nearest common ancestor, else
    (two lineages) the chosen side. Ancestry is read from the preorder ranges; only cousins
    climb, one vectorized step per level between them and their common ancestor."""
    chosen = np.asarray(chosen, dtype=np.int64)
    rejected = np.asarray(rejected, dtype=np.int64)
    first, end = forest.preorder, forest.subtree_end
    parent = forest.parent.astype(np.int64)

    def contains(top: np.ndarray, node: np.ndarray) -> np.ndarray:
        return (first[top] <= first[node]) & (first[node] < end[top])

    out = chosen.copy()
    related = np.flatnonzero(forest.root[chosen] == forest.root[rejected])
    a, b = chosen[related], rejected[related]
    ancestor = np.where(contains(b, a), b, a)
    climbing = np.flatnonzero(~contains(ancestor, b))
    while climbing.size:
        ancestor[climbing] = parent[ancestor[climbing]]
        climbing = climbing[~contains(ancestor[climbing], b[climbing])]
    out[related] = np.where(ancestor == a, b, np.where(ancestor == b, a, ancestor))
    return out


def user_turn(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def assistant_turn(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def openai_preference_line(prompt: str, chosen: str, rejected: str) -> dict:
    """One line of OpenAI's preference (DPO) fine-tuning JSONL."""
    return {
        "input": {"messages": user_turn(prompt)},
        "preferred_output": assistant_turn(chosen),
        "non_preferred_output": assistant_turn(rejected),
    }
