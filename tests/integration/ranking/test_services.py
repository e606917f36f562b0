"""The ranking run over the database: scores, sorts, best descendants, incremental runs.

Ratings go in through the real feedback API; `run_ranking` is what `sprig rank` and Celery beat
call; the effects are read back through the HTTP API, on every backend.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import func, select

from evolution.personal import PATH_SWEEPS
from market.catalog.models import Install, Version
from market.platform.db import UnitOfWork, session_scope
from market.platform.state import app_state
from market.ranking.models import RankingRun, RaterOffset, SubAgentScore
from market.ranking.services import run_ranking
from tests.factories import fork, make_user, publish

API = "/api/v1"


def rate(client, service, user_id: int, version_id: int, stars: int) -> None:
    """The rater installed the version's sub-agent (only installers and users rate), then the
    service rates it on their behalf."""
    with session_scope(app_state(client.application).engine) as session:
        subagent_id = session.get(Version, version_id).subagent_id
        installed = select(Install.id).where(
            Install.user_id == user_id, Install.subagent_id == subagent_id
        )
        if session.execute(installed).first() is None:
            session.add(Install(user_id=user_id, subagent_id=subagent_id, version_id=version_id))
    response = client.post(
        f"{API}/feedback",
        json={"user_id": user_id, "version_id": version_id, "stars": stars},
        headers=service.headers,
    )
    assert response.status_code in (200, 201), response.get_json()


def rank(engine, **kwargs) -> RankingRun:
    return run_ranking(lambda: UnitOfWork(engine), **kwargs)


def scores(engine) -> dict[int, SubAgentScore]:
    with session_scope(engine) as session:
        rows = session.scalars(select(SubAgentScore)).all()
        for row in rows:
            session.expunge(row)
        return {row.subagent_id: row for row in rows}


@pytest.fixture
def family(client, engine):
    """A root, two forks of it and a private fork; a rating service and 15 raters."""
    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    service = make_user(engine, "agent", kind="service", scopes=["feedback:on-behalf"])
    root = publish(client, alice, title="Water Tracker")
    good = fork(client, bob, root["id"], note="reminders")
    plain = fork(client, bob, root["id"], note="dark mode")
    secret = fork(client, alice, root["id"], note="mine", visibility="private")
    raters = [make_user(engine, f"rater{i}").id for i in range(15)]
    return {
        "alice": alice,
        "bob": bob,
        "service": service,
        "root": root,
        "good": good,
        "plain": plain,
        "secret": secret,
        "raters": raters,
    }


def version(node: dict) -> int:
    return node["latest_version"]["id"]


def test_good_feedback_on_a_fork_lifts_it_above_its_parent(client, engine, family):
    root, good, plain = family["root"], family["good"], family["plain"]
    for user_id in family["raters"]:
        rate(client, family["service"], user_id, version(root), 3)
        rate(client, family["service"], user_id, version(plain), 3)
    rank(engine)
    before = scores(engine)
    # Unrated, the fork starts from its parent's belief with more uncertainty: below it.
    assert before[good["id"]].display < before[root["id"]].display
    assert before[good["id"]].young

    for user_id in family["raters"]:
        rate(client, family["service"], user_id, version(good), 5)
    run = rank(engine)
    assert run.mode != "skipped"
    after = scores(engine)
    assert after[good["id"]].quality > after[root["id"]].quality
    assert after[good["id"]].display > after[root["id"]].display
    assert after[good["id"]].display > after[plain["id"]].display

    top = client.get(f"{API}/subagents", query_string={"sort": "top", "limit": 10}).get_json()
    order = [card["id"] for card in top["items"]]
    assert order.index(good["id"]) < order.index(root["id"])

    detail = client.get(f"{API}/subagents/{root['id']}").get_json()
    assert detail["best_descendant"]["id"] == good["id"]
    assert detail["best_descendant"]["probability_better"] >= 0.8
    assert detail["ranking"]["rating_count"] == 15
    rising = client.get(f"{API}/subagents", query_string={"sort": "rising"}).get_json()
    assert good["id"] in [card["id"] for card in rising["items"]]
    assert root["id"] not in [card["id"] for card in rising["items"]]  # roots never rise


@pytest.mark.parametrize("change", ["private", "yank"])
def test_a_best_descendant_hidden_since_the_run_is_not_named(client, engine, family, change):
    """The run named ``good`` the root's best descendant; then ``good`` is made private or
    yanked. Until the next run the stored figures still point at it: the detail (API and
    page) names it to its author alone, and a yanked one to nobody."""
    root, good, bob = family["root"], family["good"], family["bob"]
    for user_id in family["raters"]:
        rate(client, family["service"], user_id, version(root), 3)
        rate(client, family["service"], user_id, version(good), 5)
    rank(engine)
    detail_url, page_url = f"{API}/subagents/{root['id']}", f"/s/{root['id']}"
    assert client.get(detail_url).get_json()["best_descendant"]["id"] == good["id"]
    assert 'class="better"' in client.get(page_url).get_data(as_text=True)

    listing = f"{API}/subagents/{good['id']}"
    if change == "private":
        changed = client.patch(listing, json={"visibility": "private"}, headers=bob.headers)
    else:
        changed = client.post(f"{listing}/yank", json={"reason": "broken"}, headers=bob.headers)
    assert changed.status_code == 200
    with session_scope(engine) as session:
        assert session.get(SubAgentScore, root["id"]).best_descendant_id == good["id"]
    for reader in (None, family["alice"], bob):
        headers = reader.headers if reader else {}
        shown = change == "private" and reader is bob
        best = client.get(detail_url, headers=headers).get_json()["best_descendant"]
        assert (best is not None and best["id"] == good["id"]) == shown, reader
        page = client.get(page_url, headers=headers).get_data(as_text=True)
        assert ('class="better"' in page) == shown, reader


def test_a_known_harsh_rater_counts_less_than_a_stranger(client, engine, family):
    """`plain` and `twin` get the same ratings: twelve 4s and one 1. The 1 on `plain` comes from
    someone who gave 1 star to everything else they rated while the crowd gave 4; the 1 on
    `twin` from someone who rated nothing else. Same raw mean, but Sprig knows the first 1
    says more about the rater than about `plain`."""
    root, good, plain = family["root"], family["good"], family["plain"]
    twin = fork(client, family["bob"], root["id"], note="twin")
    crowd, harsh, stranger = family["raters"][:12], family["raters"][12], family["raters"][13]
    for user_id in crowd:
        for node in (root, good, plain, twin):
            rate(client, family["service"], user_id, version(node), 4)
    for node in (root, good, plain):
        rate(client, family["service"], harsh, version(node), 1)
    rate(client, family["service"], stranger, version(twin), 1)
    rank(engine)
    after = scores(engine)
    assert after[plain["id"]].quality > after[twin["id"]].quality
    with session_scope(engine) as session:
        harsh_leniency = session.get(RaterOffset, harsh).leniency
        stranger_leniency = session.get(RaterOffset, stranger).leniency
    assert harsh_leniency < stranger_leniency < 0  # both low, the known one more surely


def test_private_and_withdrawn_forks_are_never_the_best_descendant(client, engine, family):
    root, secret = family["root"], family["secret"]
    for user_id in family["raters"]:
        rate(client, family["service"], user_id, version(root), 2)
    # One rating of 5, given while it was public; then its author makes it private.
    listing = f"{API}/subagents/{secret['id']}"
    headers = family["alice"].headers
    assert client.patch(listing, json={"visibility": "public"}, headers=headers).status_code == 200
    rate(client, family["service"], family["raters"][0], version(secret), 5)
    assert client.patch(listing, json={"visibility": "private"}, headers=headers).status_code == 200
    rank(engine)
    stored = scores(engine)
    assert stored[root["id"]].best_descendant_id != secret["id"]
    for sort in ("top", "trending", "rising"):
        page = client.get(f"{API}/subagents", query_string={"sort": sort}).get_json()
        assert secret["id"] not in [card["id"] for card in page["items"]]
    own = client.get(f"{API}/subagents/{secret['id']}", headers=family["alice"].headers).get_json()
    assert own["ranking"] is not None  # its owner sees its figures


def test_nothing_new_means_nothing_recomputed(client, engine, family):
    rate(client, family["service"], family["raters"][0], version(family["root"]), 4)
    first = rank(engine)
    assert first.mode == "full"
    assert first.parameters["rows_written"] == 4
    assert rank(engine).mode == "skipped"
    forced = rank(engine, force=True)
    assert forced.mode == "full"  # forced: refits, warm-started from the stored rater offsets
    assert forced.parameters["rows_written"] == 0  # same inputs, same scores: no writes
    rate(client, family["service"], family["raters"][1], version(family["good"]), 5)
    again = rank(engine)
    assert again.mode == "incremental"
    assert 0 < again.parameters["rows_written"] <= 4
    with session_scope(engine) as session:
        runs = session.scalar(select(func.count()).select_from(RankingRun))
        assert runs == 3  # skipped runs are not recorded


def test_score_sorts_page_through_every_scored_subagent_once(client, engine, family):
    for i, user_id in enumerate(family["raters"]):
        rate(client, family["service"], user_id, version(family["root"]), 1 + i % 5)
    rank(engine)
    seen, cursor = [], None
    while True:
        query = {"sort": "top", "limit": 1}
        if cursor:
            query["cursor"] = cursor
        page = client.get(f"{API}/subagents", query_string=query).get_json()
        seen += [card["id"] for card in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    public = [family[name]["id"] for name in ("root", "good", "plain")]
    assert sorted(seen) == sorted(public)
    displays = scores(engine)
    assert [displays[i].display for i in seen] == sorted(
        (displays[i].display for i in seen), reverse=True
    )


def test_bad_cursor_for_a_score_sort_is_a_400(client, engine, family):
    rank(engine)
    page = client.get(f"{API}/subagents", query_string={"sort": "new", "limit": 1}).get_json()
    response = client.get(
        f"{API}/subagents", query_string={"sort": "top", "cursor": page["next_cursor"]}
    )
    assert response.status_code == 400
    assert response.content_type == "application/problem+json"


def test_ranking_method_is_published(client, engine, family):
    body = client.get(f"{API}/ranking").get_json()
    assert "Koren" in body["formulas"] and "E[θ] − 1.64" in body["formulas"]
    assert body["last_run"] is None
    rate(client, family["service"], family["raters"][0], version(family["root"]), 4)
    rank(engine)
    body = client.get(f"{API}/ranking").get_json()
    assert body["last_run"]["subagents"] == 4
    assert set(body["last_run"]["prior"]) == {"mu0", "sigma0_sq", "drift_mean", "drift_var"}


@pytest.fixture
def camps(client, engine):
    """Two camps of 20 raters through the feedback API: one loves three step counters and hates
    three sleep logs, the other the reverse, so everyone's average of each is the same and the
    ranking alone cannot tell them apart; a taste can."""
    alice = make_user(engine, "alice")
    service = make_user(engine, "agent", kind="service", scopes=["feedback:on-behalf"])
    steps = [publish(client, alice, title=f"Step Counter {i}") for i in range(3)]
    sleeps = [publish(client, alice, title=f"Sleep Log {i}") for i in range(3)]
    members = {"steps": [], "sleep": []}
    for i in range(40):
        camp = "steps" if i % 2 == 0 else "sleep"
        rater = make_user(engine, f"rater{i}").id
        members[camp].append(rater)
        for node in steps + sleeps:
            loved = (node in steps) == (camp == "steps")
            rate(client, service, rater, version(node), 5 if loved else 1)
    return {"service": service, "steps": steps, "sleeps": sleeps, "members": members}


def stored_taste(engine) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    from market.ranking.models import RaterTaste, SubAgentTaste

    with session_scope(engine) as session:
        person = {r.user_id: r.factors for r in session.scalars(select(RaterTaste))}
        suits = {r.subagent_id: r.factors for r in session.scalars(select(SubAgentTaste))}
    return person, suits


def test_a_full_run_learns_each_raters_taste_and_stores_it(client, engine, camps):
    """The full run's taste (stored in rater_taste and subagent_taste): a step fan's taste term
    is higher for every step counter than for any sleep log, a sleep fan's the reverse."""
    run = rank(engine, force=True)
    assert run.parameters["taste"]["raters"] == 40
    assert run.parameters["taste"]["subagents"] == 6
    assert_camps_told_apart(engine, camps)


def assert_camps_told_apart(engine, camps) -> None:
    person, suits = stored_taste(engine)

    def taste(rater: int, node: dict) -> float:
        return sum(p * q for p, q in zip(person[rater], suits[node["id"]], strict=True))

    steps, sleeps = camps["steps"], camps["sleeps"]
    for camp, loved, other in (("steps", steps, sleeps), ("sleep", sleeps, steps)):
        for rater in camps["members"][camp]:
            assert min(taste(rater, n) for n in loved) > max(taste(rater, n) for n in other)


def test_the_tastes_strength_is_chosen_weekly_and_kept_from_the_last_fit_between(
    client, engine, camps, monkeypatch
):
    """The first full run chooses λ. A day later the full run keeps that λ and starts from the
    stored factors (a fit with λ given: no validation path); a week after the choice, λ is
    chosen anew. Each run's taste still tells the camps apart."""
    from market.ranking import services

    asked: list[float | None] = []
    real = services.taste_of

    def recording(inputs, scores, **options):
        asked.append(options.get("reg"))
        if options.get("reg") is not None:
            assert np.any(options["start"] != 0.0)  # the stored factors, not nothing
        return real(inputs, scores, **options)

    monkeypatch.setattr(services, "taste_of", recording)
    first_moment = datetime.now(UTC)
    first = rank(engine, force=True, now=first_moment).parameters["taste"]
    assert first["reg"] is not None  # the camps are a taste worth fitting
    assert datetime.fromisoformat(first["reg_chosen_at"]) == first_moment
    next_day = rank(engine, force=True, now=first_moment + timedelta(days=1)).parameters["taste"]
    assert (next_day["reg"], next_day["reg_chosen_at"]) == (first["reg"], first["reg_chosen_at"])
    assert next_day["sweeps"] <= PATH_SWEEPS
    assert_camps_told_apart(engine, camps)
    week_later = first_moment + timedelta(days=7, hours=1)
    again = rank(engine, force=True, now=week_later).parameters["taste"]
    assert datetime.fromisoformat(again["reg_chosen_at"]) == week_later
    assert asked == [None, first["reg"], None]
    assert_camps_told_apart(engine, camps)


class PausedTaste:
    """``taste_of`` wrapped so that its first call waits until the test lets it go: what a long
    taste fit at a million sub-agents looks like to everything else. Later calls run at once."""

    def __init__(self, monkeypatch) -> None:
        from market.ranking import services

        self.real, self.started, self.go = services.taste_of, threading.Event(), threading.Event()
        self.calls = 0
        monkeypatch.setattr(services, "taste_of", self)

    def __call__(self, inputs, scores, **options):
        self.calls += 1
        if self.calls == 1:
            self.started.set()
            assert self.go.wait(60), "the test never let the taste fit go on"
        return self.real(inputs, scores, **options)


def fail_the_taste_fit(monkeypatch, message: str) -> None:
    """Every taste fit raises ``message``, as one that runs out of memory would."""
    from market.ranking import services

    def broken(inputs, scores, **options):
        raise RuntimeError(message)

    monkeypatch.setattr(services, "taste_of", broken)


def in_thread(function) -> tuple[threading.Thread, list]:
    outcome: list = []

    def target() -> None:
        try:
            outcome.append(function())
        except BaseException as error:  # handed to the test's thread
            outcome.append(error)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def test_a_full_runs_scores_are_served_while_its_taste_is_fitted(
    client, engine, camps, monkeypatch
):
    """While a full run's taste is being fitted, its scores are already committed (the API
    ranks by them) and the ranking lock is free: a lineage run with a new rating goes through
    instead of waiting for the fit. Then the taste is stored and recorded on the run."""
    counter = camps["steps"][1]["id"]
    rank(engine, force=True)
    first_run = client.get(f"{API}/ranking").get_json()["last_run"]
    rate(client, camps["service"], make_user(engine, "early").id, version(camps["steps"][1]), 5)
    paused = PausedTaste(monkeypatch)
    full, outcome = in_thread(lambda: rank(engine, force=True))
    try:
        assert paused.started.wait(60)
        assert client.get(f"{API}/ranking").get_json()["last_run"]["id"] > first_run["id"]
        assert scores(engine)[counter].rating_count == 41  # the new run's, rating and all
        newcomer = make_user(engine, "newcomer").id
        rate(client, camps["service"], newcomer, version(camps["steps"][0]), 5)
        lineage, lineage_outcome = in_thread(lambda: rank(engine))
        lineage.join(30)
        assert not lineage.is_alive(), "a lineage run waited for the taste fit"
        assert lineage_outcome[0].mode == "incremental"
    finally:
        paused.go.set()
        full.join(60)
    run = outcome[0]
    assert not isinstance(run, BaseException), run
    assert run.parameters["taste"]["raters"] == 41
    with session_scope(engine) as session:
        stored = session.get(RankingRun, run.id).parameters["taste"]
    assert stored == run.parameters["taste"]
    person, _suits = stored_taste(engine)
    assert len(person) == 41


def test_a_taste_fit_that_fails_keeps_the_new_scores_and_the_last_taste(
    client, engine, camps, monkeypatch
):
    rank(engine, force=True)
    before = stored_taste(engine)
    rate(client, camps["service"], make_user(engine, "late").id, version(camps["steps"][1]), 5)
    fail_the_taste_fit(monkeypatch, "the taste fit ran out of memory")
    with pytest.raises(RuntimeError, match="out of memory"):
        rank(engine, force=True)
    with session_scope(engine) as session:
        runs = session.scalars(select(RankingRun).order_by(RankingRun.id)).all()
        assert [r.mode for r in runs] == ["full", "full"]
        assert "taste" not in runs[1].parameters  # the run stands; no taste claims to be its
    row = scores(engine)[camps["steps"][1]["id"]]
    assert (row.run_id, row.rating_count) == (runs[1].id, 41)
    assert stored_taste(engine) == before


def test_an_older_runs_taste_never_replaces_a_newer_ones(client, engine, camps, monkeypatch):
    """Run A's taste fit is slow; run B (after a new rater) finishes first, taste and all.
    When A's fit ends, A stores nothing: the taste stays B's, which knows the new rater."""
    paused = PausedTaste(monkeypatch)
    older, outcome = in_thread(lambda: rank(engine, force=True))
    try:
        assert paused.started.wait(60)
        newcomer = make_user(engine, "newcomer").id
        rate(client, camps["service"], newcomer, version(camps["steps"][0]), 5)
        rate(client, camps["service"], newcomer, version(camps["sleeps"][0]), 1)
        newer = rank(engine, force=True)
        assert newer.parameters["taste"]["raters"] == 41
    finally:
        paused.go.set()
        older.join(60)
    assert outcome[0].parameters["taste"] == {"superseded": True}
    person, _suits = stored_taste(engine)
    assert newcomer in person and len(person) == 41


def test_a_lost_taste_is_fitted_again_once_by_a_full_run_after_its_fit_surely_ended(
    client, engine, camps, monkeypatch
):
    """A full run's fit fails (or its worker dies: the run is left without a taste either
    way). Nothing else changes. Ten minutes later the fit might still be running, and nothing
    happens; twenty-one minutes later a full run ranks again and stores the taste, and
    after that the catalog is quiet again."""
    moment = datetime.now(UTC)
    fail_the_taste_fit(monkeypatch, "the worker was killed")
    with pytest.raises(RuntimeError):
        rank(engine, force=True, now=moment)
    monkeypatch.undo()
    assert rank(engine, now=moment + timedelta(minutes=10)).mode == "skipped"
    retry = rank(engine, now=moment + timedelta(minutes=21))
    with session_scope(engine) as session:
        lost = session.scalars(select(RankingRun).order_by(RankingRun.id)).first()
    assert retry.mode == "full" and retry.parameters["taste_retry_of"] == lost.id
    assert retry.parameters["taste"]["raters"] == 40
    assert_camps_told_apart(engine, camps)
    assert rank(engine, now=moment + timedelta(minutes=50)).mode == "skipped"


def backdate_the_last_run(engine, by: timedelta) -> None:
    with session_scope(engine) as session:
        last = session.scalars(select(RankingRun).order_by(RankingRun.id.desc())).first()
        last.started_at -= by
        last.finished_at = last.finished_at and last.finished_at - by


def test_the_rank_task_waits_out_its_own_time_limit_before_fitting_a_lost_taste(
    database_url, engine, camps, monkeypatch
):
    """The Celery task's delay is its own time limit plus five minutes, not the default
    twenty: with a one-hour limit, a taste lost 30 minutes ago may still be being fitted and
    nothing runs; one lost 70 minutes ago is fitted again."""
    from market.ranking.tasks import rank_task
    from tests.conftest import configured_app

    # Built last, its Celery app is the one tasks run through, in its context and settings.
    limited = configured_app(database_url, rank_time_limit_seconds=3600)
    try:
        with monkeypatch.context() as broken:
            fail_the_taste_fit(broken, "the worker was killed")
            with pytest.raises(RuntimeError):
                rank_task.apply(kwargs={"force": True}).get()
        backdate_the_last_run(engine, timedelta(minutes=30))
        assert rank_task.apply().get()["mode"] == "skipped"
        backdate_the_last_run(engine, timedelta(minutes=40))
        assert rank_task.apply().get()["mode"] == "full"
    finally:
        app_state(limited).engine.dispose()
        app_state(limited).read_engine.dispose()
    with session_scope(engine) as session:
        retry = session.scalars(select(RankingRun).order_by(RankingRun.id.desc())).first()
    assert retry.parameters["taste"]["raters"] == 40 and "taste_retry_of" in retry.parameters


def test_a_taste_that_fails_again_waits_for_the_next_daily_run(client, engine, camps, monkeypatch):
    """The retry's fit fails too: no third full run comes from it, so a fit that cannot
    succeed costs one extra full run a day, not one every twenty minutes."""
    fail_the_taste_fit(monkeypatch, "out of memory")
    moment = datetime.now(UTC)
    with pytest.raises(RuntimeError):
        rank(engine, force=True, now=moment)
    with pytest.raises(RuntimeError):
        rank(engine, now=moment + timedelta(minutes=21))
    assert rank(engine, now=moment + timedelta(minutes=45)).mode == "skipped"
    with session_scope(engine) as session:
        modes = session.scalars(select(RankingRun.mode).order_by(RankingRun.id)).all()
    assert modes == ["full", "full"]
