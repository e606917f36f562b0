"""A fork's change to its parent's ``data_schema``, checked when the fork is published.

With a ``data_schema`` on both sides, the change from the parent version's schema is classed
(:mod:`evolution.data_schema` has the rules). A breaking change needs the fork's
``data_migration``; a declared migration (for any class) must be valid and carry every sample
record into the new schema. The samples are the parent schema's top-level ``examples`` (the
records its author showed) followed by the fork's ``data_samples``. Either failure is a 422
naming each field or sample. Only a fork's first version is checked: a later version keeps its
manifest's migration as it was (the switch plan reads a fork's first version's).
"""

from __future__ import annotations

import multiprocessing
import re
from collections.abc import Mapping
from typing import Any

from evolution import data_schema
from market.catalog.bundles.limits import MIGRATION_CHECK_SECONDS
from market.platform.errors import ServiceUnavailable, Unprocessable

# What the migration must say for each kind of breaking field change.
_NEEDS = {
    "removed": "map it to a new field in data_migration.fields, or list it in data_migration.drop",
    "type_changed": "map it with a convert in data_migration.fields, or drop it",
    "tightened": "an old value may be refused: map its values (values, convert, default) or "
    "drop it, and give data_samples that show the old values migrate",
    "changed": "an old value may be refused: map it or drop it, and give data_samples that "
    "show the old values migrate",
    "now_required": "give it a default in data_migration.fields",
    "added": "give it a default in data_migration.fields",
}
_SAMPLE_PROBLEM = re.compile(r"sample (\d+): ")
# How long the fork server may take to hand over a child (the first check in a process starts
# the server, which imports the check): a host that cannot start one in this long is in trouble
# of its own, and the request is answered 503 rather than held.
CHILD_START_SECONDS = 30.0


def check_fork_data(parent_manifest: Mapping[str, Any], manifest: Mapping[str, Any]) -> None:
    """Refuse (422) a fork whose ``data_schema`` breaks its parent's without a migration, or
    whose declared migration is malformed or fails a sample. Nothing to check when either side
    declares no schema, or the parent's is not one this check can read (published before it)."""
    old, new = parent_manifest.get("data_schema"), manifest.get("data_schema")
    if old is None or new is None or not _readable(old):
        return
    change = classify_or_refuse(old, new, "manifest.data_schema")
    migration = manifest.get("data_migration")
    if migration is None:
        if change.kind == data_schema.BREAKING:
            _refuse_breaking(change, old, new)
        return
    examples = old.get("examples")
    examples = [e for e in examples if isinstance(e, dict)] if isinstance(examples, list) else []
    samples = examples + list(manifest.get("data_samples", []))
    problems = _bounded_sample_check(old, new, migration, samples)
    if problems:
        raise Unprocessable(
            f"The data_migration does not carry the parent's data into this data_schema: "
            f"{problems[0]}",
            errors=[_sample_error(problem, len(examples)) for problem in problems[:50]],
        )


def classify_or_refuse(old: Any, new: Any, location: str) -> data_schema.SchemaChange:
    """``classify_change``, or a 422 at ``location`` when a schema is not a JSON Schema."""
    try:
        return data_schema.classify_change(old, new)
    except ValueError as exc:
        raise Unprocessable(
            f"A data_schema is not one Sprig can compare: {exc}",
            errors=[{"location": location, "message": str(exc)}],
        ) from None


def _readable(schema: Any) -> bool:
    try:
        data_schema.classify_change(schema, schema)
    except ValueError:
        return False
    return True


def _refuse_breaking(change: data_schema.SchemaChange, old: Mapping, new: Mapping) -> None:
    broken = [c for c in change.fields if c.kind == data_schema.BREAKING]
    # A change is a field's, or a top-level keyword's (additionalProperties, type, ...).
    change_props = {*old.get("properties", {}), *new.get("properties", {})}
    names = ", ".join(dict.fromkeys(c.name for c in broken))
    raise Unprocessable(
        f"This fork breaks its parent's data schema ({names}): the data people keep in the "
        "parent would not fit. Declare a data_migration saying what becomes of each field.",
        errors=[
            {
                "location": f"manifest.data_schema.properties.{c.name}"
                if c.name in change_props
                else f"manifest.data_schema.{c.name}",
                "message": f"{c.name}: {c.detail}; {_NEEDS[c.change]}",
                "code": "breaking_schema_change",
            }
            for c in broken
        ],
    )


def _sample_error(problem: str, examples: int) -> dict[str, str]:
    """A check problem with where it is: a sample (the parent's ``examples`` come first in the
    list the check numbers) or the migration itself."""
    found = _SAMPLE_PROBLEM.match(problem)
    if found is None:
        return {"location": "manifest.data_migration", "message": problem}
    i = int(found.group(1))
    where = (
        f"parent data_schema.examples[{i}]"
        if i < examples
        else f"manifest.data_samples[{i - examples}]"
    )
    return {"location": where, "message": f"{where}: {problem[found.end() :]}"}


def _bounded_sample_check(old: Mapping, new: Mapping, migration: Any, samples: list) -> list[str]:
    """``check_against_samples`` in a child process killed after ``MIGRATION_CHECK_SECONDS``:
    a schema ``pattern`` that backtracks cannot hold a web worker (Python's ``re`` cannot be
    interrupted, and a signal alarm works in the main thread only). The child comes from a
    fork server that has already imported the check, so each costs a fork, not an interpreter
    start or an import; the fork server itself is one process, started on first use.

    The limit counts the check alone: it starts when the child says it is ready, not when it
    is asked for. Starting the fork server (the first check in a process) and a child's own
    set-up would otherwise count against it, and a fork be refused for a slow start: each
    child imports the program's main module again (multiprocessing does, and Python 3.11's
    fork server cannot preload it), 0.1 s under gunicorn, 0.6 s under the ``sprig`` command,
    seconds under a script that imports the whole app at its top."""
    context = multiprocessing.get_context("forkserver")
    # The child runs this module's function: both imported once, in the fork server.
    context.set_forkserver_preload(["evolution.data_schema", __name__])
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_check_in_child, args=(sender, old, new, migration, samples))
    child.start()
    sender.close()
    try:
        if not receiver.poll(CHILD_START_SECONDS):
            raise ServiceUnavailable(
                "The data_migration check could not start; retry shortly.",
                headers={"Retry-After": "5"},
            )
        receiver.recv()  # ready
        if receiver.poll(MIGRATION_CHECK_SECONDS):
            return receiver.recv()
        return [
            f"checking the migration against the samples took longer than "
            f"{MIGRATION_CHECK_SECONDS:g} s (a data_schema pattern that backtracks?)"
        ]
    except EOFError:
        return ["the migration check stopped before it finished"]
    finally:
        receiver.close()
        child.kill()
        child.join()


def _check_in_child(sender, old, new, migration, samples) -> None:
    sender.send(None)  # ready: the time limit starts now
    try:
        problems = data_schema.check_against_samples(old, new, migration, samples)
    except ValueError as exc:
        problems = [str(exc)]
    sender.send(problems)
    sender.close()
