"""Off-policy evaluation in the simulated community: estimates from one policy's logs against
the candidates' true values.

Per seed: the community of bench/sim_world.py grows under Sprig's policy (bench/sim_policies.py:
rater debiasing, lineage posterior, Thompson slates, forking) for the warm-up sessions; then
the ranking is frozen and the evaluation sessions are played twice over:

* logged: the logging policy (Thompson slates with Sprig's young share, 0.15) shows each
  session a slate; each slot is one logged row with the sub-agent shown, its propensity and
  the reward that followed. The reward is the world's use draw for that slot (the user uses
  the sub-agent shown, probability σ(utility), the simulator's own use rule, counted per slot).
* true: each candidate policy shows the same sessions (same users, same utility noise) its own
  slates; its true value is the mean use probability σ(utility) over its slots.

Candidates: Thompson slates with young shares 0.05, 0.15 (the logging policy itself), 0.30 and
0.50, at the exposure policy's spread (``evolution.explore.SD_SCALE``, 0.5: draws from the
posterior with its sd halved); "sd-X": the logging policy's young share with the posterior's sd
scaled by X = 0.25 or 1 (the exact posterior, the policy before); "tempered-α" for α = 0.5 and 2
(each slot's logging distribution to the power α, renormalized: what ``sprig ope`` evaluates on
production logs, whose rows do not hold what a young-share candidate needs); "greedy" (the k
highest posterior means, no exploration) and "uniform" (uniformly random slates, much of which
the log never shows: overlap fails).

Propensities need Monte Carlo: a Thompson slot's distribution is the share of posterior draws
each candidate wins (as ``evolution.explore._win_frequency`` computes it in production), here
from ``--mc-draws`` draws per (slot, sub-agents already placed), shared by every Thompson
candidate of one spread (only the young-slot mixing differs between them). The logging policy
samples its slots from those estimated distributions, so its logged propensities are exact; a
candidate's true value comes from its real Thompson slates, so the Monte Carlo error of its
distributions is part of the measured bias.

Estimators (evolution/ope.py), one row per slot: IPS, SNIPS and DR (reward model: each
sub-agent's mean logged reward, shrunk toward the log's mean). A slot's target probability is
the candidate's, given the sub-agents the logging policy placed in earlier slots: where the
candidate would have placed others earlier, this per-slot estimate is biased. The slate-level
rows (one row per session, propensity = product of the slot propensities, reward = the mean of
the slate's rewards) are exact: ips/slate and snips/slate, at the price of larger weights.

Figures per candidate × estimator, over seeds: mean estimate, mean true value (each candidate
run ``--truth-runs`` times on the evaluation sessions, averaged), bias (mean of estimate −
truth), RMSE, the mean standard error (cluster-robust: a session's slots are one group), the
share of seeds whose 95% interval covers the truth, mean ESS, mean clipped rows and the seeds
where the estimate is undefined (SNIPS when no logged row has weight). Then "tuning": the young
share, and the spread, each estimator would pick (highest mean estimate) against the truly best
one, and per seed how often the estimator's pick is the seed's truly best. Both are judged on
what the evaluation sessions use under a frozen ranking, so a narrower spread always looks at
least as good here: what exploring teaches the ranking for later is what
``bench/evolution_sim.py``'s regret measures.

    python bench/ope.py [--quick] [--seeds N] [--weight-cap X] [--mc-draws N]

The last line is JSON with every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sim_policies import SprigPolicy  # noqa: E402
from bench.sim_world import World, WorldParams, draw_world  # noqa: E402
from evolution.explore import SD_SCALE, thompson_slates, young_slot_probability  # noqa: E402
from evolution.ope import (  # noqa: E402
    DEFAULT_WEIGHT_CAP,
    Distributions,
    LoggedRows,
    evaluate,
    ips,
    mean_reward_model,
    snips,
    unsupported_mass,
)

LOGGING_SHARE = 0.15
YOUNG_SHARES = (0.05, 0.15, 0.30, 0.50)
LOGGING = f"thompson-{LOGGING_SHARE:.2f}"
# Spreads other than the policy's own (SD_SCALE), at the logging policy's young share.
SD_SCALES = (0.25, 1.0)
TEMPERED = (0.5, 2.0)
CANDIDATES = (
    *(f"thompson-{s:.2f}" for s in YOUNG_SHARES),
    *(f"sd-{x:g}" for x in SD_SCALES),
    *(f"tempered-{a:g}" for a in TEMPERED),
    "greedy",
    "uniform",
)
ESTIMATORS = ("ips", "snips", "dr", "ips/slate", "snips/slate")


@dataclass(frozen=True)
class Frozen:
    """The world after warm-up and the ranking the policies use from then on."""

    world: World
    mean: np.ndarray
    sd: np.ndarray
    young: np.ndarray
    sessions: np.ndarray  # the evaluation sessions' indices into the world's draws


def warm_up(params: WorldParams, seed: int, eval_sessions: int) -> Frozen:
    draws = draw_world(params, seed)
    world = World(params, draws)
    policy = SprigPolicy(seed, params.young_share, params)
    warm = params.sessions - eval_sessions
    boundaries = np.r_[0, draws.fork_at[draws.fork_at < warm], warm]
    for b in range(boundaries.size - 1):
        start, stop = int(boundaries[b]), int(boundaries[b + 1])
        if b > 0:
            world.fork(policy.pick_parent(), start)
        policy.refit(world.log)
        if stop > start:
            world.play(start, policy.choose(stop - start, params.slate))
    policy.refit(world.log)
    assert policy.scores is not None
    n = world.n
    return Frozen(
        world=world,
        mean=policy.scores.mean[:n],
        sd=policy.scores.sd[:n],
        young=np.asarray(policy.young[:n], dtype=bool),
        sessions=np.arange(warm, params.sessions),
    )


def use_probability(frozen: Frozen, slates: np.ndarray) -> np.ndarray:
    """σ(utility) of each (session, slot): the utility and use rule of ``World.play``."""
    world, d = frozen.world, frozen.world.d
    user = d.session_user[frozen.sessions][:, None]
    utility = (
        d.discrimination[user] * (world.quality[slates] + d.taste[user, world.category[slates]])
        + d.leniency[user]
        + d.noise[frozen.sessions][:, : slates.shape[1]]
    )
    return 1.0 / (1.0 + np.exp(-utility))


def thompson_parameters(name: str) -> tuple[float, float] | None:
    """(young share, sd scale) of a Thompson candidate; None for the others."""
    if name.startswith("thompson-"):
        return float(name.removeprefix("thompson-")), SD_SCALE
    if name.startswith("sd-"):
        return LOGGING_SHARE, float(name.removeprefix("sd-"))
    return None


class SlotWins:
    """Monte Carlo win shares of a frozen posterior drawn at one spread (``sd_scale``): per set
    of sub-agents already placed, the share of draws each remaining one wins among all and among
    the young (among all when no young one remains). One draw matrix serves every set (placed
    ones struck out)."""

    def __init__(
        self, frozen: Frozen, n_draws: int, rng: np.random.Generator, sd_scale: float
    ) -> None:
        noise = rng.standard_normal((n_draws, frozen.mean.size))
        self.draws = frozen.mean + sd_scale * frozen.sd * noise
        self.young = frozen.young
        self.cache: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def shares(self, placed: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        if placed not in self.cache:
            draws = self.draws.copy()
            draws[:, list(placed)] = -np.inf
            everyone = self._win_share(draws)
            young_left = self.young.copy()
            young_left[list(placed)] = False
            among_young = (
                self._win_share(np.where(young_left[None, :], draws, -np.inf))
                if young_left.any()
                else everyone
            )
            self.cache[placed] = (everyone, among_young)
        return self.cache[placed]

    @staticmethod
    def _win_share(draws: np.ndarray) -> np.ndarray:
        n_draws, n = draws.shape
        return np.bincount(np.argmax(draws, axis=1), minlength=n) / n_draws


def slot_wins(frozen: Frozen, n_draws: int, rng: np.random.Generator) -> dict[float, SlotWins]:
    """The Monte Carlo win shares at every spread a candidate draws at."""
    return {scale: SlotWins(frozen, n_draws, rng, scale) for scale in (SD_SCALE, *SD_SCALES)}


def slot_distribution(
    name: str, frozen: Frozen, wins: dict[float, SlotWins], placed: tuple[int, ...], k: int
) -> np.ndarray:
    """The candidate's distribution over sub-agents for the next slot, given ``placed``."""
    n = frozen.mean.size
    left = np.ones(n, dtype=bool)
    left[list(placed)] = False
    if name == "greedy":
        best = np.flatnonzero(left)[np.argmax(frozen.mean[left])]
        return np.eye(n)[best]
    if name == "uniform":
        return left / left.sum()
    if name.startswith("tempered-"):
        # What ``sprig ope`` can evaluate from production logs: the logged distribution to
        # the power α, over the same support.
        logged = slot_distribution(LOGGING, frozen, wins, placed, k) ** float(name[9:])
        return logged / logged.sum()
    share, sd_scale = thompson_parameters(name)
    # Young slots are the last ones; for k = 2 and shares ≤ 0.5 a slot's chance of being young
    # does not depend on what was placed before it, so the mixture is exact.
    p_young = young_slot_probability(k, share)[len(placed)]
    everyone, among_young = wins[sd_scale].shares(placed)
    return (1.0 - p_young) * everyone + p_young * among_young


def sample_slates(
    name: str, frozen: Frozen, wins: dict[float, SlotWins], k: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Slates (sessions × k) drawn slot by slot from ``slot_distribution``, and each slot's
    probability."""
    n_sessions = frozen.sessions.size
    slates = np.zeros((n_sessions, k), dtype=np.int64)
    propensity = np.zeros((n_sessions, k))
    for slot in range(k):
        histories = [tuple(row) for row in slates[:, :slot].tolist()]
        for history in set(histories):
            rows = np.flatnonzero([h == history for h in histories])
            p = slot_distribution(name, frozen, wins, history, k)
            picks = rng.choice(p.size, size=rows.size, p=p)
            slates[rows, slot] = picks
            propensity[rows, slot] = p[picks]
    return slates, propensity


def true_slates(
    name: str, frozen: Frozen, wins: dict[float, SlotWins], k: int, rng: np.random.Generator
) -> np.ndarray:
    """The candidate's own slates: Thompson candidates by real posterior draws, the others
    from their slot distributions."""
    thompson = thompson_parameters(name)
    if thompson is None:
        return sample_slates(name, frozen, wins, k, rng)[0]
    share, sd_scale = thompson
    slates, _ = thompson_slates(
        frozen.mean,
        frozen.sd,
        n_slates=frozen.sessions.size,
        k=k,
        rng=rng,
        young_mask=frozen.young,
        young_share=share,
        sd_scale=sd_scale,
    )
    return slates


def run_seed(params: WorldParams, seed: int, eval_sessions: int, args) -> dict:
    frozen = warm_up(params, seed, eval_sessions)
    k, n = params.slate, frozen.mean.size
    rng = np.random.default_rng([seed, 31])
    wins = slot_wins(frozen, args.mc_draws, rng)
    slates, propensity = sample_slates(LOGGING, frozen, wins, k, rng)
    used = frozen.world.d.use_u[frozen.sessions][:, :k] < use_probability(frozen, slates)
    reward = used.astype(np.float64).ravel()
    action = slates.ravel()
    model = mean_reward_model(action, reward, n)

    def per_row(name: str) -> np.ndarray:
        """(slots, sub-agents): the policy's distribution at each logged slot, given the
        sub-agents logged in the slate's earlier slots."""
        matrix = np.zeros((slates.shape[0], k, n))
        for slot in range(k):
            histories = [tuple(row) for row in slates[:, :slot].tolist()]
            for history in set(histories):
                rows = np.flatnonzero([h == history for h in histories])
                matrix[rows, slot] = slot_distribution(name, frozen, wins, history, k)
        return matrix.reshape(-1, n)

    logging = Distributions.dense(per_row(LOGGING))
    out: dict = {
        "items": n,
        "young": int(frozen.young.sum()),
        "observed_mean": float(reward.mean()),
        "candidates": {},
    }
    for name in CANDIDATES:
        target = per_row(name)
        target_p = target[np.arange(action.size), action]
        session_of_row = np.repeat(np.arange(slates.shape[0]), k)
        slot_log = LoggedRows(propensity.ravel(), reward, target_p, group=session_of_row)
        estimates = evaluate(
            slot_log,
            predicted_logged=model[action],
            predicted_under_target=Distributions.dense(target).expected(model, action.size),
            weight_cap=args.weight_cap,
        )
        slate_log = LoggedRows(
            propensity.prod(axis=1),
            reward.reshape(-1, k).mean(axis=1),
            target_p.reshape(-1, k).prod(axis=1),
        )
        estimates["ips/slate"] = ips(slate_log, weight_cap=args.weight_cap)
        estimates["snips/slate"] = snips(slate_log, weight_cap=args.weight_cap)
        truth_rng = np.random.default_rng([seed, 37, *map(ord, name)])
        truth = float(
            np.mean(
                [
                    use_probability(frozen, true_slates(name, frozen, wins, k, truth_rng)).mean()
                    for _ in range(args.truth_runs)
                ]
            )
        )
        out["candidates"][name] = {
            "true": truth,
            "unsupported": unsupported_mass(Distributions.dense(target), logging, action.size),
            **{e: estimate.as_dict() for e, estimate in estimates.items()},
        }
    return out


def summarize(runs: list[dict]) -> dict:
    summary: dict = {}
    for name in CANDIDATES:
        truth = np.array([run["candidates"][name]["true"] for run in runs])
        summary[name] = {
            "true": float(truth.mean()),
            "unsupported": float(np.mean([run["candidates"][name]["unsupported"] for run in runs])),
        }
        for estimator in ESTIMATORS:
            every = [run["candidates"][name][estimator] for run in runs]
            # SNIPS has no value on a seed where the candidate never takes a logged action.
            defined = [np.isfinite(row["value"]) for row in every]
            rows = [row for row, ok in zip(every, defined, strict=True) if ok]
            true = truth[defined]
            value = np.array([row["value"] for row in rows])
            error = value - true
            summary[name][estimator] = {
                "mean": float(np.mean(value)) if rows else float("nan"),
                "bias": float(np.mean(error)) if rows else float("nan"),
                "rmse": float(np.sqrt(np.mean(error**2))) if rows else float("nan"),
                "mean_se": float(np.mean([row["standard_error"] for row in rows]))
                if rows
                else float("nan"),
                "covered": float(
                    np.mean(
                        [
                            row["ci_low"] <= t <= row["ci_high"]
                            for row, t in zip(rows, true, strict=True)
                        ]
                    )
                )
                if rows
                else float("nan"),
                "ess": float(np.mean([row["effective_sample_size"] for row in every])),
                "clipped": float(np.mean([row["clipped"] for row in every])),
                "undefined": len(every) - len(rows),
                "rows": every[0]["rows"],
            }
    return summary


def tuning(runs: list[dict], summary: dict, shares: list[str]) -> dict:
    """Which of the candidates ``shares`` each estimator would pick against the truly best
    one."""
    truly_best = max(shares, key=lambda c: summary[c]["true"])
    best_per_seed = [max(shares, key=lambda c: run["candidates"][c]["true"]) for run in runs]
    out: dict = {"truly_best": truly_best, "estimators": {}}
    for estimator in ESTIMATORS:
        picked = max(shares, key=lambda c: summary[c][estimator]["mean"])
        per_seed = [
            max(shares, key=lambda c: run["candidates"][c][estimator]["value"]) for run in runs
        ]
        out["estimators"][estimator] = {
            "picked": picked,
            "true_value_of_pick": summary[picked]["true"],
            "seeds_agreeing": float(np.mean(np.array(per_seed) == np.array(best_per_seed))),
        }
    out["true_value_of_best"] = summary[truly_best]["true"]
    return out


def print_tables(summary: dict, tuned: dict, tuned_spread: dict) -> None:
    header = (
        f"{'candidate':<16}{'estimator':<13}{'estimate':>9}{'true':>8}{'bias':>9}{'rmse':>8}"
        f"{'mean se':>9}{'covered':>9}{'ess':>9}{'clipped':>9}{'undef':>7}"
    )
    print(header)
    print("-" * len(header))
    for name in CANDIDATES:
        for estimator in ESTIMATORS:
            s = summary[name][estimator]
            print(
                f"{name:<16}{estimator:<13}{s['mean']:>9.4f}{summary[name]['true']:>8.4f}"
                f"{s['bias']:>+9.4f}{s['rmse']:>8.4f}{s['mean_se']:>9.4f}{s['covered']:>9.2f}"
                f"{s['ess']:>9.0f}{s['clipped']:>9.1f}{s['undefined']:>7}"
            )
    print("\nunsupported: the candidate's probability on sub-agents the log never shows there")
    for name in CANDIDATES:
        print(f"  {name:<16}{summary[name]['unsupported']:.4f}")
    for what, tuned_one in (
        (f"the young share over {', '.join(f'{s:.2f}' for s in YOUNG_SHARES)}", tuned),
        (f"the spread over {', '.join(spread_choices())}", tuned_spread),
    ):
        print(
            f"\ntuning {what}: truly best {tuned_one['truly_best']}"
            f" (true value {tuned_one['true_value_of_best']:.4f})"
        )
        for estimator, t in tuned_one["estimators"].items():
            print(
                f"  {estimator:<12} picks {t['picked']} (true value {t['true_value_of_pick']:.4f});"
                f" agrees with the seed's best on {t['seeds_agreeing']:.0%} of seeds"
            )
    print(
        "  (the value is the uses of the evaluation sessions under a frozen ranking: what young"
        " slots and exploring cost now, not what they teach the ranking for later)"
    )


def share_choices() -> list[str]:
    return [f"thompson-{s:.2f}" for s in YOUNG_SHARES]


def spread_choices() -> list[str]:
    """The logging policy's young share at each spread: the policy's own, and SD_SCALES."""
    choices = [LOGGING, *(f"sd-{x:g}" for x in SD_SCALES)]
    return sorted(choices, key=lambda name: thompson_parameters(name)[1])


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 seeds, a small world")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--weight-cap", type=float, default=DEFAULT_WEIGHT_CAP)
    parser.add_argument("--mc-draws", type=int, default=20_000)
    parser.add_argument(
        "--truth-runs",
        type=int,
        default=10,
        help="runs of each candidate on the evaluation sessions, averaged into its true value",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_arguments(argv)
    if args.quick:
        params = WorldParams(users=600, forks=60, sessions=6_000, young_share=LOGGING_SHARE)
        eval_sessions = 2_000
    else:
        params = WorldParams(users=2000, forks=200, sessions=20_000, young_share=LOGGING_SHARE)
        eval_sessions = 5_000
    n_seeds = args.seeds if args.seeds is not None else 20
    seeds = list(range(args.first_seed, args.first_seed + n_seeds))
    started = time.perf_counter()
    runs = [run_seed(params, seed, eval_sessions, args) for seed in seeds]
    summary = summarize(runs)
    tuned = tuning(runs, summary, share_choices())
    tuned_spread = tuning(runs, summary, spread_choices())
    print(
        f"world: {json.dumps(asdict(params))}; {eval_sessions} evaluation sessions of "
        f"{params.slate} slots; logging policy thompson-{LOGGING_SHARE:.2f} at sd scale"
        f" {SD_SCALE:g}; {len(seeds)} seeds;"
        f" weight cap {args.weight_cap:g}; {args.mc_draws} Monte Carlo draws"
    )
    print(f"sub-agents at evaluation: {[run['items'] for run in runs]}")
    print(f"young among them: {[run['young'] for run in runs]}\n")
    print_tables(summary, tuned, tuned_spread)
    print(f"elapsed {time.perf_counter() - started:.1f}s")
    result = {
        "params": asdict(params),
        "eval_sessions": eval_sessions,
        "seeds": seeds,
        "weight_cap": args.weight_cap,
        "mc_draws": args.mc_draws,
        "summary": summary,
        "tuning": tuned,
        "tuning_spread": tuned_spread,
    }
    print(json.dumps(_without_nan(result)))
    return result


def _without_nan(value):
    """JSON has no NaN: an undefined figure is null."""
    if isinstance(value, dict):
        return {key: _without_nan(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_without_nan(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


if __name__ == "__main__":
    main()
