"""``sprig ope``: recommendations made through the API, ratings that cite their exposures, and
the off-policy estimates the command reads back from the database."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import select, update

from evolution.explore import SD_SCALE
from market.entrypoints.cli import main as cli
from market.platform.db import session_scope
from market.platform.time import utcnow
from market.recommend.models import Exposure
from tests.factories import make_user
from tests.functional.recommend.test_api import API, ask, install, ok, publish_scored

PEOPLE = 6


@pytest.fixture
def runner(monkeypatch, database_url, app) -> CliRunner:
    """A runner on the test database (``app`` wipes it before and after)."""
    monkeypatch.setenv("SPRIG_DATABASE_URL", database_url)
    return CliRunner()


@pytest.fixture
def rated_log(client, engine) -> dict:
    """Six people get a slate of three each; each rates the first two sub-agents shown: five
    stars for a slot-0 one, two stars for a slot-1 one. Returns the expected liked share."""
    alice = make_user(engine, "alice")
    agent = make_user(engine, "agent", kind="service", scopes=["recommend", "feedback:on-behalf"])
    for i in range(5):
        publish_scored(client, engine, alice, f"Water Log {i}", 1.0 + 0.1 * i, 0.4, False)
    for i in range(3):
        publish_scored(client, engine, alice, f"Water Fork {i}", 0.8, 0.8, True)
    exposures = liked = 0
    for person_number in range(PEOPLE):
        person = make_user(engine, f"person{person_number}")
        slate = ok(ask(client, agent, user_id=person.id, k=3, seed=100 + person_number))
        exposures += len(slate["items"])
        for item, stars in zip(slate["items"][:2], (5, 2), strict=True):
            install(client, person, item)
            rated = client.post(
                f"{API}/feedback",
                json={
                    "user_id": person.id,
                    "version_id": item["version_id"],
                    "stars": stars,
                    "exposure_id": item["exposure_id"],
                },
                headers=agent.headers,
            )
            assert rated.status_code == 201, rated.get_json()
            liked += stars >= 4
    return {"exposures": exposures, "liked_share": liked / exposures}


def run(runner: CliRunner, *args: str, code: int = 0):
    result = runner.invoke(cli, ["ope", *args], prog_name="sprig")
    assert result.exit_code == code, (result.output, result.exception)
    return result


def test_the_logging_policy_is_estimated_at_its_observed_mean_reward(runner, rated_log):
    report = json.loads(run(runner, "--json").stdout)
    assert report["exposures"] == rated_log["exposures"] == 3 * PEOPLE
    assert report["decisions"] == PEOPLE
    assert report["observed_mean_reward"] == pytest.approx(rated_log["liked_share"])
    by_name = {c["candidate"]: c for c in report["candidates"]}
    assert list(by_name) == ["logged", "uniform", "greedy", "tempered:0.5", "tempered:2"]
    logged = by_name["logged"]["estimates"]
    for estimator in ("ips", "snips"):
        assert logged[estimator]["value"] == pytest.approx(rated_log["liked_share"], abs=1e-9)
    # DR adds the reward model's mean-zero correction Σ π r̂ − r̂(shown): near, not equal.
    assert logged["dr"]["ci_low"] <= rated_log["liked_share"] <= logged["dr"]["ci_high"]
    assert logged["ips"]["effective_sample_size"] == pytest.approx(3 * PEOPLE)
    for candidate in by_name.values():
        # Every candidate is defined over the logged distributions: the log reaches all of it.
        assert candidate["unsupported_mass"] == 0.0
        for estimate in candidate["estimates"].values():
            assert estimate["clipped"] == 0
            assert estimate["ci_low"] <= estimate["value"] <= estimate["ci_high"]
            assert 0 < estimate["effective_sample_size"] <= 3 * PEOPLE + 1e-9
        assert 0.0 <= candidate["estimates"]["snips"]["value"] <= 1.0


def test_rated_reward_counts_every_rating_and_the_table_names_each_estimate(runner, rated_log):
    report = json.loads(run(runner, "--json", "--reward", "rated", "--candidate", "logged").stdout)
    assert report["observed_mean_reward"] == pytest.approx(2 / 3)
    assert report["candidates"][0]["estimates"]["ips"]["value"] == pytest.approx(2 / 3)
    table = run(runner, "--candidate", "greedy", "--candidate", "tempered:3").output
    assert f"{3 * PEOPLE} exposures in {PEOPLE} decisions" in table
    for candidate in ("greedy", "tempered:3"):
        for estimator in ("ips", "snips", "dr"):
            assert any(line.split()[:2] == [candidate, estimator] for line in table.splitlines())


def test_days_leaves_older_exposures_out(runner, engine, rated_log):
    with session_scope(engine) as session:
        oldest = session.execute(select(Exposure).order_by(Exposure.created_at)).scalars().first()
        session.execute(
            update(Exposure)
            .where(Exposure.decision_id == oldest.decision_id)
            .values(created_at=utcnow() - timedelta(days=10))
        )
    recent = json.loads(run(runner, "--json", "--days", "1", "--candidate", "logged").stdout)
    assert (recent["exposures"], recent["decisions"]) == (3 * (PEOPLE - 1), PEOPLE - 1)
    everything = json.loads(run(runner, "--json", "--candidate", "logged").stdout)
    assert everything["exposures"] == 3 * PEOPLE


def test_bad_candidates_and_an_empty_log_are_one_clear_error(runner, rated_log):
    assert "unknown candidate 'bogus'" in run(runner, "--candidate", "bogus", code=1).output
    assert "unknown candidate" in run(runner, "--candidate", "tempered:-1", code=1).output
    for absurd in ("sd-scale:nan", "sd-scale:-0.5", "sd-scale:inf", "sd-scale:"):
        assert "unknown candidate" in run(runner, "--candidate", absurd, code=1).output


def test_no_exposures_is_a_clear_error(runner):
    assert "no logged exposures" in run(runner, code=1).output


def test_the_logging_young_share_replayed_from_the_pool_belief_is_the_logging_policy(
    runner, engine, rated_log
):
    """Every decision keeps its pool belief on its first exposure; replaying Thompson sampling
    with the logging policy's own young share gives each logged slot the logged distribution
    again (up to the Monte Carlo of both), so IPS lands on the observed mean; another young
    share moves the estimate, and every young-share candidate is judged on the same rows. So
    with the spread: the policy's own (``sd-scale`` at SD_SCALE) is the same replay, and the
    exact posterior's moves the estimate."""
    with session_scope(engine) as session:
        first_slots = session.execute(select(Exposure).where(Exposure.slot == 0)).scalars().all()
        later = session.execute(select(Exposure).where(Exposure.slot > 0)).scalars().all()
        assert len(first_slots) == PEOPLE and all(e.pool_belief for e in first_slots)
        assert all(e.pool_belief is None for e in later)
        for exposure in first_slots:
            assert set(exposure.slot_distribution) <= set(exposure.pool_belief)
            assert all(
                sd > 0 and isinstance(young, bool) for _, sd, young in exposure.pool_belief.values()
            )
    candidates = ["young-share:0.15", "young-share:1", f"sd-scale:{SD_SCALE}", "sd-scale:1"]
    arguments = [argument for c in candidates for argument in ("--candidate", c)]
    report = json.loads(run(runner, "--json", *arguments).stdout)
    assert report["decisions"] == PEOPLE
    assert report["decisions_without_pool_belief_left_out"] == 0
    same, all_young, own_spread, exact = (c["estimates"] for c in report["candidates"])
    assert same["ips"]["value"] == pytest.approx(rated_log["liked_share"], abs=0.05)
    assert same["ips"]["effective_sample_size"] == pytest.approx(3 * PEOPLE, rel=0.05)
    assert all_young["ips"]["value"] != pytest.approx(same["ips"]["value"], abs=1e-6)
    assert own_spread == same
    assert exact["ips"]["value"] != pytest.approx(same["ips"]["value"], abs=1e-6)


def test_decisions_without_a_pool_belief_are_left_out_of_a_replay(runner, engine, rated_log):
    """A decision logged before pool beliefs were kept cannot be replayed: asking for a
    young-share candidate leaves it out of every candidate's estimate, and says so."""
    with session_scope(engine) as session:
        oldest = session.execute(select(Exposure).order_by(Exposure.created_at)).scalars().first()
        session.execute(
            update(Exposure)
            .where(Exposure.decision_id == oldest.decision_id)
            .values(pool_belief=None)
        )
    table = run(runner, "--candidate", "logged", "--candidate", "young-share:0.3").output
    assert f"{3 * (PEOPLE - 1)} exposures in {PEOPLE - 1} decisions" in table
    assert "1 decisions logged without their pool belief left out" in table
    assert "unknown candidate" in run(runner, "--candidate", "young-share:2", code=1).output
    # Wider than the exact posterior, a replay would need the sub-agents the policy pruned.
    assert "sd-scale:τ (0 ≤ τ ≤ 1)" in run(runner, "--candidate", "sd-scale:1.5", code=1).output
