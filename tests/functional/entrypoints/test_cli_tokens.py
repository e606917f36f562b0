"""The ``sprig`` command for scripts: tokens listed, expiring and revoked by id; ``-h`` and
``--help`` everywhere; ``--version``; ``sprig rank``'s report; ``--json`` output that is one
JSON document and nothing else; a bad revision is one line and exit status 2."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import click
import pytest
from click.testing import CliRunner

from market.entrypoints.cli import main as cli

API = "/api/v1"


@pytest.fixture
def runner(monkeypatch, database_url, app) -> CliRunner:
    """A runner on the test database (``app`` wipes it before and after)."""
    monkeypatch.setenv("SPRIG_DATABASE_URL", database_url)
    return CliRunner()


def run(runner: CliRunner, *args: str, code: int = 0):
    result = runner.invoke(cli, list(args), prog_name="sprig")
    assert result.exit_code == code, (result.output, result.exception)
    return result


def as_json(runner: CliRunner, *args: str):
    """Run with --json: stdout must be exactly one JSON document."""
    result = run(runner, *args, "--json")
    return json.loads(result.stdout)


def every_command(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from every_command(command, (*path, name))


def test_version(runner):
    result = run(runner, "--version")
    assert result.output.startswith("sprig, version ")


def test_dash_h_is_help_on_every_command(runner):
    commands = list(every_command(cli))
    assert ("tokens", "list") in commands and ("tokens", "revoke") in commands
    for command in [(), *commands]:
        short, long = run(runner, *command, "-h"), run(runner, *command, "--help")
        assert short.output == long.output and short.output.startswith("Usage: sprig")


def test_create_list_revoke_tokens_for_scripts(runner, client):
    assert as_json(runner, "users", "create", "ann") == {
        "id": 1,
        "handle": "ann",
        "kind": "person",
        "role": "user",
    }
    made = as_json(runner, "tokens", "create", "ann", "--name", "laptop")
    assert made["token"].startswith(made["prefix"]) and made["name"] == "laptop"
    assert made["state"] == "active" and made["revoked_at"] is None
    created = datetime.fromisoformat(made["created_at"])
    assert datetime.fromisoformat(made["expires_at"]) - created == timedelta(days=90)
    forever = as_json(runner, "tokens", "create", "ann", "--expires-days", "0")
    assert forever["expires_at"] is None
    plain = run(runner, "tokens", "create", "ann").output.strip()
    assert plain.startswith("sprig_") and "\n" not in plain

    listing = as_json(runner, "tokens", "list", "--user", "ann")
    assert listing["user"] == "ann"
    assert [token["id"] for token in listing["tokens"]] == [3, 2, 1]
    text = json.dumps(listing)
    assert made["token"] not in text and forever["token"] not in text and plain not in text
    table = run(runner, "tokens", "list", "--user", "ann").output.splitlines()
    assert table[0].split()[:4] == ["id", "prefix", "name", "state"]
    assert table[3].split()[:4] == ["1", made["prefix"] + "…", "laptop", "active"]

    headers = {"Authorization": f"Bearer {made['token']}"}
    assert client.get(f"{API}/me", headers=headers).status_code == 200
    assert as_json(runner, "tokens", "revoke", str(made["id"])) == {
        "id": made["id"],
        "revoked": True,
        "already_revoked": False,
    }
    assert client.get(f"{API}/me", headers=headers).status_code == 401
    again = run(runner, "tokens", "revoke", str(made["id"]))
    assert again.output == f"token {made['id']} was already revoked\n"
    states = {
        t["id"]: t["state"] for t in as_json(runner, "tokens", "list", "--user", "ann")["tokens"]
    }
    assert states == {1: "revoked", 2: "active", 3: "active"}


def test_token_command_errors(runner):
    run(runner, "users", "create", "ann")
    assert "no user 'nobody'" in run(runner, "tokens", "list", "--user", "nobody", code=1).output
    assert "no token 99" in run(runner, "tokens", "revoke", "99", code=1).output
    assert run(runner, "tokens", "revoke", "0", code=2).exit_code == 2
    assert run(runner, "tokens", "create", "ann", "--expires-days", "-1", code=2)
    refused = run(runner, "tokens", "create", "ann", "--scope", "exports", code=1)
    assert "Service scopes are only for service accounts" in refused.output
    assert run(runner, "tokens", "list", code=2).exit_code == 2  # --user is required


def test_service_tokens_last_a_year(runner):
    run(runner, "users", "create", "robot", "--kind", "service")
    made = as_json(runner, "tokens", "create", "robot", "--scope", "events:write")
    created = datetime.fromisoformat(made["created_at"])
    assert datetime.fromisoformat(made["expires_at"]) - created == timedelta(days=365)
    assert made["scopes"] == ["events:write"]


def test_demo_summary_as_json(runner):
    run(runner, "users", "create", "ann")  # not empty: --if-empty loads nothing
    summary = as_json(runner, "demo", "--if-empty")
    assert summary == {"loaded": False, "counts": {}, "tokens": []}


def test_demo_progress_goes_to_stderr_and_json_stays_one_document(runner, monkeypatch):
    """The lines of a load (their wording: tests/integration/test_demo_loader.py) reach the
    person at the terminal on stderr, as they come, while stdout stays one JSON document."""
    import market.demo.loader

    def load_demo(engine, seed, *, progress):  # the real load takes minutes; its lines are
        progress("Loading the demo community")  # tested on the run's own template load
        progress("  ranking the catalog")
        return {"users": 2}

    monkeypatch.setattr(market.demo.loader, "load_demo", load_demo)
    result = run(runner, "demo", "--if-empty", "--no-tokens", "--json")
    assert json.loads(result.stdout) == {"loaded": True, "counts": {"users": 2}, "tokens": []}
    assert result.stderr.splitlines() == ["Loading the demo community", "  ranking the catalog"]


def test_a_bad_revision_is_one_line_and_status_2(runner):
    result = runner.invoke(cli, ["db", "upgrade", "--revision", "nonsense"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "sprig db upgrade: Can't locate revision identified by 'nonsense'"
    ]
    assert "Traceback" not in result.output


def test_export_run_as_json_keeps_notes_off_stdout(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("SPRIG_EXPORT_SETTLE_SECONDS", "0")
    out = tmp_path / "exports"
    result = run(runner, "export-rewards", "--out", str(out), "--since", "last", "--json")
    summary = json.loads(result.stdout)
    assert "no earlier run succeeded" in result.stderr
    assert summary["run_id"] == 1 and summary["rows"]["ratings"] == 0
    assert (out / summary["location"].rsplit("/", 1)[-1]).is_dir()


def test_db_upgrade_works_from_any_directory(runner, tmp_path, monkeypatch):
    """The migrations are found beside the package, not only under the current directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPRIG_DATABASE_URL", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    assert run(runner, "db", "upgrade").output == "database at head\n"


def test_rank_says_what_it_ranked_and_the_taste_it_learned_then_that_nothing_changed(
    runner, client, engine
):
    from tests.factories import make_user, publish

    publish(client, make_user(engine, "alice"), title="Water Tracker")
    first = run(runner, "rank", "--force").output.splitlines()
    assert first[0].startswith("ranked 1 sub-agents from 0 ratings in ")
    assert first[0].endswith("(full; 1 score rows written)")
    assert first[1].startswith("then learned the taste of 0 raters for 0 sub-agents in ")
    assert run(runner, "rank").output == "nothing changed since the last ranking run\n"
