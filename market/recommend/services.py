"""What the main agent shows a user: relevant candidates, a Thompson slate, one logged exposure
per slot (``POST /api/v1/recommendations``).

1. Eligible: public, active sub-agents whose latest version exists and is not yanked. Private,
   unlisted, yanked and quarantined ones are never shown, whoever asks.
2. Relevant: the request's ``category`` (exact) and, when ``context`` text has words, the
   sub-agents the catalog's one relevance engine finds for it (``market.catalog.search``:
   any language, words and their English glosses, character n-grams), which may fit it.
   Context left without any word (stop words only) is ignored.
3. Not already had: sub-agents the user installed (active) or wrote are left out, unless fewer
   than k others remain; then they compete like the rest.
4. Pool, capped so a call costs about the same in a catalog of a million: the
   ``ESTABLISHED_POOL`` established (not young) relevant ones with the best display score,
   plus the ``YOUNG_POOL`` newest young ones (a fork needs exposure most right after it is
   published). A sub-agent the ranking has not scored yet is young, with the prior the
   ranking's lineage model gives it (its nearest scored ancestor plus one fork step per
   generation; ``_lineage_priors``).
   With context text, only the ``TEXT_TOP`` of those that the engine ranks best stay, so
   one common word shared with the context does not make a sub-agent a candidate when
   better matches exist.
   Then candidates that almost surely lose every draw are dropped: one whose upper bound
   E + 4 sd is below the k-th best lower bound E − 4 sd of the candidates that could fill the
   same slots (the young ones, for a young candidate; everyone, for the rest). At most k − 1
   are placed before any slot, so one of those k always remains, and a dropped one would win
   a draw with probability below 10⁻⁴. The logged distributions are over the kept pool.
   For a person the last full ranking run learned a taste of (``rater_taste``), each
   candidate's E[θ] gets that person's taste for it added (``taste_terms``: p_u · q_v,
   ``evolution.personal``), before pruning: the slate is drawn from what this person is
   expected to think, the sd staying the ranking's.
5. Policy: ``evolution.explore.choose_slate`` (Thompson sampling from the posterior with its sd
   halved, ``SD_SCALE``, and a 15% young share),
   seeded by the request's ``seed`` or a fresh random one, which is logged, so every decision
   can be replayed from the same pool and scores.
6. Log: one ``exposure`` row per slot with its propensity, whether the slot was reserved for
   young forks, the policy version, the slot's whole distribution (sub-agent id → probability,
   nonzero entries, summing to one) and the request context, and on the first slot what the
   policy believed of each candidate of the pool (``pool_belief``, for replaying another
   young share off-policy: ``market.recommend.evaluation``); all in the caller's
   transaction.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import not_, or_, true
from sqlmodel import Session, select

from evolution.explore import POLICY_VERSION, SD_SCALE, choose_slate
from market.catalog.models import Install, SubAgent, Version
from market.catalog.queries import search_terms
from market.catalog.search import TextMatcher, relevant_ids
from market.identity.access import publicly_listed_clause
from market.platform.time import utcnow
from market.ranking.models import RankingRun, RaterTaste, SubAgentScore, SubAgentTaste
from market.recommend.models import Exposure

ESTABLISHED_POOL = 200
YOUNG_POOL = 100
SCORE_WALK = 10_000
TEXT_TOP = 100
PRUNE_Z = 4.0
YOUNG_SHARE = 0.15
N_DRAWS = 2000
MAX_SEED = 2**63 - 1
# A sub-agent without a score before any ranking run: the ranking's default root prior.
UNSCORED_QUALITY, UNSCORED_SD = 0.0, 1.0
CONTEXT_MATCHES = 2000


# Snowball's English stop words: exactly the ones PostgreSQL's 'english' text search drops, so
# that "I go to bed too late" matches on go, bed and late on SQLite (which keeps every word)
# as on PostgreSQL.
STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what
    which who whom this that these those am is are was were be been being have has had
    having do does did doing a an the and but if or because as until while of at by for
    with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how
    all any both each few more most other some such no nor not only own same so than too
    very s t can will just don should now
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def context_terms(context: str | None) -> list[str]:
    """The words of ``context`` worth matching: search words minus stop words."""
    if not context:
        return []
    return [term for term in search_terms(context) if term not in STOP_WORDS]


@dataclass(frozen=True)
class Candidate:
    subagent_id: int
    version_id: int
    title: str
    summary: str
    category: str
    quality: float
    quality_sd: float
    young: bool


@dataclass(frozen=True)
class Shown:
    exposure_id: uuid.UUID
    slot: int
    candidate: Candidate
    propensity: float
    young_slot: bool


@dataclass(frozen=True)
class Decision:
    decision_id: uuid.UUID
    policy_version: str
    user_id: int
    seed: int
    candidates: int  # size of the pool the policy chose from
    personal: bool = False  # the person's taste moved the candidates' scores
    slots: list[Shown] = field(default_factory=list)


_CANDIDATE_COLUMNS = (
    SubAgent.id,
    SubAgent.latest_version_id,
    SubAgent.title,
    SubAgent.summary,
    SubAgent.category,
    SubAgent.ancestry,
    SubAgentScore.quality,
    SubAgentScore.quality_sd,
    SubAgentScore.young,
)


def _candidate(row, prior: tuple[float, float] | None) -> Candidate:
    """``prior``: E[θ] and sd(θ) for a sub-agent without a score row (see ``_lineage_priors``)."""
    scored = row.quality is not None
    quality, quality_sd = (row.quality, row.quality_sd) if scored else prior
    return Candidate(
        subagent_id=row.id,
        version_id=row.latest_version_id,
        title=row.title,
        summary=row.summary,
        category=row.category,
        quality=float(quality),
        quality_sd=float(quality_sd),
        young=bool(row.young) if scored else True,
    )


def _ancestors(ancestry: str) -> list[int]:
    return [int(i) for i in ancestry.split("/") if i]


def _lineage_priors(session: Session, rows: list) -> dict[int, tuple[float, float]]:
    """E[θ] and sd(θ) of the sub-agents among ``rows`` that the last ranking run did not see
    (published since): the ranking's lineage model without evidence of their own. From the
    nearest scored ancestor g generations up, θ ~ N(E[θ_anc] + g·δ̄, sd(θ_anc)² + g·τ²), so a
    new fork of a loved sub-agent starts near it; with no scored ancestor, from the root prior
    N(μ0, σ0²). δ̄, τ², μ0, σ0² are the last run's; before any run, N(0, 1)."""
    unscored = [row for row in rows if row.quality is None]
    if not unscored:
        return {}
    run = session.exec(
        select(RankingRun.parameters)
        .where(RankingRun.mode != "skipped")
        .order_by(RankingRun.id.desc())
        .limit(1)
    ).first()
    prior = (run or {}).get("prior")
    if not prior:
        return {row.id: (UNSCORED_QUALITY, UNSCORED_SD) for row in unscored}
    ancestor_ids = {a for row in unscored for a in _ancestors(row.ancestry)}
    scores = {}
    if ancestor_ids:
        scores = {
            s.subagent_id: (s.quality, s.quality_sd)
            for s in session.exec(
                select(
                    SubAgentScore.subagent_id, SubAgentScore.quality, SubAgentScore.quality_sd
                ).where(SubAgentScore.subagent_id.in_(ancestor_ids))
            )
        }
    priors = {}
    for row in unscored:
        lineage = _ancestors(row.ancestry)  # root first
        mean, var, steps = prior["mu0"], prior["sigma0_sq"], len(lineage)
        for generations, ancestor in enumerate(reversed(lineage), start=1):
            if ancestor in scores:
                quality, quality_sd = scores[ancestor]
                mean, var, steps = quality, quality_sd**2, generations
                break
        mean += steps * prior["drift_mean"]
        var += steps * prior["drift_var"]
        priors[row.id] = (mean, var**0.5)
    return priors


def _eligible(user_id: int, category: str | None, include_owned: bool) -> list:
    """Clauses over subagent joined to its latest version (``Version``)."""
    clauses = [publicly_listed_clause(), Version.status == "active"]
    if category:
        clauses.append(SubAgent.category == category)
    if not include_owned:
        installed = select(Install.subagent_id).where(
            Install.user_id == user_id, Install.active.is_(True)
        )
        clauses.append(not_(or_(SubAgent.author_id == user_id, SubAgent.id.in_(installed))))
    return clauses


def _with_latest_version(statement):
    return statement.join(Version, Version.id == SubAgent.latest_version_id)


def _is_postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _established(session: Session, clauses: list) -> list:
    """The ESTABLISHED_POOL relevant established sub-agents with the best display score."""
    exact = (
        _with_latest_version(select(*_CANDIDATE_COLUMNS))
        .join(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
        .where(*clauses, SubAgentScore.young.is_(False))
        .order_by(SubAgentScore.display.desc(), SubAgentScore.subagent_id.desc())
        .limit(ESTABLISHED_POOL)
    )
    if not _is_postgres(session):
        return list(session.exec(exact))
    # PostgreSQL plans the exact query as "every relevant row, hashed, sorted": 100 ms for a
    # category of 10,000 at 100k sub-agents, and linear in the catalog. Walking the display
    # index instead and checking each sub-agent's relevance by primary key (a LATERAL the
    # OFFSET 0 keeps the planner from flattening) finds them in ~10 ms whatever the catalog's
    # size. The walk stops after SCORE_WALK scores; if fewer than ESTABLISHED_POOL were
    # relevant among those, the relevant set is sparse and the exact query is cheap.
    top = (
        select(
            SubAgentScore.subagent_id,
            SubAgentScore.display,
            SubAgentScore.quality,
            SubAgentScore.quality_sd,
            SubAgentScore.young,
        )
        .where(SubAgentScore.young.is_(False))
        .order_by(SubAgentScore.display.desc(), SubAgentScore.subagent_id.desc())
        .limit(SCORE_WALK)
        .subquery("top")
    )
    listing = (
        _with_latest_version(
            select(
                SubAgent.id,
                SubAgent.latest_version_id,
                SubAgent.title,
                SubAgent.summary,
                SubAgent.category,
                SubAgent.ancestry,
            )
        )
        .where(SubAgent.id == top.c.subagent_id, *clauses)
        .offset(0)
        .lateral("listing")
    )
    walk = (
        select(*listing.c, top.c.quality, top.c.quality_sd, top.c.young)
        .select_from(top.join(listing, true()))
        .order_by(top.c.display.desc(), top.c.subagent_id.desc())
        .limit(ESTABLISHED_POOL)
    )
    rows = list(session.exec(walk))
    return rows if len(rows) == ESTABLISHED_POOL else list(session.exec(exact))


def candidate_pool(
    session: Session,
    user_id: int,
    *,
    category: str | None,
    include_owned: bool,
    matched: list[int] | None = None,
) -> list[Candidate]:
    """The relevant candidates (see the module docstring, steps 1-4, without the pruning),
    sorted by sub-agent id so a seeded decision does not depend on the database's row order.
    ``matched``: the sub-agents the context matched, best first (None: no context)."""
    clauses = _eligible(user_id, category, include_owned)
    if matched is not None:
        clauses.append(SubAgent.id.in_(matched))
    young = (
        _with_latest_version(select(*_CANDIDATE_COLUMNS))
        .outerjoin(SubAgentScore, SubAgentScore.subagent_id == SubAgent.id)
        .where(
            *clauses,
            or_(SubAgentScore.subagent_id.is_(None), SubAgentScore.young.is_(True)),
        )
        .order_by(SubAgent.created_at.desc(), SubAgent.id.desc())
        .limit(YOUNG_POOL)
    )
    rows = [*_established(session, clauses), *session.exec(young)]
    priors = _lineage_priors(session, rows)
    pool = [_candidate(row, priors.get(row.id)) for row in rows]
    if matched is not None and len(pool) > TEXT_TOP:
        rank = {subagent_id: position for position, subagent_id in enumerate(matched)}
        best = set(sorted((c.subagent_id for c in pool), key=rank.__getitem__)[:TEXT_TOP])
        pool = [c for c in pool if c.subagent_id in best]
    return sorted(pool, key=lambda c: c.subagent_id)


def prune_sure_losers(
    mean: np.ndarray, sd: np.ndarray, young: np.ndarray, k: int, z: float = PRUNE_Z
) -> np.ndarray:
    """Mask of the candidates worth drawing for (module docstring, step 4)."""
    upper, lower = mean + z * sd, mean - z * sd

    def kth_best_lower(members: np.ndarray) -> float:
        if members.sum() <= k:
            return -np.inf
        return float(np.sort(lower[members])[-k])

    floor_all = kth_best_lower(np.ones(mean.size, dtype=bool))
    floor_young = kth_best_lower(young)
    return upper >= np.where(young, floor_young, floor_all)


def recommend(
    session: Session,
    *,
    user_id: int,
    k: int,
    category: str | None = None,
    context: str | None = None,
    seed: int | None = None,
    client_id: int | None = None,
    now: datetime | None = None,
    text_matches: TextMatcher | None = None,
) -> Decision:
    """Choose and log one slate for ``user_id`` (who must exist; the caller checks). Adds the
    exposure rows to the session; the caller commits once."""
    matched = None
    if context_terms(context):
        if text_matches is None:
            raise ValueError("a context is matched by the catalog's engine: pass text_matches")
        matched = relevant_ids(text_matches, context, category=category, limit=CONTEXT_MATCHES)
    # A fresh seed fits in 53 bits, so JavaScript clients can send it back unchanged.
    seed = secrets.randbits(53) if seed is None else seed
    decision_id = uuid.uuid4()

    def pool_of(include_owned: bool) -> list[Candidate]:
        return candidate_pool(
            session,
            user_id,
            category=category,
            include_owned=include_owned,
            matched=matched,
        )

    include_owned = False
    pool = pool_of(include_owned)
    if len(pool) < k:
        include_owned = True
        pool = pool_of(include_owned)
    mean = np.array([c.quality for c in pool], dtype=np.float64)
    sd = np.array([c.quality_sd for c in pool], dtype=np.float64)
    young = np.array([c.young for c in pool], dtype=bool)
    taste = taste_terms(session, user_id, [c.subagent_id for c in pool])
    if taste is not None:
        mean = mean + taste  # what this person is expected to think of each, not everyone
    kept = prune_sure_losers(mean, sd, young, k)
    pool = [c for c, keep in zip(pool, kept, strict=True) if keep]
    mean, sd, young = mean[kept], sd[kept], young[kept]
    decision = Decision(
        decision_id=decision_id,
        policy_version=POLICY_VERSION,
        user_id=user_id,
        seed=seed,
        candidates=len(pool),
        personal=taste is not None,
    )
    if not pool:
        return decision
    slate = choose_slate(
        np.arange(len(pool)),
        mean,
        sd,
        k=k,
        rng=np.random.default_rng(seed),
        young_mask=young,
        young_share=YOUNG_SHARE,
        n_draws=N_DRAWS,
    )
    now = now or utcnow()
    logged_context = {
        "category": category,
        "context": context,
        "k": k,
        "seed": seed,
        "young_share": YOUNG_SHARE,
        "sd_scale": SD_SCALE,
        "n_draws": N_DRAWS,
        # POLICY_VERSION names the slate policy; what chose and pruned its pool is here, so
        # a decision can be replayed even after these settings change.
        "pool": {
            "established": ESTABLISHED_POOL,
            "young": YOUNG_POOL,
            "text_top": TEXT_TOP,
            "prune_z": PRUNE_Z,
            "matching": "text_index" if matched is not None else None,
        },
        "candidates": len(pool),
        "personal": taste is not None,
        "young_candidates": int(young.sum()),
        "owned_included": include_owned,
    }
    ids = [c.subagent_id for c in pool]
    pool_belief = {
        str(i): [float(m), float(v), bool(y)]
        for i, m, v, y in zip(ids, mean.tolist(), sd.tolist(), young.tolist(), strict=True)
    }
    for slot, item in enumerate(slate.items.tolist()):
        candidate = pool[item]
        distribution = slate.slot_distribution[slot]
        shown = Shown(
            exposure_id=uuid.uuid4(),
            slot=slot,
            candidate=candidate,
            propensity=float(slate.propensity[slot]),
            young_slot=bool(slate.young_slot[slot]),
        )
        decision.slots.append(shown)
        session.add(
            Exposure(
                id=shown.exposure_id,
                decision_id=decision_id,
                slot=slot,
                user_id=user_id,
                subagent_id=candidate.subagent_id,
                version_id=candidate.version_id,
                propensity=shown.propensity,
                young_slot=shown.young_slot,
                policy_version=slate.policy_version,
                context=logged_context,
                slot_distribution={
                    str(ids[i]): float(p) for i, p in enumerate(distribution.tolist()) if p > 0
                },
                pool_belief=pool_belief if slot == 0 else None,
                client_id=client_id,
                created_at=now,
            )
        )
    return decision


def taste_terms(session: Session, user_id: int, subagent_ids: list[int]) -> np.ndarray | None:
    """The person's taste for each candidate, p_u · q_v on the rating scale (0 for one the
    last full ranking run learned nothing about), or None when their scores are everyone's:
    the run learned no taste of them (too few ratings, or no taste found in the catalog), or
    none of its factors fits these candidates. Factors fit when both are lists of finite
    numbers of one length; a row left from a fit of another rank, or damaged, is read as no
    taste rather than failing the request.

    One statement reads the person's factors and the candidates': a full ranking run replaces
    both tables in one transaction, and two reads could straddle its commit (on PostgreSQL),
    pairing the old p_u with the new q_v, a taste nobody has."""
    if not subagent_ids:
        return None
    rows = session.execute(
        select(
            RaterTaste.factors.label("person"),
            SubAgentTaste.subagent_id,
            SubAgentTaste.factors.label("item"),
        )
        .select_from(RaterTaste)
        .outerjoin(SubAgentTaste, SubAgentTaste.subagent_id.in_(subagent_ids))
        .where(RaterTaste.user_id == user_id)
    ).all()
    person = _factor_vector(rows[0].person) if rows else None
    if person is None:
        return None
    suits = {
        row.subagent_id: _factor_vector(row.item) for row in rows if row.subagent_id is not None
    }
    with np.errstate(over="ignore", invalid="ignore"):  # huge factors: refused just below
        fitting = {
            subagent_id: float(np.dot(person, item))
            for subagent_id, item in suits.items()
            if item is not None and item.size == person.size
        }
    terms = np.array([fitting.get(i, 0.0) for i in subagent_ids])
    if not fitting or not np.all(np.isfinite(terms)):
        return None
    return terms


def _factor_vector(stored) -> np.ndarray | None:
    """A stored taste (a JSON list) as a vector, or None unless it is a non-empty list of
    finite numbers."""
    if not isinstance(stored, list) or not stored:
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in stored):
        return None
    vector = np.asarray(stored, dtype=np.float64)
    return vector if np.all(np.isfinite(vector)) else None


def is_exposure_of(
    session: Session, exposure_id: uuid.UUID, user_id: int, subagent_id: int
) -> bool:
    """Whether this exposure showed this sub-agent to this user (feedback must cite its own)."""
    exposure = session.get(Exposure, exposure_id)
    return (
        exposure is not None and exposure.user_id == user_id and exposure.subagent_id == subagent_id
    )
