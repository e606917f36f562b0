"""The suggestion index's snapshot on a real PostgreSQL: a master reads it back instead of the
catalog and catches it up with what changed after it was written (writing it back, so the next
master starts from there), its workers take that build over, and a snapshot that may not stand
in for the database (other code, another incarnation of the database, too old, from the
database's future) is refused and replaced by a build."""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import event
from sqlmodel import Session

from market.app import create_app
from market.platform.db import make_engine
from market.platform.migrate import upgrade
from market.platform.state import app_state
from market.suggestions import services, snapshot
from market.suggestions.services import IndexBuild, SuggestionService, build_before_fork
from tests import two_nodes

pytestmark = pytest.mark.postgres

DATABASE = "sprig_index_snapshot"
HOUR = 3600.0


@pytest.fixture
def catalog():
    base_url = os.environ.get("SPRIG_TEST_POSTGRES_URL")
    if not base_url:
        pytest.skip("needs PostgreSQL (scripts/test-services.sh)")
    url = two_nodes.fresh_database(base_url, DATABASE)
    upgrade(url)
    app = create_app({"database_url": url, "secret_key": "snapshot", "read_cache_seconds": 0})
    author = two_nodes.make_actors(url)["author"].headers
    engine = make_engine(url)
    yield url, app.test_client(), author, engine
    engine.dispose()
    app_state(app).engine.dispose()
    app_state(app).read_engine.dispose()


def publish(client, author, word: str) -> int:
    response = client.post("/api/v1/subagents", json=two_nodes.listing(word), headers=author)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def master_build(engine, directory, max_age: float = HOUR) -> IndexBuild:
    """What a gunicorn master hands its workers (``build_before_fork``)."""
    build_before_fork(engine, str(directory), max_age)
    built = services._inherited_build(engine)
    assert built is not None and built.inherited
    return built


def logged_master_build(engine, directory, caplog, max_age: float = HOUR) -> IndexBuild:
    """``master_build`` with only its own log lines in ``caplog``."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="market.suggestions.services"):
        return master_build(engine, directory, max_age)


def found(index, word: str) -> set[int]:
    """The listings that have ``word`` (a made-up one): others match only some trigrams."""
    return {match.subagent_id for match in index.search(word, limit=20) if match.word_relevance}


def ranked(index, query: str) -> list[tuple[int, float]]:
    return [(m.subagent_id, round(m.relevance, 9)) for m in index.search(query, limit=20)]


def same_arrays(first: IndexBuild, second: IndexBuild) -> bool:
    a, b = first.index.to_arrays(), second.index.to_arrays()
    return a.keys() == b.keys() and all(
        a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]) for name in a
    )


def test_a_master_reads_the_snapshot_back_and_catches_it_up_for_its_workers(
    catalog, tmp_path, caplog, monkeypatch
):
    _url, client, author, engine = catalog
    kept, hidden = two_nodes.unique_word(), two_nodes.unique_word()
    kept_id, hidden_id = publish(client, author, kept), publish(client, author, hidden)
    first = logged_master_build(engine, tmp_path, caplog)
    assert "suggestion index built" in caplog.text
    assert "snapshot written" in caplog.text
    (written,) = tmp_path.glob("suggestions-*.npz")
    second = logged_master_build(engine, tmp_path, caplog)
    assert "loaded from its snapshot" in caplog.text
    assert "suggestion index built" not in caplog.text
    # Read back, it is the build it was written from, marks included.
    assert same_arrays(first, second)
    assert second.indexed_at == first.indexed_at and second.watermark == first.watermark
    assert (second.version_mark, second.versions_seen) == (first.version_mark, first.versions_seen)
    assert found(second.index, kept) == {kept_id} and found(second.index, hidden) == {hidden_id}

    # Nothing changed since it was written, and it is young: it is left as it was.
    assert "caught up with the database: 0 sub-agents" in caplog.text
    assert "snapshot written" not in caplog.text
    assert written.exists()

    # After it was written: a listing made private, then a publish. Without the few seconds
    # of overlap kept for late commits, only the snapshot's own marks find the first.
    monkeypatch.setattr(services, "CATCH_UP_OVERLAP", timedelta(0))
    response = client.patch(
        f"/api/v1/subagents/{hidden_id}", json={"visibility": "private"}, headers=author
    )
    assert response.status_code == 200, response.get_json()
    late = two_nodes.unique_word()
    late_id = publish(client, author, late)
    third = logged_master_build(engine, tmp_path, caplog)  # the next master, from the same snapshot
    # The master caught up itself, once for all its workers, and wrote the result back.
    assert "caught up with the database: 2 sub-agents" in caplog.text
    assert "snapshot written" in caplog.text
    assert found(third.index, late) == {late_id}
    assert found(third.index, hidden) == set()
    assert found(third.index, kept) == {kept_id}
    services._before_fork = third
    service = SuggestionService(engine)  # a worker: takes the master's build over
    with Session(engine) as session:
        assert service.catch_up(session) == 0  # nothing left for it to read
    # The same answers as a build read from the database now, from the worker and from the
    # snapshot the next master reads.
    fourth = logged_master_build(engine, tmp_path, caplog)
    assert "loaded from its snapshot" in caplog.text
    assert "caught up with the database: 0 sub-agents" in caplog.text
    with Session(engine) as session:
        fresh = IndexBuild.read(session).index
    for word in (kept, hidden, late, "water tracker"):
        assert ranked(service.index, word) == ranked(fresh, word)
        assert ranked(fourth.index, word) == ranked(fresh, word)


def test_a_snapshot_past_half_its_age_is_written_again_though_nothing_changed(
    catalog, tmp_path, caplog, monkeypatch
):
    _url, client, author, engine = catalog
    word = two_nodes.unique_word()
    subagent_id = publish(client, author, word)
    master_build(engine, tmp_path)
    (written,) = tmp_path.glob("suggestions-*.npz")
    before = written.stat().st_mtime_ns
    now = services.time.time
    monkeypatch.setattr(services.time, "time", lambda: now() + 0.6 * HOUR)
    built = logged_master_build(engine, tmp_path, caplog, max_age=HOUR)
    assert "loaded from its snapshot" in caplog.text
    assert "caught up with the database: 0 sub-agents" in caplog.text
    assert "snapshot written" in caplog.text
    assert written.stat().st_mtime_ns != before
    assert found(built.index, word) == {subagent_id}
    # Read back an hour later still, it is 0.4 hours old, not 1.0: it stands in.
    monkeypatch.setattr(services.time, "time", lambda: now() + 1.0 * HOUR)
    logged_master_build(engine, tmp_path, caplog, max_age=HOUR)
    assert "loaded from its snapshot" in caplog.text
    assert "snapshot not used" not in caplog.text


def test_a_master_whose_catch_up_fails_hands_its_workers_the_snapshot_to_catch_up_from(
    catalog, tmp_path, caplog, monkeypatch
):
    _url, client, author, engine = catalog
    early = two_nodes.unique_word()
    early_id = publish(client, author, early)
    master_build(engine, tmp_path)
    late = two_nodes.unique_word()
    late_id = publish(client, author, late)

    def unreachable(self, session, force=False):
        raise ConnectionError("the database went away")

    real = SuggestionService.catch_up
    monkeypatch.setattr(SuggestionService, "catch_up", unreachable)
    built = logged_master_build(engine, tmp_path, caplog)
    assert "not caught up before forking" in caplog.text
    assert "suggestion index built" not in caplog.text
    assert found(built.index, late) == set()  # the snapshot as it was
    monkeypatch.setattr(SuggestionService, "catch_up", real)
    services._before_fork = built
    service = SuggestionService(engine)  # a worker: takes it over and catches up itself
    with Session(engine) as session:
        assert service.catch_up(session) >= 1
    assert found(service.index, late) == {late_id}
    assert found(service.index, early) == {early_id}


def test_a_master_removes_the_snapshots_and_partial_files_no_master_can_use(
    catalog, tmp_path, caplog
):
    """Another database's snapshot (its server moved to a new URL) and what a writer killed
    mid-write left are removed once older than a snapshot may stand in; younger ones may be
    another master's, live or still being written, and stay."""
    _url, client, author, engine = catalog
    publish(client, author, two_nodes.unique_word())
    two_hours_ago = time.time() - 2 * HOUR
    files = {
        "moved": tmp_path / "suggestions-0123456789abcdef.npz",
        "killed": tmp_path / ".suggestions-0123456789abcdef.npz.k1ll3d",
        "other": tmp_path / "suggestions-fedcba9876543210.npz",
        "writing": tmp_path / ".suggestions-fedcba9876543210.npz.wr1t1n",
        "not ours": tmp_path / "notes.txt",
    }
    for name, path in files.items():
        path.write_bytes(b"x" * 64)
        if name in ("moved", "killed", "not ours"):
            os.utime(path, (two_hours_ago, two_hours_ago))
    logged_master_build(engine, tmp_path, caplog, max_age=HOUR)
    assert "snapshot written" in caplog.text
    assert not files["moved"].exists() and not files["killed"].exists()
    assert all(files[name].exists() for name in ("other", "writing", "not ours"))
    own = snapshot.snapshot_path(str(tmp_path), services._database_of(engine))
    assert own.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [own.name, *(files[name].name for name in ("other", "writing", "not ours"))]
    )
    # Snapshots never refused for age (no age limit) are never removed either.
    os.utime(files["other"], (two_hours_ago, two_hours_ago))
    assert snapshot.remove_stale(tmp_path, 0) == []
    assert files["other"].exists()


def test_a_snapshot_that_may_not_stand_in_for_the_database_is_rebuilt(
    catalog, tmp_path, caplog, monkeypatch
):
    url, client, author, engine = catalog
    word = two_nodes.unique_word()
    subagent_id = publish(client, author, word)
    master_build(engine, tmp_path)
    path = snapshot.snapshot_path(str(tmp_path), services._database_of(engine))

    def refused(reason: str, max_age: float = HOUR) -> IndexBuild:
        built = logged_master_build(engine, tmp_path, caplog, max_age)
        (refusal,) = [r.message for r in caplog.records if "snapshot not used" in r.message]
        assert reason in refusal
        assert "suggestion index built" in caplog.text
        return built

    # Too old for the configured age.
    refused("hours old", max_age=0)
    # Cut short (a disk that filled up under another writer), or not a snapshot at all.
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    refused("unreadable")
    path.write_bytes(b"not a snapshot")
    refused("unreadable")
    # Written by other code: a changed featurizer would answer with features nobody asks for.
    real = services._document_source
    monkeypatch.setattr(services, "_document_source", lambda: "documents made otherwise")
    refused("written by other code")
    monkeypatch.setattr(services, "_document_source", real)
    # From the database's future (a restore of an older backup): marks ahead of the database.
    with Session(engine) as session:
        ahead = IndexBuild.read(session)
        ahead.version_mark += 1000
        ahead.save(path, snapshot.database_identity(session))
    refused("newer than the database")
    with Session(engine) as session:
        ahead = IndexBuild.read(session)
        ahead.watermark += timedelta(days=1)
        ahead.save(path, snapshot.database_identity(session))
    refused("newer than the database")
    # Another incarnation of the database under the same URL: dropped, created and migrated
    # again, with other rows under the same ids.
    engine.dispose()
    app_state(client.application).engine.dispose()
    app_state(client.application).read_engine.dispose()
    two_nodes.fresh_database(os.environ["SPRIG_TEST_POSTGRES_URL"], DATABASE)
    upgrade(url)
    author = two_nodes.make_actors(url)["author"].headers
    other = two_nodes.unique_word()
    other_id = publish(client, author, other)
    rebuilt = refused("of another incarnation of the database")
    assert found(rebuilt.index, other) == {other_id}
    assert found(rebuilt.index, word) == set() or subagent_id == other_id


def test_a_catch_up_of_many_changes_reads_in_chunks_and_applies_in_batches(
    catalog, tmp_path, monkeypatch
):
    """Applying a catch-up passes over every segment's postings once per batch (seconds at
    a million sub-agents when batches were the 500 rows of each read): rows are read a chunk
    at a time but applied a batch at a time, with the same answers as a fresh build."""
    _url, client, author, engine = catalog
    words = [two_nodes.unique_word() for _ in range(7)]
    ids = [publish(client, author, word) for word in words]
    master_build(engine, tmp_path)  # writes the snapshot
    for subagent_id in ids[:2]:  # made private after the snapshot: to be dropped
        response = client.patch(
            f"/api/v1/subagents/{subagent_id}", json={"visibility": "private"}, headers=author
        )
        assert response.status_code == 200, response.get_json()
    late_words = [two_nodes.unique_word() for _ in range(5)]
    late_ids = [publish(client, author, word) for word in late_words]
    with Session(engine) as session:
        stale = IndexBuild.load(
            snapshot.snapshot_path(str(tmp_path), services._database_of(engine)),
            session,
            snapshot.database_identity(session),
            HOUR,
        )
    monkeypatch.setattr(services, "REINDEX_READ_ROWS", 2)
    monkeypatch.setattr(services, "REINDEX_APPLY_ROWS", 4)
    applied, read = [], []
    index_add_many = type(stale.index).add_many

    def counted_add_many(index, documents):
        documents = list(documents)
        applied.append(len(documents))
        index_add_many(index, documents)

    def remember(_conn, _cursor, statement, _parameters, _context, _many):
        if "JOIN subagent_version" in statement:
            read.append(statement)

    monkeypatch.setattr(type(stale.index), "add_many", counted_add_many)
    service = SuggestionService(engine)
    service.adopt(stale)
    event.listen(engine, "before_cursor_execute", remember)
    try:
        with Session(engine) as session:
            changed = service.catch_up(session)
    finally:
        event.remove(engine, "before_cursor_execute", remember)
    assert changed == 7  # two made private, five published
    assert len(read) == 4  # 7 ids, 2 a statement: 2 + 2 in the first batch of 4, 2 + 1
    assert applied == [2, 3]  # the first batch holds the two made private
    with Session(engine) as session:
        fresh = IndexBuild.read(session).index
    for word in [*words, *late_words]:
        assert ranked(service.index, word) == ranked(fresh, word)
    assert all(found(service.index, word) == set() for word in words[:2])
    assert [found(service.index, word) for word in late_words] == [{i} for i in late_ids]
