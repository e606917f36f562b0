"""Reward exports through the API, the CLI and the Celery task, on every database backend.

A small community: a root with two public forks, a private fork and a fork rated by too few
people, a second root in another category; seven raters who opted in to sharing feedback for
training and three who did not, every one of them with canary personal values (email, phone,
address, name) that must never appear in an export."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only; read when datasets loads

import hashlib
import io
import json
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sqlalchemy import select, update
from sqlmodel import Session

from market.catalog import bundles
from market.catalog.models import Version
from market.entrypoints.cli import main as cli
from market.exports.models import ExportRun
from market.identity.models import User
from market.platform.state import app_state
from market.platform.time import utcnow
from market.ranking.models import RaterTaste, SubAgentTaste
from market.recommend.models import Exposure
from market.usage.models import Feedback
from tests.factories import Actor, bundle, fork, make_user, publish

API = "/api/v1"
CONSENTING = 7
NOT_CONSENTING = 3


@dataclass
class Community:
    service: Actor
    person: Actor
    consenting: list[Actor]
    refusing: list[Actor]
    versions: dict[str, int]  # name → version id
    bundles: dict[str, dict]
    canaries: list[str]


def _canaries(i: int) -> dict:
    return {
        "email": f"canary.rater{i}@mailbox.test",
        "phone": f"+1 555 014 {i:04d}",
        "address": f"{i} Canary Lane, Springfield",
        "display_name": f"Canary Person{i}",
    }


def _rate(client, actor: Actor, version_id: int, stars: int, comment: str | None = None):
    """Install the version's sub-agent (only people who installed it rate it), then rate."""
    with Session(app_state(client.application).engine) as session:
        subagent_id = session.get(Version, version_id).subagent_id
    installed = client.post(
        f"{API}/subagents/{subagent_id}/install",
        json={"version_id": version_id},
        headers=actor.headers,
    )
    assert installed.status_code in (200, 201), installed.get_json()
    body = {"version_id": version_id, "stars": stars}
    if comment:
        body["comment"] = comment
    response = client.post(f"{API}/feedback", json=body, headers=actor.headers)
    assert response.status_code in (200, 201), response.get_json()


@pytest.fixture
def community(client, engine) -> Community:
    creator = make_user(engine, "creator")
    forker = make_user(engine, "forker")  # authors rate nothing of theirs: not a rater
    service = make_user(engine, "trainer", kind="service", scopes=["exports"])
    raters, canaries = [], []
    for i in range(CONSENTING + NOT_CONSENTING):
        values = _canaries(i)
        raters.append(make_user(engine, f"rater{i}", **values))
        canaries += list(values.values())
    consenting, refusing = raters[:CONSENTING], raters[CONSENTING:]
    with Session(engine) as session:
        session.execute(
            update(User)
            .where(User.id.in_([r.id for r in consenting]))
            .values(share_feedback_for_training=True)
        )
        session.commit()
    made = {
        "root": bundle("root"),
        "good": bundle("good fork"),
        "bad": bundle("bad fork"),
        "sleep": bundle("sleep"),
    }
    root = publish(client, creator, bundle=made["root"])
    good = fork(client, creator, root["id"], "good", bundle=made["good"])
    bad = fork(client, forker, root["id"], "bad", bundle=made["bad"])
    private = fork(client, creator, root["id"], "private", visibility="private")
    few = fork(client, forker, root["id"], "few")
    sleep = publish(client, creator, title="Sleep Diary", category="sleep", bundle=made["sleep"])
    versions = {
        name: made_["latest_version"]["id"]
        for name, made_ in {
            "root": root,
            "good": good,
            "bad": bad,
            "private": private,
            "few": few,
            "sleep": sleep,
        }.items()
    }
    stars = {"root": 3, "good": 5, "bad": 1, "sleep": 4}
    for i, rater in enumerate(consenting):
        for name, base in stars.items():
            value = max(1, min(5, base + (i % 3) - 1 if name in ("root", "sleep") else base))
            comment = None
            if name == "root":
                c = _canaries(i)
                comment = (
                    f"mail me at {c['email']} or call {c['phone']}, I live at {c['address']}; "
                    f"see https://photos.example.com/u/rater{i}?id=77 and ask @rater{i}; "
                    "paid with 4111 1111 1111 1111, refund to GB82 WEST 1234 5698 7654 32"
                )
            _rate(client, rater, versions[name], value, comment)
        if i < 4:  # "few" gets four consenting raters: under k = 5
            _rate(client, rater, versions["few"], 4)
    for rater in refusing:  # opposite opinions, from people who did not consent
        for name in ("root", "good", "bad", "sleep", "few"):
            _rate(client, rater, versions[name], 1 if name == "good" else 5, "secret opinion")
    # A rating of the private fork from before the rating rules (nobody else may see it, so
    # only its author could have rated it): it must never be exported.
    with Session(engine) as session:
        now = utcnow()
        session.add(
            Feedback(
                user_id=creator.id,
                subagent_id=private["id"],
                version_id=versions["private"],
                scale="stars",
                rating=5,
                tags=[],
                created_at=now,
                updated_at=now,
                updated_day=now.date(),
            )
        )
        session.commit()
    return Community(
        service=service,
        person=raters[0],
        consenting=consenting,
        refusing=refusing,
        versions=versions,
        bundles=made,
        canaries=canaries,
    )


def _runs(engine) -> int:
    with Session(engine) as session:
        return len(session.execute(select(ExportRun.id)).all())


def _export(client, community, **body):
    response = client.post(f"{API}/exports", json=body, headers=community.service.headers)
    assert response.status_code == 202, response.get_json()
    run = response.get_json()
    assert run["status"] == "succeeded", run
    assert response.headers["Location"].endswith(f"/exports/{run['id']}")
    return run


def _run_dir(app, run_id: int) -> Path:
    """The run's folder, where its row says it is (``run-NNNNN-<fingerprint>``)."""
    with Session(app_state(app).engine) as session:
        return Path(session.get(ExportRun, run_id).location)


def _table(run_dir: Path, config: str):
    rows = []
    for path in sorted(run_dir.glob(f"{config}/**/*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


def _contents(run_dir: Path) -> tuple[set[str], str]:
    """Every column name of the run's Parquet files, and all it holds as one text: the rows
    as JSON, and every other file (card, manifest, JSONL) as written."""
    columns, texts = set(), []
    for path in run_dir.rglob("*"):
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            columns.update(table.column_names)
            texts.append(json.dumps(table.to_pylist(), default=str))
        elif path.is_file():
            texts.append(path.read_text(encoding="utf-8"))
    return columns, "\n".join(texts)


# --------------------------------------------------------------------------- access
def test_exports_need_a_service_token_with_the_exports_scope(client, engine, community):
    assert client.post(f"{API}/exports", json={}).status_code == 401
    person = client.post(f"{API}/exports", json={}, headers=community.person.headers)
    assert person.status_code == 403
    other = make_user(engine, "recommender", kind="service", scopes=["recommend"])
    assert client.post(f"{API}/exports", json={}, headers=other.headers).status_code == 403
    assert client.get(f"{API}/exports/1", headers=other.headers).status_code == 403
    assert _runs(engine) == 0


@pytest.mark.parametrize(
    "body",
    [
        {"k_anonymity": 2},
        {"confidence": "0.9"},
        {"confidence": 1.5},
        {"test_share": 0.9},
        {"include_comments": "yes"},
        {"since_run": "last"},
        {"since_run": 0},
        {"format": "csv"},
    ],
)
def test_bad_requests_are_422_and_start_nothing(client, engine, community, body):
    response = client.post(f"{API}/exports", json=body, headers=community.service.headers)
    assert response.status_code == 422
    assert response.headers["Content-Type"] == "application/problem+json"
    assert _runs(engine) == 0


def test_unknown_runs_and_files_are_404(client, community):
    headers = community.service.headers
    assert client.get(f"{API}/exports/999", headers=headers).status_code == 404
    missing = client.post(f"{API}/exports", json={"since_run": 999}, headers=headers)
    assert missing.status_code == 404
    run = _export(client, community)
    base = f"{API}/exports/{run['id']}/files"
    for path in ("../../etc/passwd", "ratings/../manifest.json", "nothing.parquet", "README"):
        assert client.get(f"{base}/{path}", headers=headers).status_code == 404


# --------------------------------------------------------------------------- contents
def test_an_export_holds_what_consenting_raters_said_about_public_versions(app, client, community):
    run = _export(client, community)
    v = community.versions
    run_dir = _run_dir(app, run["id"])
    scalar = {row["version_id"]: row for row in _table(run_dir, "scalar")}
    # The private fork never appears; "few" has four consenting raters (k = 5).
    assert set(scalar) == {v["root"], v["good"], v["bad"], v["sleep"]}
    for row in scalar.values():
        assert row["raters"] == CONSENTING  # the three who did not consent are not counted
    assert scalar[v["good"]]["reward"] > scalar[v["root"]]["reward"] > scalar[v["bad"]]["reward"]
    assert scalar[v["good"]]["stars_mean"] == 5.0  # the refusers' 1-star ratings are not in
    # The completion is the bundle's canonical serialization (market.catalog.bundles).
    good = community.bundles["good"]
    assert (
        scalar[v["good"]]["completion"]
        == bundles.canonical_bytes(good["manifest"], dict(sorted(good["files"].items()))).decode()
    )
    assert "please change it: good" in scalar[v["good"]]["prompt"]
    assert "Log every glass toward three litres a day." in scalar[v["good"]]["prompt"]
    assert scalar[v["good"]]["parent_version_id"] == v["root"]

    pairs = _table(run_dir, "pairwise")
    found = {(p["chosen_version_id"], p["rejected_version_id"]): p["relation"] for p in pairs}
    assert found[(v["good"], v["root"])] == "parent_child"
    assert found[(v["good"], v["bad"])] == "sibling"
    for pair in pairs:
        assert pair["p_chosen_better"] >= 0.95 and pair["margin"] > 0

    ratings = _table(run_dir, "ratings")
    assert len(ratings) == 4 * CONSENTING
    by_rater = {}
    for row in ratings:
        by_rater.setdefault(row["rater"], set()).add(row["version_id"])
    # One pseudonym per person, the same on all four of that person's ratings.
    assert len(by_rater) == CONSENTING
    assert all(versions == set(scalar) for versions in by_rater.values())
    assert all(row["comment"] is None for row in ratings)  # not asked for


def test_no_raw_id_or_personal_value_appears_anywhere(app, client, engine, community):
    run = _export(client, community, include_comments=True, openai_jsonl=True)
    run_dir = _run_dir(app, run["id"])
    columns, everything = _contents(run_dir)
    assert not {"user_id", "email", "phone", "handle"} & columns
    for canary in community.canaries:
        assert canary not in everything, canary
    for i in range(CONSENTING + NOT_CONSENTING):
        assert f"rater{i}" not in everything  # handles, as words or @mentions
    raters = {row["rater"] for row in _table(run_dir, "ratings")}
    user_ids = {str(a.id) for a in community.consenting + community.refusing}
    assert not raters & user_ids
    assert all(len(r) == 32 and int(r, 16) >= 0 for r in raters)
    comments = [row["comment"] for row in _table(run_dir, "ratings") if row["comment"]]
    assert len(comments) == CONSENTING  # the refusers' comments are not there either
    for comment in comments:
        assert "[email]" in comment and "[phone]" in comment and "[url]" in comment
        assert "[handle]" in comment and "[personal]" in comment
        assert "[card]" in comment and "[iban]" in comment
    assert "4111" not in everything and "WEST" not in everything
    assert "secret opinion" not in everything


def test_no_taste_factor_or_personal_score_is_exported(app, client, engine, community):
    """What the personal scores learned of each rater (``rater_taste``: what their ratings say
    they like) and what a slate believed of each candidate for one person (an exposure's pool
    belief and context) stay out: a rater's rows carry their ratings, their leniency and the
    cited exposure's propensity, nothing from which their taste vector could be read."""
    raters = community.consenting + community.refusing
    # Factor digits no other value of the export has: 0.<i>7391<i>5, -0.<i>2846<i>3.
    digits = [(f"{i}7391{i}5", f"{i}2846{i}3") for i in range(len(raters))]
    liked_digits = "9182736"
    with Session(engine) as session:
        for rater, (first, second) in zip(raters, digits, strict=True):
            session.add(
                RaterTaste(user_id=rater.id, factors=[float(f"0.{first}"), -float(f"0.{second}")])
            )
        good = session.get(Version, community.versions["good"])
        session.add(SubAgentTaste(subagent_id=good.subagent_id, factors=[1.5, -0.25]))
        # One consenting rating of the good fork cites the slate that showed it.
        shown = Exposure(
            decision_id=uuid.uuid4(),
            slot=0,
            user_id=community.consenting[0].id,
            subagent_id=good.subagent_id,
            version_id=good.id,
            propensity=0.3141,
            policy_version="test",
            context={"context": "canary slate context", "personal": True},
            slot_distribution={str(good.subagent_id): 0.3141},
            pool_belief={str(good.subagent_id): [float(f"2.{liked_digits}"), 0.3, False]},
        )
        session.add(shown)
        rating = session.execute(
            select(Feedback).where(
                Feedback.user_id == community.consenting[0].id, Feedback.version_id == good.id
            )
        ).scalar_one()
        rating.exposure_id = shown.id
        session.commit()
    run = _export(client, community, include_comments=True, openai_jsonl=True)
    run_dir = _run_dir(app, run["id"])
    columns, everything = _contents(run_dir)
    assert not [c for c in columns if {"taste", "factor", "belief"} & set(c.split("_"))]
    # The export did read the cited exposure: its propensity is the one thing it takes.
    assert [row["propensity"] for row in _table(run_dir, "ratings") if row["propensity"]] == [
        pytest.approx(0.3141)
    ]
    for first, second in digits:
        assert first not in everything and second not in everything
    assert liked_digits not in everything
    assert "canary slate context" not in everything


def test_pseudonyms_differ_from_one_export_to_the_next(app, client, community):
    first = _export(client, community)
    second = _export(client, community)
    assert second["id"] == first["id"] + 1
    names = [
        {row["rater"] for row in _table(_run_dir(app, run["id"]), "ratings")}
        for run in (first, second)
    ]
    assert len(names[0]) == len(names[1]) == CONSENTING
    assert not names[0] & names[1]


def test_the_api_lists_every_file_with_its_hash_and_serves_it(client, community):
    run = _export(client, community)
    fetched = client.get(f"{API}/exports/{run['id']}", headers=community.service.headers)
    assert fetched.status_code == 200
    body = fetched.get_json()
    assert body["manifest"]["counts"]["ratings"]["total"] == 4 * CONSENTING
    assert body["watermark"] and body["manifest"]["code_version"]
    paths = {f["path"] for f in body["files"]}
    assert "README.md" in paths and any(p.startswith("pairwise/") for p in paths)
    for entry in body["files"]:
        response = client.get(entry["url"], headers=community.service.headers)
        assert response.status_code == 200, entry["path"]
        assert hashlib.sha256(response.data).hexdigest() == entry["sha256"]
        assert len(response.data) == entry["bytes"]
        if entry["path"].endswith(".parquet"):
            assert pq.read_table(io.BytesIO(response.data)).num_rows == entry["rows"]
    manifest = client.get(
        f"{API}/exports/{run['id']}/files/manifest.json", headers=community.service.headers
    )
    assert json.loads(manifest.data)["run"] == run["id"]


def test_the_run_loads_with_datasets_by_its_card(app, client, community, tmp_path):
    run = _export(client, community, test_share=0.0)
    run_dir = _run_dir(app, run["id"])
    pairwise = datasets.load_dataset(str(run_dir), name="pairwise", cache_dir=str(tmp_path))
    assert set(pairwise) == {"train"}  # test_share 0: every root in train
    assert len(pairwise["train"]) == run["manifest"]["counts"]["pairwise"]["total"]
    conversational = datasets.load_dataset(
        str(run_dir), name="unpaired_conversational", cache_dir=str(tmp_path)
    )["train"]
    for row in conversational:
        assert row["prompt"][0]["role"] == "user" and isinstance(row["label"], bool)


# --------------------------------------------------------------------------- incremental
def test_incremental_runs_carry_only_what_changed_after_the_watermark(app, client, community):
    first = _export(client, community)
    nothing_new = _export(client, community, incremental=True)
    assert nothing_new["since_run"] == first["id"]
    assert nothing_new["manifest"]["kind"] == "incremental"
    assert nothing_new["manifest"]["counts"]["ratings"]["total"] == 0
    assert nothing_new["manifest"]["counts"]["scalar"]["total"] == 0
    _rate(client, community.consenting[0], community.versions["sleep"], 2)  # re-rated
    changed = _export(client, community, since_run=nothing_new["id"])
    run_dir = _run_dir(app, changed["id"])
    assert [r["version_id"] for r in _table(run_dir, "scalar")] == [community.versions["sleep"]]
    ratings = _table(run_dir, "ratings")
    assert [(r["version_id"], r["rating"]) for r in ratings] == [(community.versions["sleep"], 2)]
    # The first run is untouched: immutable.
    assert len(_table(_run_dir(app, first["id"]), "ratings")) == 4 * CONSENTING


def test_an_incremental_run_needs_a_run_that_succeeded(client, engine, community):
    with Session(engine) as session:
        failed = ExportRun(status="failed", parameters={})
        session.add(failed)
        session.commit()
        failed_id = failed.id
    response = client.post(
        f"{API}/exports", json={"since_run": failed_id}, headers=community.service.headers
    )
    assert response.status_code == 409


# --------------------------------------------------------------------------- CLI and task
@pytest.fixture
def cli_env(monkeypatch, database_url, tmp_path):
    monkeypatch.setenv("SPRIG_DATABASE_URL", database_url)
    monkeypatch.setenv("SPRIG_EXPORT_SETTLE_SECONDS", "0")
    monkeypatch.setenv("SPRIG_EXPORT_DIR", str(tmp_path / "default-exports"))
    return tmp_path


def test_cli_exports_a_numbered_run_and_then_an_incremental_one(community, cli_env):
    out = cli_env / "cli-exports"
    runner = CliRunner()
    first = runner.invoke(cli, ["export-rewards", "--out", str(out), "--no-progress"])
    assert first.exit_code == 0, first.output
    assert "ratings: 28 rows" in first.output
    runs = sorted(p.name for p in out.iterdir())
    assert len(runs) == 1 and runs[0].startswith("run-")
    again = runner.invoke(cli, ["export-rewards", "--out", str(out), "--since", "last"])
    assert again.exit_code == 0, again.output
    assert "ratings: 0 rows" in again.output
    assert len(list(out.iterdir())) == 2
    bad = runner.invoke(cli, ["export-rewards", "--out", str(out), "--since", "yesterday"])
    assert bad.exit_code != 0 and "run number" in bad.output


def test_the_celery_task_builds_a_queued_run(community, app, engine):
    """The task runs in the app's context: its engine and its export directory."""
    from feedback.export import ExportParameters
    from market.exports.services import create_run
    from market.exports.tasks import export_rewards_task

    with Session(engine) as session:
        run_id = create_run(session, ExportParameters()).id
        session.commit()
    result = export_rewards_task.apply(args=[run_id]).get()
    assert result == {"run": run_id, "status": "succeeded", "error": None}
    assert (_run_dir(app, run_id) / "manifest.json").is_file()
    # Delivered twice (acks_late after a lost worker): the finished run is left as it is.
    assert export_rewards_task.apply(args=[run_id]).get()["status"] == "succeeded"


def test_with_the_task_queue_away_an_export_is_refused_with_retry_after_and_stays_queued(
    database_url, tmp_path
):
    """Production mode (a worker runs exports) with the broker unreachable: the request says
    so with a 503 and a Retry-After, and the run it created stays queued, not lost and not
    marked failed, for a later try or ``sprig export-rewards`` to run."""
    from tests.conftest import make_app

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with make_app(
        database_url,
        redis_url=f"redis://127.0.0.1:{closed_port}/0",
        celery_eager=False,
        export_dir=str(tmp_path / "exports"),
    ) as app:
        client = app.test_client()
        trainer = make_user(app_state(app).engine, "trainer", kind="service", scopes=["exports"])
        response = client.post(f"{API}/exports", json={}, headers=trainer.headers)
        assert response.status_code == 503, response.get_json()
        assert response.headers["Retry-After"] == "30"
        assert "queued" in response.get_json()["detail"]
        with Session(app_state(app).engine) as session:
            runs = session.execute(select(ExportRun.status)).scalars().all()
        assert runs == ["queued"]
        assert not (tmp_path / "exports").exists() or not any((tmp_path / "exports").iterdir())
