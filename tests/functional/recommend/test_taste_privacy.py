"""A person's taste (``rater_taste``: p_u, learned from their own ratings) never reaches anyone
else: only the person and the main agent get a slate drawn with it, a refusal does not tell
whether there is one, no log line carries it, and a taste row that cannot be used (a person
since deleted, factors of another rank, damaged factors) answers like no taste, never a 500;
a ranking refit committed while a slate reads the taste gives it one fit, never a mix.

The catalog is the recommendation tests' small world (``test_api.world``); the taste is
written straight into ``rater_taste`` and ``subagent_taste``, as a full ranking run leaves it.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sqlalchemy import delete
from sqlalchemy import event as sqlalchemy_event

from market.identity.models import ApiToken, User
from market.platform.db import session_scope
from market.platform.logs import json_formatter
from market.ranking.models import RaterTaste, SubAgentTaste
from market.recommend import services as recommendations
from tests.factories import make_user
from tests.functional.recommend import test_api
from tests.functional.recommend.test_api import PROBLEM, RECOMMEND, ask, exposure_count, ok

world = test_api.world  # the recommendation tests' catalog, as a fixture here

# Digits no other value of these tests has, so a log line or answer holding one is a leak.
BOB_TASTE = [0.8172634, -0.4491827]
SUITS_BOB = [2.7182818, 0.5772156]  # Water Log 0: Bob's favourite by far
SUITS_OTHERS = [-0.3183099, 1.4142135]


def give_bob_a_taste(engine, world, person_factors=BOB_TASTE) -> None:
    with session_scope(engine) as session:
        session.add(RaterTaste(user_id=world.bob.id, factors=person_factors))
        session.add(SubAgentTaste(subagent_id=world.established[0]["id"], factors=SUITS_BOB))
        for other in world.established[1:]:
            session.add(SubAgentTaste(subagent_id=other["id"], factors=SUITS_OTHERS))


def taste_values() -> list[str]:
    """Bob's taste as a log line or an answer would show it: the digits of every stored factor,
    and the leading digits (cut, not rounded: a longer print starts with them) of his taste
    for each candidate and of his score of it."""
    digits = [f"{abs(x):.7f}".split(".")[1] for x in (*BOB_TASTE, *SUITS_BOB, *SUITS_OTHERS)]
    liked = float(np.dot(BOB_TASTE, SUITS_BOB))
    disliked = float(np.dot(BOB_TASTE, SUITS_OTHERS))
    scores = [1.0 + liked] + [1.0 + 0.1 * i + disliked for i in range(1, 5)]  # test_api.world
    return digits + [repr(abs(x))[:8] for x in (liked, disliked, *scores)]


@pytest.fixture
def strangers(engine) -> dict:
    """Callers beside the world's, none of them Bob or the main agent."""
    return {
        "carol": make_user(engine, "carol"),
        "moderator": make_user(engine, "mod", role="moderator"),
        "coding agent": make_user(
            engine, "coder", kind="service", scopes=["suggest", "publish:on-behalf"]
        ),
    }


# ---- who gets a slate drawn with Bob's taste ----------------------------------------------


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("anonymous", 401),
        ("carol", 403),  # another person
        ("alice", 403),  # the creator of every candidate
        ("moderator", 403),  # moderating sub-agents is not reading people's tastes
        ("coding agent", 403),  # suggest and publish:on-behalf, not recommend
        ("collector", 403),  # the main agent's event writer without recommend
    ],
)
def test_nobody_else_gets_a_slate_drawn_with_bobs_taste(
    client, engine, world, strangers, who, status
):
    give_bob_a_taste(engine, world)
    actors = {**strangers, "alice": world.alice, "collector": world.collector}
    headers = {} if who == "anonymous" else actors[who].headers
    response = client.post(RECOMMEND, json={"user_id": world.bob.id, "seed": 3}, headers=headers)
    assert response.status_code == status
    assert response.mimetype == PROBLEM
    body = response.get_data(as_text=True)
    assert "personal" not in body and "propensity" not in body
    assert exposure_count(engine) == 0  # nothing logged as shown to Bob either


def test_bob_and_the_main_agent_get_it(client, engine, world):
    give_bob_a_taste(engine, world)
    own = ok(ask(client, world.bob, user_id=world.bob.id, k=3, category="hydration", seed=3))
    for_bob = ok(ask(client, world.agent, user_id=world.bob.id, k=3, category="hydration", seed=3))
    assert own["personal"] is for_bob["personal"] is True
    slates = [[(i["subagent_id"], i["propensity"]) for i in a["items"]] for a in (own, for_bob)]
    assert slates[0] == slates[1]
    assert world.established[0]["id"] in {subagent_id for subagent_id, _ in slates[0]}


def test_a_refusal_does_not_tell_whether_someone_has_a_taste_or_exists(
    client, engine, world, strangers
):
    """Carol asking for Bob (a taste), for Alice (none) and for an id nobody has gets one
    answer, so she cannot even learn who has a taste stored."""
    give_bob_a_taste(engine, world)
    carol = strangers["carol"]
    answers = [
        client.post(RECOMMEND, json={"user_id": user_id, "seed": 1}, headers=carol.headers)
        for user_id in (world.bob.id, world.alice.id, 999_999)
    ]
    assert {a.status_code for a in answers} == {403}
    bodies = [{k: v for k, v in a.get_json().items() if k != "instance"} for a in answers]
    assert bodies[0] == bodies[1] == bodies[2]


def test_recommending_logs_no_taste(client, engine, world, caplog):
    """At the most verbose level Sprig's own loggers can be set to (``SPRIG_LOG_LEVEL``), no
    line written while choosing Bob's slate holds his factors or his taste for a candidate."""
    give_bob_a_taste(engine, world)
    for logger in ("market", "feedback"):
        caplog.set_level(logging.DEBUG, logger=logger)
    ok(ask(client, world.agent, user_id=world.bob.id, k=3, seed=5))
    ok(ask(client, world.bob, user_id=world.bob.id, k=3, seed=5))
    formatter = json_formatter()  # the line as production writes it, extra fields included
    lines = [formatter.format(record) for record in caplog.records]
    assert lines  # the access lines at least: the capture works
    for value in taste_values():
        assert not [line for line in lines if value in line], value


# ---- a taste that cannot be used answers like none ------------------------------------------


def slate(client, actor, person) -> tuple[list, list, bool]:
    answer = ok(ask(client, actor, user_id=person.id, k=3, seed=11))
    return (
        [item["subagent_id"] for item in answer["items"]],
        [item["propensity"] for item in answer["items"]],
        answer["personal"],
    )


@pytest.mark.parametrize(
    "person_factors",
    [
        [0.5, 0.25, 0.125],  # left from a fit of rank 3; the sub-agents' are rank 2
        [],
        ["0.5", "0.25"],
        [[0.5, 0.25]],
        {"0": 0.5, "1": 0.25},
        [True, False],
        [1e308, 1e308],  # finite, but its dot product with a sub-agent's is not
    ],
    ids=["other-rank", "empty", "strings", "nested", "object", "booleans", "overflowing"],
)
def test_a_taste_that_does_not_fit_gives_everyones_slate(
    client, engine, world, strangers, person_factors
):
    """Bob's slate is then exactly what Carol (no taste, nothing installed either) gets with
    the same seed, and ``personal`` says so."""
    give_bob_a_taste(engine, world, person_factors)
    carol = strangers["carol"]
    assert slate(client, world.agent, world.bob) == slate(client, world.agent, carol)
    assert slate(client, world.agent, world.bob)[2] is False


def test_damaged_subagent_factors_count_as_unknown(client, engine, world):
    """A candidate whose q_v is not a vector of Bob's length gets no taste term (as one the run
    learned nothing about); the others keep theirs."""
    give_bob_a_taste(engine, world)
    liked, damaged = world.established[0]["id"], world.established[1]["id"]
    with session_scope(engine) as session:
        session.get(SubAgentTaste, damaged).factors = ["x", None]
    with session_scope(engine) as session:
        terms = recommendations.taste_terms(session, world.bob.id, [liked, damaged])
    assert terms.tolist() == pytest.approx([float(np.dot(BOB_TASTE, SUITS_BOB)), 0.0])


def test_a_deleted_persons_taste_row_is_a_404_not_a_500(client, engine, world):
    """Sprig has no account deletion; a person removed from the database by hand leaves their
    ``rater_taste`` row behind (it has no foreign key). Asking for them is an unknown user:
    404 with nothing logged as shown, and their old token signs no one in."""
    give_bob_a_taste(engine, world)
    with session_scope(engine) as session:
        session.execute(delete(ApiToken).where(ApiToken.user_id == world.bob.id))
        session.execute(delete(User).where(User.id == world.bob.id))
    for_bob = ask(client, world.agent, user_id=world.bob.id, seed=1)
    assert for_bob.status_code == 404 and for_bob.mimetype == PROBLEM
    own = ask(client, world.bob, user_id=world.bob.id, seed=1)
    assert own.status_code == 401 and own.mimetype == PROBLEM
    assert exposure_count(engine) == 0


def test_a_refit_committed_while_the_taste_is_read_gives_one_fit_never_a_mix(engine, world):
    """A full ranking run replaces both factor tables in one transaction. A slate being drawn
    meanwhile reads the person's factors and the candidates' in one statement, so it gets
    the old fit or the new one: the person's old p_u with the new q_v would be a taste
    nobody has (here 0.25 where both fits say 3 and 2)."""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite reads one snapshot per transaction: no refit can come between")
    liked = world.established[0]["id"]
    with session_scope(engine) as session:
        session.add(RaterTaste(user_id=world.bob.id, factors=[1.0, 0.0]))
        session.add(SubAgentTaste(subagent_id=liked, factors=[3.0, 0.5]))

    def refit(connection, cursor, statement, parameters, context, executemany):
        if "subagent_taste" not in statement or refitted:
            return
        refitted.append(True)
        with session_scope(engine) as other:  # another connection: the ranking worker
            other.execute(delete(RaterTaste))
            other.execute(delete(SubAgentTaste))
            other.add(RaterTaste(user_id=world.bob.id, factors=[0.0, 2.0]))
            other.add(SubAgentTaste(subagent_id=liked, factors=[0.25, 1.0]))

    refitted: list[bool] = []
    sqlalchemy_event.listen(engine, "before_cursor_execute", refit)
    try:
        with session_scope(engine) as session:
            terms = recommendations.taste_terms(session, world.bob.id, [liked])
    finally:
        sqlalchemy_event.remove(engine, "before_cursor_execute", refit)
    assert refitted
    assert terms.tolist() in ([pytest.approx(3.0)], [pytest.approx(2.0)])
