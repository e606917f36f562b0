"""A client generated from the served OpenAPI document works unchanged.

``openapi-python-client`` (what many Python callers use) generates a package from
``/api/v1/openapi.json`` as a running app serves it, with no warning at all (a duplicate
model name or a body it cannot type makes it drop whole models: every call then answers
with ``.parsed`` None). The generated package then drives publish → fork → a new version
from a zip → browse → lineage → install → events → feedback → stats over HTTP, and every
answer must parse into the generated model class, errors included (a typed ``Problem``).
"""

from __future__ import annotations

import importlib
import io
import json
import subprocess
import sys
import threading
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from openapi_spec_validator import validate
from werkzeug.serving import make_server

from evolution.explore import POLICY_VERSION
from market.app import create_app
from market.platform.db import session_scope
from market.ranking.models import RaterTaste, SubAgentTaste
from tests.factories import app_bundle, bundle, catalog_of_templates, make_user, publish

API = "/api/v1"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "sprig_client"


@contextmanager
def serving(app) -> Iterator[str]:
    """``app`` on a free loopback port, in a thread; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generated package, imported. The document does not depend on the database, so an
    app that never connects serves it once for every backend's test."""
    app = create_app({"database_url": "sqlite://", "testing": True, "secret_key": "doc"})
    out = tmp_path_factory.mktemp("generated")
    config = out / "config.yaml"
    # Everything at the generator's defaults but its formatter run (ruff, on the output):
    # the code is used as generated, not reformatted.
    config.write_text("post_hooks: []\n")
    with serving(app) as base:
        document = httpx.get(f"{base}{API}/openapi.json").json()
        result = subprocess.run(
            [
                str(GENERATOR),
                "generate",
                "--url",
                f"{base}{API}/openapi.json",
                "--meta",
                "none",
                "--output-path",
                str(out / PACKAGE),
                "--config",
                str(config),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    sys.path.insert(0, str(out))
    try:
        package = importlib.import_module(PACKAGE)
        yield SimpleNamespace(
            document=document,
            output=output,
            package=package,
            models=importlib.import_module(f"{PACKAGE}.models"),
            types=importlib.import_module(f"{PACKAGE}.types"),
            api=lambda tag, name: importlib.import_module(f"{PACKAGE}.api.{tag}.{name}"),
        )
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_the_generator_has_nothing_to_warn_about(generated):
    noise = [
        line
        for line in generated.output.splitlines()
        if line.strip() and not line.startswith("Generating ")
    ]
    assert noise == [], generated.output
    validate(generated.document)


def test_every_operation_is_named_once_and_every_model_is_one_component(generated):
    operations = [
        operation
        for path_item in generated.document["paths"].values()
        for operation in path_item.values()
    ]
    ids = [operation.get("operationId") for operation in operations]
    assert None not in ids
    assert len(set(ids)) == len(ids)
    schemas = generated.document["components"]["schemas"]
    assert [name for name in schemas if "." in name] == []
    titles = [schema["title"] for schema in schemas.values() if "title" in schema]
    assert len(set(titles)) == len(titles)
    bodies = [operation["requestBody"] for operation in operations if "requestBody" in operation]
    assert [body for body in bodies if len(body["content"]) != 1] == []  # one typed call each


def test_integer_ids_are_integers_and_anything_else_is_a_404_problem(generated, client):
    get_subagent = generated.document["paths"][f"{API}/subagents/{{subagent_id}}"]["get"]
    (parameter,) = get_subagent["parameters"]
    assert parameter["schema"]["type"] == "integer"
    assert (parameter["schema"]["minimum"], parameter["schema"]["maximum"]) == (0, 2**31 - 1)
    # Beyond the documented maximum too: a 404, not a 405 from a rule of another method.
    for bad in ("abc", "1.5", "-1", str(2**31), "9" * 12):
        for method, path in [
            ("GET", f"{API}/subagents/{bad}"),
            ("PATCH", f"{API}/subagents/{bad}"),
            ("DELETE", f"{API}/subagents/{bad}/install"),
            ("GET", f"{API}/subagents/{bad}/forks"),
            ("GET", f"{API}/exports/{bad}"),
        ]:
            response = client.open(path, method=method)
            assert response.status_code == 404, (method, path)
            assert response.headers["Content-Type"] == "application/problem+json"


def _zip(files: dict[str, str], manifest: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def test_a_generated_client_drives_the_whole_flow(generated, app, engine):
    alice, bob, carol = (make_user(engine, h) for h in ("alice", "bob", "carol"))
    service = make_user(engine, "tracker", kind="service", scopes=["events:write"])
    m, api, types = generated.models, generated.api, generated.types
    with serving(app) as base:

        def as_(actor):
            return generated.package.AuthenticatedClient(base_url=base, token=actor.token)

        anyone = generated.package.Client(base_url=base)

        published = api("sub_agents", "publish_subagent").sync_detailed(
            client=as_(alice),
            body=m.PublishIn(
                title="Water Tracker",
                category=m.Category.HYDRATION,
                summary="Log every glass.",
                tags=["water"],
                bundle=m.BundleIn.from_dict(bundle("root")),
            ),
        )
        assert published.status_code == 201
        root = published.parsed
        assert isinstance(root, m.PublishedOut)
        assert root.near_copies == []
        assert isinstance(root.author, m.AuthorOut) and root.author.handle == "alice"
        assert isinstance(root.latest_version, m.VersionOut) and root.latest_version.number == 1

        forked = api("sub_agents", "fork_subagent").sync_detailed(
            root.id,
            client=as_(bob),
            body=m.ForkIn(
                title="Water for Kids",
                fork_request="bigger buttons for children",
                bundle=m.BundleIn.from_dict(bundle("kids")),
            ),
        )
        assert forked.status_code == 201
        fork = forked.parsed
        assert isinstance(fork, m.SubAgentOut)
        assert (fork.parent_id, fork.root_id, fork.depth) == (root.id, root.id, 1)

        kids_v2 = bundle("kids v2")
        zipped = api("sub_agents", "publish_version_zip").sync_detailed(
            fork.id,
            client=as_(bob),
            body=m.PublishVersionZipBody(
                metadata=m.VersionInMetadata(changelog="from a zip"),
                bundle=types.File(
                    payload=io.BytesIO(_zip(kids_v2["files"], kids_v2["manifest"])),
                    file_name="kids.zip",
                    mime_type="application/zip",
                ),
            ),
        )
        assert zipped.status_code == 201, zipped.content
        version = zipped.parsed
        assert isinstance(version, m.VersionOut)
        assert (version.number, version.changelog) == (2, "from a zip")

        browsed = api("sub_agents", "browse_subagents").sync_detailed(
            client=anyone, sort=m.BrowseSort.NEW
        )
        assert browsed.status_code == 200
        assert isinstance(browsed.parsed, m.Page)
        assert all(isinstance(card, m.SubAgentCard) for card in browsed.parsed.items)
        assert {card.id for card in browsed.parsed.items} == {root.id, fork.id}

        lineage = api("sub_agents", "get_lineage").sync_detailed(fork.id, client=anyone).parsed
        assert isinstance(lineage, m.Lineage)
        (node,) = lineage.ancestors
        assert isinstance(node, m.LineageNode) and isinstance(node.subagent, m.SubAgentCard)
        assert (node.depth, node.subagent.id, lineage.root_id) == (0, root.id, root.id)

        installed = api("sub_agents", "install_subagent").sync_detailed(
            fork.id, client=as_(carol), body=m.InstallIn()
        )
        assert installed.status_code == 201
        assert isinstance(installed.parsed, m.InstallOut)
        assert installed.parsed.version_id == version.id

        logged = api("usage_and_stats", "log_events").sync_detailed(
            client=as_(service),
            body=m.EventBatchIn(
                events=[
                    m.UsageEventIn(
                        event_id=uuid.uuid4(),
                        user_id=carol.id,
                        subagent_id=fork.id,
                        version_id=version.id,
                        kind=m.UsageEventInKind.OPEN,
                        occurred_at=datetime.now(UTC),
                        duration_ms=1200,
                    )
                ]
            ),
        )
        assert logged.status_code == 202
        assert isinstance(logged.parsed, m.EventBatchOut)
        assert (logged.parsed.stored, logged.parsed.rejected) == (1, 0), logged.content

        rated = api("usage_and_stats", "rate_version").sync_detailed(
            client=as_(carol),
            body=m.FeedbackIn(version_id=version.id, stars=5, comment="my kids love it"),
        )
        assert rated.status_code == 201, rated.content
        assert isinstance(rated.parsed, m.FeedbackOut)
        assert (rated.parsed.rating, rated.parsed.scale) == (5, "stars")

        stats = api("usage_and_stats", "get_subagent_stats").sync_detailed(fork.id, client=as_(bob))
        assert stats.status_code == 200
        assert isinstance(stats.parsed, m.SubAgentStats)
        assert stats.parsed.install_count == 1
        assert isinstance(stats.parsed.window, m.StatsWindow)


def test_a_generated_client_follows_next_cursor_to_the_end(generated, app, engine):
    """The lists that come a page at a time, read as a generated client reads them: follow
    ``next_cursor`` until it is unset; every item once, in order."""
    alice = make_user(engine, "alice")
    m, api, types = generated.models, generated.api, generated.types
    with serving(app) as base:
        client = generated.package.AuthenticatedClient(base_url=base, token=alice.token)
        first = publish(app.test_client(), alice, title="Water Tracker")
        others = [
            publish(app.test_client(), alice, title=f"Tracker {n}", bundle=bundle(f"t{n}"))["id"]
            for n in range(2)
        ]
        for number in (2, 3, 4):
            made = api("sub_agents", "publish_version").sync_detailed(
                first["id"],
                client=client,
                body=m.VersionIn(
                    changelog=f"v{number}", bundle=m.BundleIn.from_dict(bundle(f"v{number}"))
                ),
            )
            assert made.status_code == 201, made.content

        numbers, cursor, pages = [], types.UNSET, 0
        while True:
            page = api("sub_agents", "list_versions").sync_detailed(
                first["id"], client=client, limit=3, cursor=cursor
            )
            assert page.status_code == 200, page.content
            assert isinstance(page.parsed, m.VersionList)
            numbers += [version.number for version in page.parsed.items]
            pages += 1
            if not isinstance(page.parsed.next_cursor, str):
                break
            cursor = page.parsed.next_cursor
        assert (numbers, pages) == ([1, 2, 3, 4], 2)

        listed, cursor = [], types.UNSET
        while True:
            stats = api("usage_and_stats", "get_creator_stats").sync_detailed(
                "alice", client=client, limit=2, cursor=cursor
            )
            assert stats.status_code == 200, stats.content
            assert isinstance(stats.parsed, m.CreatorStats)
            assert stats.parsed.subagents_total == 3
            listed += [row["id"] for row in stats.parsed.to_dict()["subagents"]]
            if not isinstance(stats.parsed.next_cursor, str):
                break
            cursor = stats.parsed.next_cursor
        # None installed: the table's order is then the oldest first.
        assert listed == [first["id"], *others]


def test_a_generated_client_gets_typed_problems(generated, app, engine):
    """Callers without the right token, or asking for what they may not see, get the status
    the document names and a parsed ``Problem``, never a None."""
    alice, carol = make_user(engine, "alice"), make_user(engine, "carol")
    m, api = generated.models, generated.api
    with serving(app) as base:
        as_alice = generated.package.AuthenticatedClient(base_url=base, token=alice.token)
        as_carol = generated.package.AuthenticatedClient(base_url=base, token=carol.token)
        forged = generated.package.AuthenticatedClient(base_url=base, token="sprig_forged")
        listing = m.PublishIn(
            title="Sleep Diary",
            category=m.Category.SLEEP,
            visibility=m.Visibility.PRIVATE,
            bundle=m.BundleIn.from_dict(bundle("private")),
        )
        publish = api("sub_agents", "publish_subagent")

        refused = publish.sync_detailed(client=forged, body=listing)
        assert refused.status_code == 401
        assert isinstance(refused.parsed, m.Problem) and refused.parsed.status == 401

        private = publish.sync_detailed(client=as_alice, body=listing).parsed
        assert isinstance(private, m.PublishedOut)
        hidden = api("sub_agents", "get_subagent").sync_detailed(private.id, client=as_carol)
        assert hidden.status_code == 404 and isinstance(hidden.parsed, m.Problem)

        public = publish.sync_detailed(
            client=as_alice,
            body=m.PublishIn(
                title="Water Tracker",
                category=m.Category.HYDRATION,
                bundle=m.BundleIn.from_dict(bundle("public")),
            ),
        ).parsed
        yanked = api("sub_agents", "yank_subagent").sync_detailed(
            public.id, client=as_carol, body=m.YankIn(reason="not mine to yank")
        )
        assert yanked.status_code == 403 and isinstance(yanked.parsed, m.Problem)

        # A person's token has no `events:write`: only services log events.
        events = api("usage_and_stats", "log_events").sync_detailed(
            client=as_carol, body=m.EventBatchIn(events=[])
        )
        assert events.status_code == 403 and isinstance(events.parsed, m.Problem)


def test_a_generated_client_is_offered_the_original_and_adopts_it(generated, app, engine, client):
    alice, bob, carol = (make_user(engine, h) for h in ("alice", "bob", "carol"))
    water = catalog_of_templates(client, engine, alice, carol)
    m, api = generated.models, generated.api
    with serving(app) as base:
        as_bob = generated.package.AuthenticatedClient(base_url=base, token=bob.token)
        published = api("sub_agents", "publish_subagent").sync_detailed(
            client=as_bob,
            body=m.PublishIn(
                title="Hydration Buddy",
                category=m.Category.HEALTH,
                bundle=m.BundleIn.from_dict(app_bundle("water", "Hydration Buddy")),
            ),
        )
        assert published.status_code == 201
        copy = published.parsed
        assert isinstance(copy, m.PublishedOut)
        [offer] = copy.near_copies
        assert isinstance(offer, m.NearCopyOut) and isinstance(offer.author, m.AuthorOut)
        assert (offer.id, offer.author.handle) == (water["id"], "alice")
        listed = api("sub_agents", "list_near_copies").sync_detailed(copy.id, client=as_bob)
        assert isinstance(listed.parsed, m.NearCopyList)
        assert [o.id for o in listed.parsed.items] == [water["id"]]

        adopted = api("sub_agents", "adopt_parent").sync_detailed(
            copy.id, client=as_bob, body=m.AdoptParentIn(parent_id=water["id"])
        )
        assert adopted.status_code == 200
        assert isinstance(adopted.parsed, m.SubAgentOut)
        assert (adopted.parsed.parent_id, adopted.parsed.root_id) == (water["id"], water["id"])
        declined = api("sub_agents", "decline_near_copies").sync_detailed(copy.id, client=as_bob)
        assert isinstance(declined.parsed, m.SubAgentOut)
        as_alice = generated.package.AuthenticatedClient(base_url=base, token=alice.token)
        refused = api("sub_agents", "adopt_parent").sync_detailed(
            copy.id, client=as_alice, body=m.AdoptParentIn(parent_id=water["id"])
        )
        assert refused.status_code == 403 and isinstance(refused.parsed, m.Problem)


def test_zip_uploads_have_their_own_operation_and_the_json_path_still_reads_them(client, engine):
    """Clients written before the zip operations existed post the zip to the JSON path; that
    keeps working. The zip path reads only a zip upload (415 otherwise)."""
    alice = make_user(engine, "alice")
    files = bundle("zipped")
    upload = {
        "metadata": json.dumps({"title": "Zipped", "category": "hydration"}),
        "bundle": (io.BytesIO(_zip(files["files"], files["manifest"])), "b.zip"),
    }
    old_way = client.post(f"{API}/subagents", data=upload, headers=alice.headers)
    assert old_way.status_code == 201, old_way.get_json()
    upload["bundle"] = (io.BytesIO(_zip(files["files"], files["manifest"])), "b.zip")
    again = client.post(f"{API}/subagents/zip", data=upload, headers=alice.headers)
    assert again.status_code == 200  # the same bytes: the existing sub-agent
    assert again.get_json()["id"] == old_way.get_json()["id"]
    as_json = client.post(
        f"{API}/subagents/zip",
        json={"title": "Zipped", "category": "hydration", "bundle": files},
        headers=alice.headers,
    )
    assert as_json.status_code == 415
    assert as_json.headers["Content-Type"] == "application/problem+json"


def test_a_generated_client_reads_a_switch_plan_and_switches(generated, app, engine):
    """The plan and the switch through typed calls: per-field verdicts as models, the
    migration as a dict, and a private branch of someone else a typed 404."""
    from tests.functional.catalog.test_data_switch import (
        FEELINGS_MIGRATION,
        fork_feelings,
        fork_tea,
        publish_tea,
        schema,
    )

    alice, bob = make_user(engine, "alice"), make_user(engine, "bob")
    setup = app.test_client()
    tea = publish_tea(setup, alice)
    feelings = fork_feelings(setup, bob, tea["id"], data_migration=FEELINGS_MIGRATION).get_json()
    secret = fork_tea(
        setup, bob, tea["id"], "secret", schema(milk={"type": "boolean"}), visibility="private"
    ).get_json()
    m, api = generated.models, generated.api
    with serving(app) as base:
        as_alice = generated.package.AuthenticatedClient(base_url=base, token=alice.token)
        installed = api("sub_agents", "install_subagent").sync_detailed(
            tea["id"], client=as_alice, body=m.InstallIn()
        )
        assert installed.status_code == 201
        answer = api("sub_agents", "get_switch_plan").sync_detailed(
            tea["id"], client=as_alice, to=feelings["id"]
        )
        assert answer.status_code == 200
        plan = answer.parsed
        assert isinstance(plan, m.SwitchPlanOut) and plan.installed is True
        assert isinstance(plan.change, m.SchemaChangeOut)
        verdicts = {f.name: f.verdict for f in plan.fields}
        assert verdicts["note"] == m.FieldPlanOutVerdict.TRANSFORMED
        assert plan.safe is True
        assert plan.migration.to_dict()["fields"]["remarks"] == {"from": "note"}

        hidden = api("sub_agents", "get_switch_plan").sync_detailed(
            tea["id"], client=as_alice, to=secret["id"]
        )
        assert hidden.status_code == 404 and isinstance(hidden.parsed, m.Problem)

        switched = api("sub_agents", "switch_subagent").sync_detailed(
            tea["id"], client=as_alice, body=m.SwitchIn(to=feelings["id"])
        )
        assert switched.status_code == 201
        assert isinstance(switched.parsed, m.SwitchOut)
        assert switched.parsed.install.subagent_id == feelings["id"]


def test_a_generated_client_gets_only_its_own_personal_slate(generated, app, engine):
    """A slate drawn with Bob's taste parses for Bob and for the main agent; Carol, a
    moderator and the coding agent asking for Bob's get a typed 403 ``Problem``."""
    alice, bob, carol = (make_user(engine, h) for h in ("alice", "bob", "carol"))
    moderator = make_user(engine, "mod", role="moderator")
    agent = make_user(engine, "agent", kind="service", scopes=["recommend"])
    coder = make_user(engine, "coder", kind="service", scopes=["suggest", "publish:on-behalf"])
    water = publish(app.test_client(), alice, title="Water Log", bundle=bundle("water"))
    with session_scope(engine) as session:
        session.add(RaterTaste(user_id=bob.id, factors=[0.5, -0.25]))
        session.add(SubAgentTaste(subagent_id=water["id"], factors=[1.0, 0.5]))
    m, api = generated.models, generated.api
    recommend = api("recommendations", "recommend_subagents")
    with serving(app) as base:

        def for_bob(actor):
            client = generated.package.AuthenticatedClient(base_url=base, token=actor.token)
            return recommend.sync_detailed(client=client, body=m.RecommendationIn(user_id=bob.id))

        for actor in (bob, agent):
            answer = for_bob(actor)
            assert answer.status_code == 200
            assert isinstance(answer.parsed, m.RecommendationOut)
            assert answer.parsed.personal is True
            assert answer.parsed.policy_version == POLICY_VERSION  # the version drawn at SD_SCALE
            assert [item.subagent_id for item in answer.parsed.items] == [water["id"]]
        for actor in (carol, moderator, coder):
            refused = for_bob(actor)
            assert refused.status_code == 403
            assert isinstance(refused.parsed, m.Problem) and refused.parsed.status == 403
