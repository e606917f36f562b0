"""The ``sprig`` command: database, demo community, users and tokens, serving.

Every command takes ``-h`` as well as ``--help``. Commands whose output scripts read take
``--json``: then stdout carries exactly one JSON document and anything else goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys

import click
from sqlmodel import select

from market.platform.config import load_settings
from market.platform.db import UnitOfWork, make_engine, session_scope


def _engine():
    settings = load_settings()
    return make_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)


JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document on stdout, for scripts."
)


def _emit_json(document: object) -> None:
    click.echo(json.dumps(document, ensure_ascii=False, indent=2, default=str))


def _note(message: str, as_json: bool) -> None:
    """A line for a person: on stderr when stdout carries JSON."""
    click.echo(message, err=as_json)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sprig-market", prog_name="sprig")
def main() -> None:
    """Sprig: share, fork and evolve lifestyle sub-agents."""


@main.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Migrate the database (SPRIG_DATABASE_URL) to the newest schema."""
    from alembic.util import CommandError

    from market.platform.migrate import upgrade

    try:
        upgrade(load_settings().database_url, revision)
    except (CommandError, FileNotFoundError) as error:
        # An unknown or ambiguous revision, or no migrations folder: one sentence says which;
        # a traceback would only bury it.
        click.echo(f"sprig db upgrade: {error}", err=True)
        sys.exit(2)
    click.echo(f"database at {revision}")


@main.command()
@click.option("--seed", default=7, show_default=True, type=int)
@click.option("--if-empty", is_flag=True, help="Load only when the database has no users.")
@click.option("--tokens/--no-tokens", default=True, help="Print fresh demo tokens.")
@JSON_OPTION
def demo(seed: int, if_empty: bool, tokens: bool, as_json: bool) -> None:
    """Load the deterministic demo community and print tokens to try the API with."""
    from market.demo.loader import demo_tokens, is_empty, load_demo

    engine = _engine()
    stats = None
    if not if_empty or is_empty(engine):
        # Progress on stderr: --json keeps stdout to its one document.
        stats = load_demo(engine, seed=seed, progress=lambda line: click.echo(line, err=True))
    issued = demo_tokens(engine) if tokens else []
    if as_json:
        _emit_json(
            {
                "loaded": stats is not None,
                "counts": stats or {},
                "tokens": [
                    {"label": label, "handle": handle, "token": token}
                    for label, handle, token in issued
                ],
            }
        )
        return
    if stats is not None:
        click.echo(
            "demo community loaded: "
            + ", ".join(f"{count} {name}" for name, count in stats.items())
        )
    else:
        click.echo("database already has data; demo not reloaded")
    for label, handle, token in issued:
        click.echo(f"{label} token ({handle}): {token}")


@main.group("near-copies")
def near_copies_group() -> None:
    """Finding the public sub-agents a new root copies."""


@near_copies_group.command("refresh")
@JSON_OPTION
def near_copies_refresh(as_json: bool) -> None:
    """Learn the template text shared by many apps and sign every sub-agent not yet signed
    against it (the nightly job; the backfill after upgrading), then report the offers left
    unanswered past their window."""
    from market.catalog import near_copies
    from market.platform.time import utcnow

    with session_scope(_engine()) as session:
        done = near_copies.refresh(session)
        done.update(near_copies.report_ignored(session, utcnow()))
    if as_json:
        _emit_json(done)
        return
    click.echo(
        f"boilerplate {done['boilerplate_id']} ({'changed' if done['changed'] else 'unchanged'},"
        f" learned from {done['sample']} sub-agents); {done['signed']} signed; "
        f"{done['ignored']} unanswered offers closed"
    )


@main.command()
def rollup() -> None:
    """Bring daily stats and retention cohorts up to date (what Celery beat runs)."""
    from market.usage.rollups import run_rollup

    total = {"marks": 0, "days": 0, "cohorts": 0}
    engine = _engine()
    try:
        while True:
            with session_scope(engine) as session:
                done = run_rollup(session)
            for name in total:
                total[name] += done[name]
            if done["marks"] == 0:
                if done.get("skipped"):
                    click.echo("another rollup is running; it will finish the work")
                break
    finally:
        engine.dispose()
    click.echo(
        f"rolled up {total['days']} sub-agent days and {total['cohorts']} cohorts "
        f"({total['marks']} marks)"
    )


@main.command()
@click.option(
    "--force",
    is_flag=True,
    help="A full run: refit and rescore everything, even if nothing changed.",
)
def rank(force: bool) -> None:
    """Rank what changed since the last run (what Celery beat runs every 5 minutes)."""
    from market.ranking.services import run_ranking

    engine = _engine()
    run = run_ranking(lambda: UnitOfWork(engine), force=force)
    if run.mode == "skipped":
        click.echo("nothing changed since the last ranking run")
        return
    click.echo(
        f"ranked {run.subagents} sub-agents from {run.ratings} ratings in {run.seconds:.2f}s "
        f"({run.mode}; {run.parameters['rows_written']} score rows written)"
    )
    taste = run.parameters.get("taste")
    if taste and not taste.get("superseded"):
        click.echo(
            f"then learned the taste of {taste['raters']} raters for {taste['subagents']} "
            f"sub-agents in {taste['seconds']:.2f}s"
        )


@main.command("offer-upstream")
@click.argument("version_id", type=click.IntRange(1))
def offer_upstream(version_id: int) -> None:
    """Offer a new version to its parent's forks now (what the task after a publish does;
    for a version whose task was lost). Forks offered it already are left as they are."""
    from market.catalog.upstream import propose_updates

    engine = _engine()
    try:
        made = propose_updates(engine, version_id)
    finally:
        engine.dispose()
    click.echo(f"{len(made)} fork(s) offered version {version_id}")


@main.command("export-rewards")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Export directory (runs go in run-NNNNN-<fingerprint>/ inside). "
    "Default: SPRIG_EXPORT_STORAGE, else SPRIG_EXPORT_DIR.",
)
@click.option(
    "--since",
    default=None,
    help="Incremental from this run's watermark (a run number, or 'last').",
)
@click.option("--k", "k_anonymity", type=click.IntRange(5), default=5, show_default=True)
@click.option("--confidence", type=click.FloatRange(0.6, 0.999), default=0.95, show_default=True)
@click.option("--test-share", type=click.FloatRange(0.0, 0.5), default=0.1, show_default=True)
@click.option("--comments", is_flag=True, help="Include scrubbed comments and tags.")
@click.option("--openai", is_flag=True, help="Also write OpenAI preference JSONL.")
@click.option("--no-conversational", is_flag=True, help="Skip the *_conversational configs.")
@click.option("--progress/--no-progress", default=True, show_default=True)
@JSON_OPTION
def export_rewards(
    out_dir,
    since,
    k_anonymity,
    confidence,
    test_share,
    comments,
    openai,
    no_conversational,
    progress,
    as_json,
) -> None:
    """Export reward datasets (Parquet shards, dataset card, manifest) as a new numbered run."""
    from tqdm import tqdm

    from feedback.export import ExportParameters
    from market.exports import services as export_service
    from market.exports.storage import RunStorage

    settings = load_settings()
    engine = _engine()
    parameters = ExportParameters(
        k_anonymity=k_anonymity,
        confidence=confidence,
        test_share=test_share,
        include_comments=comments,
        conversational=not no_conversational,
        openai_jsonl=openai,
    )
    with session_scope(engine) as session:
        since_run = None
        if since == "last":
            since_run = export_service.last_succeeded_run(session)
            if since_run is None:
                _note("no earlier run succeeded: exporting everything", as_json)
        elif since is not None:
            if not since.isdigit():
                raise click.BadParameter("a run number or 'last'", param_hint="--since")
            since_run = int(since)
        try:
            run = export_service.create_run(session, parameters, since_run=since_run)
        except Exception as error:
            raise click.ClickException(getattr(error, "detail", str(error))) from None
        run_id = run.id

    bar = tqdm(total=0, unit="row", disable=not progress, desc=f"run {run_id}")

    def report(stage: str, done: int, total: int) -> None:
        if stage == "model":
            bar.set_description(f"run {run_id}: fitting the model")
            return
        bar.set_description(f"run {run_id}: writing")
        bar.total = total
        bar.n = done
        bar.refresh()

    run = export_service.execute_run(
        engine,
        run_id,
        out_dir or RunStorage.from_settings(settings),
        settle_seconds=settings.export_settle_seconds,
        progress=report,
    )
    bar.close()
    if run.status != "succeeded":
        raise click.ClickException(f"export run {run_id} failed: {run.error}")
    counts = run.manifest["counts"]
    if as_json:
        _emit_json(
            {
                "run_id": run_id,
                "location": run.location,
                "rows": {name: figures["total"] for name, figures in counts.items()},
            }
        )
        return
    click.echo(f"export run {run_id}: {run.location}")
    for name, figures in counts.items():
        click.echo(f"  {name}: {figures['total']:,} rows")


@main.group()
def users() -> None:
    """People and service accounts."""


@users.command("create")
@click.argument("handle")
@click.option("--display-name", default=None)
@click.option("--email", default=None)
@click.option("--kind", type=click.Choice(["person", "service"]), default="person")
@click.option("--role", type=click.Choice(["user", "moderator"]), default="user")
@JSON_OPTION
def users_create(handle: str, display_name, email, kind: str, role: str, as_json: bool) -> None:
    """Create a user."""
    from market.identity.models import User

    with session_scope(_engine()) as session:
        if session.exec(select(User).where(User.handle == handle)).first():
            raise click.ClickException(f"user {handle!r} exists")
        user = User(
            handle=handle,
            display_name=display_name or handle,
            email=email,
            kind=kind,
            role=role,
        )
        session.add(user)
        session.flush()
        user_id = user.id
    if as_json:
        _emit_json({"id": user_id, "handle": handle, "kind": kind, "role": role})
    else:
        click.echo(f"created {kind} {handle}")


@main.group()
def tokens() -> None:
    """API tokens."""


def _user_by_handle(session, handle: str):
    from market.identity.models import User

    user = session.exec(select(User).where(User.handle == handle)).first()
    if user is None:
        raise click.ClickException(f"no user {handle!r}")
    return user


def _token_json(row) -> dict:
    """A token as the API lists it, less ``current`` (a command runs with no token)."""
    from market.identity.serialize import token_out

    return token_out(row).model_dump(mode="json", exclude={"current"})


@tokens.command("create")
@click.argument("handle")
@click.option("--scope", "scopes", multiple=True, help="Repeat for several scopes.")
@click.option("--name", default="cli")
@click.option(
    "--expires-days",
    type=click.IntRange(0, 3650),
    default=None,
    help="Days until it expires; 0 never expires. Default: SPRIG_PERSON_TOKEN_DAYS (90) for "
    "people, SPRIG_SERVICE_TOKEN_DAYS (365) for services.",
)
@JSON_OPTION
def tokens_create(
    handle: str, scopes: tuple[str, ...], name: str, expires_days: int | None, as_json: bool
) -> None:
    """Create a token for HANDLE and print it (it is shown only once)."""
    from market.identity.tokens import create_token
    from market.platform.errors import SprigError

    with session_scope(_engine()) as session:
        user = _user_by_handle(session, handle)
        try:
            made = create_token(session, user, list(scopes), name=name, lifetime_days=expires_days)
        except SprigError as error:
            raise click.ClickException(error.detail) from None
        described = _token_json(made.row)
    if as_json:
        _emit_json({"token": made.secret, **described})
    else:
        click.echo(made.secret)


TOKEN_TABLE = ("id", "prefix", "name", "state", "scopes", "created", "last used", "expires")


def _day(moment: str | None, default: str) -> str:
    return moment[:10] if moment else default


@tokens.command("list")
@click.option("--user", "handle", required=True, help="Whose tokens (a handle).")
@JSON_OPTION
def tokens_list(handle: str, as_json: bool) -> None:
    """List a user's tokens, newest first (never their secrets): id, state, scopes, dates."""
    from market.identity.tokens import list_tokens

    with session_scope(_engine()) as session:
        user = _user_by_handle(session, handle)
        rows = []
        cursor = None
        while True:
            page = list_tokens(session, user.id, limit=100, cursor=cursor)
            rows += [_token_json(row) for row in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
    if as_json:
        _emit_json({"user": handle, "tokens": rows})
        return
    table = [TOKEN_TABLE] + [
        (
            str(row["id"]),
            row["prefix"] + "…",
            row["name"] or "-",
            row["state"],
            " ".join(row["scopes"]) or "-",
            _day(row["created_at"], "-"),
            _day(row["last_used_at"], "never"),
            _day(row["expires_at"], "never"),
        )
        for row in rows
    ]
    widths = [max(len(line[column]) for line in table) for column in range(len(TOKEN_TABLE))]
    for line in table:
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        click.echo("  ".join(cells).rstrip())


@tokens.command("revoke")
@click.argument("token_id", type=click.IntRange(1, 2**31 - 1))
@JSON_OPTION
def tokens_revoke(token_id: int, as_json: bool) -> None:
    """Revoke token TOKEN_ID (the id `sprig tokens list` shows): refused from now on."""
    from market.identity.tokens import revoke_token_id
    from market.platform.errors import NotFound

    with session_scope(_engine()) as session:
        try:
            revoked = revoke_token_id(session, token_id)
        except NotFound:
            raise click.ClickException(f"no token {token_id}") from None
    if as_json:
        _emit_json({"id": token_id, "revoked": True, "already_revoked": not revoked})
    elif revoked:
        click.echo(f"revoked token {token_id}")
    else:
        click.echo(f"token {token_id} was already revoked")


@main.command()
@click.option(
    "--candidate",
    "candidates",
    multiple=True,
    help="A policy to evaluate (repeat): logged, uniform, greedy, tempered:α, "
    "young-share:X (Thompson sampling with X of the slots for young forks), or sd-scale:τ "
    "(Thompson sampling from the posterior with its sd scaled by τ, at most 1). "
    "Default: logged, uniform, greedy, tempered:0.5, tempered:2.",
)
@click.option(
    "--reward",
    type=click.Choice(["liked", "rated"]),
    default="liked",
    show_default=True,
    help="liked: the exposure's rating is a thumbs up or 4-5 stars; rated: it has a rating.",
)
@click.option("--weight-cap", type=click.FloatRange(min=1.0), default=100.0, show_default=True)
@click.option("--days", type=click.IntRange(min=1), default=None, help="Only the last N days.")
@JSON_OPTION
def ope(candidates, reward: str, weight_cap: float, days: int | None, as_json: bool) -> None:
    """Estimate other slate policies' value from the logged exposures (IPS, SNIPS, DR)."""
    from datetime import timedelta

    from market.platform.time import utcnow
    from market.recommend import evaluation

    names = list(candidates) or list(evaluation.DEFAULT_CANDIDATES)
    since = utcnow() - timedelta(days=days) if days else None
    with session_scope(_engine()) as session:
        log = evaluation.load_exposure_log(session, reward=reward, since=since)
    left_out = 0
    if evaluation.needs_pool_beliefs(names):
        # Only decisions that kept their pool belief can be replayed; every candidate is judged
        # on those same rows.
        replayable = log.replayable()
        left_out, log = log.decisions - replayable.decisions, replayable
    if log.action.size == 0:
        raise click.ClickException("no logged exposures to evaluate")
    try:
        values = evaluation.evaluate_candidates(log, names, weight_cap=weight_cap)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    summary = {
        "exposures": int(log.action.size),
        "decisions": log.decisions,
        "reward": reward,
        "observed_mean_reward": float(log.reward.mean()),
        "weight_cap": weight_cap,
        "decisions_without_pool_belief_left_out": left_out,
    }
    if as_json:
        _emit_json(
            {
                **summary,
                "candidates": [
                    {
                        "candidate": v.candidate,
                        "unsupported_mass": v.unsupported_mass,
                        "estimates": {name: e.as_dict() for name, e in v.estimates.items()},
                    }
                    for v in values
                ],
            }
        )
        return
    click.echo(
        f"{summary['exposures']} exposures in {summary['decisions']} decisions; reward "
        f"{reward}; observed mean {summary['observed_mean_reward']:.4f}; weight cap {weight_cap:g}"
    )
    if left_out:
        click.echo(f"{left_out} decisions logged without their pool belief left out")
    click.echo(
        f"{'candidate':<14}{'estimator':<10}{'estimate':>9}{'se':>8}{'95% interval':>20}"
        f"{'ess':>9}{'clipped':>8}{'unsupported':>12}"
    )
    for v in values:
        for name, e in v.estimates.items():
            interval = f"[{e.ci_low:.4f}, {e.ci_high:.4f}]"
            click.echo(
                f"{v.candidate:<14}{name:<10}{e.value:>9.4f}{e.standard_error:>8.4f}"
                f"{interval:>20}{e.effective_sample_size:>9.1f}{e.clipped:>8}"
                f"{v.unsupported_mass:>12.4f}"
            )


@main.command()
@click.option(
    "--token",
    envvar="SPRIG_MCP_TOKEN",
    default=None,
    help="API token the tools act with (default: $SPRIG_MCP_TOKEN; none: public reads only).",
)
def mcp(token: str | None) -> None:
    """Serve the MCP tools (suggest_forks, get_subagent, get_diff, get_files, publish_fork
    and the upstream updates' tools) on stdio."""
    from market.entrypoints.mcp_server import build_server

    # stdout is the protocol channel: nothing else may be printed there.
    build_server(_engine(), token=token).run("stdio")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--workers", default=2, show_default=True, type=int)
def serve(host: str, port: int, workers: int) -> None:
    """Serve the app with gunicorn."""
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    args = [
        gunicorn,
        "-c",
        "python:market.entrypoints.gunicorn_conf",
        "--bind",
        f"{host}:{port}",
        "--workers",
        str(workers),
        "market.app:create_app()",
    ]
    os.execv(gunicorn, args)  # noqa: S606 - replaces this process with gunicorn


if __name__ == "__main__":
    main()
