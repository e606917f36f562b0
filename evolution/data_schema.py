"""Data that survives a branch switch: how a sub-agent's stored-data schema changed between two
versions, the declared migration a breaking fork carries, and the plan shown before a person's
data moves to another branch.

A schema is a manifest's ``data_schema``: a JSON Schema object whose top-level ``properties``
are the record's fields and ``required`` the fields every record has. Fields are compared by
name; a rename is never guessed (it is a removal plus an addition unless a migration maps it).

**Per field** (``FieldChange.change``):

* ``added`` / ``removed``: the name is in only one schema's ``properties``.
* ``loosened``: every value the old field accepted the new one accepts. The type set grows
  (``integer`` widens to ``number``; no ``type`` accepts anything), an ``enum`` gains values
  or goes, a bound (``minimum``/``exclusiveMinimum``, ``maximum``/``exclusiveMaximum``,
  ``minLength``, ``maxLength``, ``minItems``, ``maxItems``) moves outward or goes, a
  ``format`` or ``pattern`` goes.
* ``tightened``: some old value may be refused: the reverse of the above, or a ``format`` or
  ``pattern`` added or changed (regular languages are not compared).
* ``type_changed``: the new type set does not hold the old one.
* ``changed``: any other validating keyword differs (``items``, ``const``, ``properties`` of a
  nested object, ...); its effect is not worked out, so it counts as breaking.
* ``now_required`` / ``now_optional``: the field entered or left ``required``.

Annotations (``title``, ``description``, ``default``, ``examples``, ``$comment``,
``deprecated``, ``readOnly``, ``writeOnly``) never count: a unit moved into a description
("in ml" to "in oz") changes meaning without changing validation, and no rule can see it.

**Overall class** (``SchemaChange.kind``), the worst that applies:

* ``compatible``: the same fields, every record valid under the old schema is valid under the
  new one as it is, and no field changed type: only loosenings, ``now_optional`` and
  annotations (``integer`` widened to ``number`` holds the same values).
* ``additive``: as compatible, plus fields added; each added field is optional or required
  with a ``default`` (an old record becomes valid by filling the defaults in).
* ``breaking``: an old record may be refused or lose a value: a field removed, a type
  changed, a constraint tightened or changed, a field made required without a ``default``
  (new or existing), or a top-level keyword other than ``properties``/``required`` and the
  annotations changed (``additionalProperties``, ``type``, ...).

A record is taken to hold only the fields its schema declares: a field added to
``properties`` is new data even where the old schema let undeclared fields through.

**Migration** (a manifest's ``data_migration``, JSON, declarative; nothing is executed)::

    {"from_schema": "<schema_fingerprint(old)> or a parent version",
     "fields": {"<new field>": {"from": "<old field>", "convert": "<conversion>",
                                 "separator": ",", "values": {"old": "new"},
                                 "default": <JSON value>}},
     "drop": ["<old field>", ...]}

Applied to a record: each old field not in ``drop`` and not the ``from`` of a mapping is kept
as it is; each mapping writes its field from its source (converted by ``convert`` and then
renamed through ``values``, a map of old string values to new ones) or, when the record lacks
the source, ``null`` in it or the conversion fails, from ``default``; with neither the field is
left out, and a failed conversion without a default is an error (never a silent loss).
Conversions: ``number``, ``integer``, ``string``, ``boolean`` (from strings "true"/"false",
"yes"/"no", "1"/"0" and numbers 0/1), ``split`` (a string into a list of trimmed, non-empty
strings at ``separator``, "," by default) and ``join`` (a list into one string, ", " by
default).

**Switch plan**: per field of the person's current data, ``carried`` (kept as is, its values
valid in the target), ``transformed`` (renamed or converted, by the migration or an implicit
conversion to string), ``at_risk`` (kept, but the target tightened its constraints: a value
outside them will be refused; or renamed through ``values`` that map some values to null,
which leaves those out) or ``lost`` (no place in the target: its app never reads it);
target fields filled from defaults, and required target fields nothing fills. ``safe`` means
nothing lost, at risk or unfilled.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

COMPATIBLE, ADDITIVE, BREAKING = "compatible", "additive", "breaking"
CARRIED, TRANSFORMED, AT_RISK, LOST = "carried", "transformed", "at_risk", "lost"
CONVERSIONS = ("number", "integer", "string", "boolean", "split", "join")

# As the manifest's own limits (market.catalog.bundles.limits): a core cannot import them.
MAX_SCHEMA_BYTES = 32 * 1024
MAX_SCHEMA_DEPTH = 32
# A record is the app's own data: larger than a schema, still bounded.
MAX_RECORD_BYTES = 1 << 20
MAX_RECORD_DEPTH = 64
MAX_SAMPLES = 200

_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_TOP_LEVEL_IGNORED = _ANNOTATIONS | {"properties", "required", "$schema", "$id"}
_LOWER_BOUNDS = ("minLength", "minItems")
_UPPER_BOUNDS = ("maxLength", "maxItems")
_COMPARED = frozenset(
    {
        "type",
        "enum",
        "minimum",
        "exclusiveMinimum",
        "maximum",
        "exclusiveMaximum",
        "format",
        "pattern",
        *_LOWER_BOUNDS,
        *_UPPER_BOUNDS,
    }
)
_MAPPING_KEYS = frozenset({"from", "convert", "separator", "values", "default"})
_MIGRATION_KEYS = frozenset({"from_schema", "fields", "drop"})
# Which source types each conversion reads, and the type it writes.
_CONVERSION_READS = {
    "number": {"number", "integer", "string"},
    "integer": {"number", "integer", "string"},
    "string": {"string", "number", "integer", "boolean"},
    "boolean": {"boolean", "string", "number", "integer"},
    "split": {"string"},
    "join": {"array"},
}
_CONVERSION_WRITES = {
    "number": "number",
    "integer": "integer",
    "string": "string",
    "boolean": "boolean",
    "split": "array",
    "join": "string",
}
_TRUE_WORDS, _FALSE_WORDS = {"true", "yes", "1"}, {"false", "no", "0"}


@dataclass(frozen=True)
class FieldChange:
    name: str
    change: str  # added, removed, loosened, tightened, type_changed, changed, now_required, ...
    detail: str
    kind: str  # the class this one change puts the schema in


@dataclass(frozen=True)
class SchemaChange:
    kind: str
    fields: tuple[FieldChange, ...]


@dataclass(frozen=True)
class FieldPlan:
    name: str
    verdict: str  # carried, transformed, at_risk, lost
    into: tuple[str, ...]  # the target fields its value ends up in
    detail: str


@dataclass(frozen=True)
class SwitchPlan:
    fields: tuple[FieldPlan, ...]
    defaults: dict[str, Any]  # target fields an old record lacks, filled with these values
    unfilled: tuple[str, ...]  # required target fields nothing fills
    safe: bool


# --------------------------------------------------------------------------- reading a schema


def _plain_json(
    value: Any, what: str, max_bytes: int = MAX_SCHEMA_BYTES, max_depth: int = MAX_SCHEMA_DEPTH
) -> Any:
    """A detached copy of ``value`` if it is small plain JSON; ValueError otherwise (a
    self-containing dict, NaN, a non-string key, too big or too deep)."""
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{what} is not plain JSON ({type(exc).__name__})") from None
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise ValueError(f"{what} is larger than {max_bytes} bytes")
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:  # the brackets outside strings, so json.loads never recurses too far
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > max_depth:
        raise ValueError(f"{what} nests more than {max_depth} levels deep")
    return json.loads(text)


def _schema(schema: Any, what: str) -> tuple[dict[str, dict], set[str], dict]:
    """(properties, required, the whole schema) of a data schema; ValueError if it is not one."""
    if not isinstance(schema, Mapping):
        raise ValueError(f"{what} must be a JSON object (a JSON Schema)")
    schema = _plain_json(schema, what)
    problem = _metaschema_problem(json.dumps(schema, sort_keys=True, separators=(",", ":")))
    if problem is not None:
        raise ValueError(f"{what} is not a valid JSON Schema: {problem}")
    raw_props = schema.get("properties", {})
    if not isinstance(raw_props, dict):
        raise ValueError(f"{what}.properties must be an object")
    props = {}
    for name, prop in raw_props.items():
        # JSON Schema allows a boolean schema: true accepts anything, false nothing.
        props[name] = prop if isinstance(prop, dict) else ({} if prop else {"not": {}})
    return props, set(schema.get("required", [])), schema


@functools.lru_cache(maxsize=512)
def _metaschema_problem(canonical_text: str) -> str | None:
    """Why the schema written as ``canonical_text`` is not a valid JSON Schema, or None.

    Kept per text (at most 512 of up to 32 KB): checking walks the whole 2020-12 metaschema,
    about 9 ms, and a popular parent's schema is checked again for every fork of it, twice
    each (whether it is readable, then the change)."""
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(canonical_text))
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def _types(prop: dict) -> set[str] | None:
    """The field's type set; None accepts any type."""
    kind = prop.get("type")
    if kind is None:
        return None
    return {kind} if isinstance(kind, str) else set(kind)


def _types_hold(outer: set[str] | None, inner: set[str] | None) -> bool:
    """Whether type set ``outer`` accepts every value of type set ``inner``."""
    if outer is None:
        return True
    if inner is None:
        return False
    return all(t in outer or (t == "integer" and "number" in outer) for t in inner)


def schema_fingerprint(schema: Mapping) -> str:
    """A migration's ``from_schema``: the SHA-256 of the schema's canonical JSON."""
    text = json.dumps(_plain_json(schema, "schema"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- classifying


def _bound(prop: dict, inclusive_key: str, exclusive_key: str) -> tuple[float, bool] | None:
    """A numeric bound as (value, exclusive); the stricter when both keywords are given."""
    bounds = []
    if isinstance(prop.get(inclusive_key), (int, float)):
        bounds.append((prop[inclusive_key], False))
    if isinstance(prop.get(exclusive_key), (int, float)):
        bounds.append((prop[exclusive_key], True))
    if not bounds:
        return None
    lower = inclusive_key == "minimum"
    return max(bounds) if lower else min(bounds, key=lambda b: (b[0], not b[1]))


def _bound_loosened(old: tuple | None, new: tuple | None, lower: bool) -> bool:
    """Whether bound ``new`` admits every value bound ``old`` admits."""
    if new is None:
        return True
    if old is None:
        return False
    if old[0] != new[0]:
        return new[0] < old[0] if lower else new[0] > old[0]
    return old[1] or not new[1]


def _constraint_changes(old: dict, new: dict) -> list[tuple[str, str]]:
    """(change, detail) for each compared keyword that differs between two field schemas."""
    out = []
    old_types, new_types = _types(old), _types(new)
    if old_types != new_types:
        if _types_hold(new_types, old_types):
            out.append(("loosened", f"type {_show(old_types)} widened to {_show(new_types)}"))
        else:
            out.append(("type_changed", f"type {_show(old_types)} became {_show(new_types)}"))
    if _canonical(old.get("enum")) != _canonical(new.get("enum")):
        loosened = "enum" not in new or (
            "enum" in old
            and {_canonical(v) for v in old["enum"]} <= {_canonical(v) for v in new["enum"]}
        )
        out.append(("loosened" if loosened else "tightened", "enum changed"))
    for lower, keys in (
        (True, ("minimum", "exclusiveMinimum")),
        (False, ("maximum", "exclusiveMaximum")),
    ):
        old_bound, new_bound = _bound(old, *keys), _bound(new, *keys)
        if old_bound != new_bound:
            loosened = _bound_loosened(old_bound, new_bound, lower)
            out.append(("loosened" if loosened else "tightened", f"{keys[0]} changed"))
    for key in (*_LOWER_BOUNDS, *_UPPER_BOUNDS):
        if old.get(key) != new.get(key):
            a, b = old.get(key), new.get(key)
            lower = key in _LOWER_BOUNDS
            loosened = _bound_loosened(
                None if a is None else (a, False), None if b is None else (b, False), lower
            )
            out.append(("loosened" if loosened else "tightened", f"{key} {a} became {b}"))
    for key in ("format", "pattern"):
        if old.get(key) != new.get(key):
            loosened = key not in new
            out.append(("loosened" if loosened else "tightened", f"{key} changed"))
    others = sorted(
        k
        for k in set(old) | set(new)
        if k not in _COMPARED
        and k not in _ANNOTATIONS
        and _canonical(old.get(k)) != _canonical(new.get(k))
    )
    if others:
        out.append(("changed", f"{', '.join(others)} changed"))
    return out


def _canonical(value: Any) -> str:
    """JSON equality: ``true`` is not ``1`` (as Python's ``==`` has it)."""
    return json.dumps(value, sort_keys=True)


def _show(types: set[str] | None) -> str:
    return "any" if types is None else "/".join(sorted(types))


_CHANGE_KIND = {
    "loosened": COMPATIBLE,
    "now_optional": COMPATIBLE,
    "tightened": BREAKING,
    "type_changed": BREAKING,
    "changed": BREAKING,
    "removed": BREAKING,
}
_RANK = {COMPATIBLE: 0, ADDITIVE: 1, BREAKING: 2}


def classify_change(old_schema: Mapping, new_schema: Mapping) -> SchemaChange:
    """How the data schema changed from ``old_schema`` to ``new_schema`` (module docstring)."""
    old_props, old_required, old = _schema(old_schema, "old schema")
    new_props, new_required, new = _schema(new_schema, "new schema")
    changes: list[FieldChange] = []
    for name in sorted(set(old_props) | set(new_props)):
        if name not in new_props:
            changes.append(FieldChange(name, "removed", "not in the new schema", BREAKING))
            continue
        has_default = "default" in new_props[name]
        if name not in old_props:
            needs_default = name in new_required and not has_default
            detail = "required without a default" if needs_default else "new field"
            changes.append(
                FieldChange(name, "added", detail, BREAKING if needs_default else ADDITIVE)
            )
            continue
        for change, detail in _constraint_changes(old_props[name], new_props[name]):
            changes.append(FieldChange(name, change, detail, _CHANGE_KIND[change]))
        if name in new_required and name not in old_required:
            kind = ADDITIVE if has_default else BREAKING
            detail = "now required, with a default" if has_default else "now required"
            changes.append(FieldChange(name, "now_required", detail, kind))
        elif name in old_required and name not in new_required:
            changes.append(FieldChange(name, "now_optional", "no longer required", COMPATIBLE))
    for name in sorted(new_required - set(new_props) - old_required):
        changes.append(FieldChange(name, "now_required", "required, undeclared", BREAKING))
    for key in sorted(set(old) | set(new)):
        if key not in _TOP_LEVEL_IGNORED and _canonical(old.get(key)) != _canonical(new.get(key)):
            changes.append(FieldChange(key, "changed", "top-level keyword changed", BREAKING))
    kind = max((c.kind for c in changes), key=_RANK.__getitem__, default=COMPATIBLE)
    return SchemaChange(kind, tuple(changes))


# --------------------------------------------------------------------------- migrations


def _mappings(migration: Any) -> tuple[dict[str, dict], list[str], list[str]]:
    """(fields, drop, problems) of a migration's shape."""
    problems: list[str] = []
    if not isinstance(migration, Mapping):
        return {}, [], ["data_migration must be a JSON object"]
    try:
        migration = _plain_json(migration, "data_migration")
    except ValueError as exc:
        return {}, [], [str(exc)]
    for key in sorted(set(migration) - _MIGRATION_KEYS):
        problems.append(f"data_migration.{key}: unknown key")
    fields, drop = migration.get("fields", {}), migration.get("drop", [])
    if not isinstance(fields, dict):
        problems.append("data_migration.fields must be an object")
        fields = {}
    if not isinstance(drop, list) or not all(isinstance(d, str) for d in drop):
        problems.append("data_migration.drop must be a list of field names")
        drop = []
    if "from_schema" in migration and not isinstance(migration["from_schema"], str):
        problems.append("data_migration.from_schema must be a string")
    good: dict[str, dict] = {}
    for target, mapping in fields.items():
        where = f"data_migration.fields.{target}"
        if not isinstance(mapping, dict):
            problems.append(f"{where} must be an object")
            continue
        before = len(problems)
        problems += [f"{where}.{k}: unknown key" for k in sorted(set(mapping) - _MAPPING_KEYS)]
        if "from" not in mapping and "default" not in mapping:
            problems.append(f"{where} needs a 'from' or a 'default'")
        if "from" in mapping and not isinstance(mapping["from"], str):
            problems.append(f"{where}.from must be a field name")
        convert = mapping.get("convert")
        if convert is not None and convert not in CONVERSIONS:
            problems.append(f"{where}.convert must be one of {', '.join(CONVERSIONS)}")
        if (convert is not None or "values" in mapping) and "from" not in mapping:
            problems.append(f"{where}: convert and values need a 'from'")
        if "separator" in mapping and (
            convert not in ("split", "join") or not isinstance(mapping["separator"], str)
        ):
            problems.append(f"{where}.separator is a string, for split or join only")
        values = mapping.get("values")
        if values is not None and not isinstance(values, dict):
            problems.append(f"{where}.values must map old string values to new ones")
        if len(problems) == before:
            good[target] = mapping
    return good, drop, problems


def validate_migration(old_schema: Mapping, new_schema: Mapping, migration: Any) -> list[str]:
    """What is wrong with ``migration`` from ``old_schema`` to ``new_schema`` (empty: nothing):
    its shape, every source and dropped field exists in the old schema and every target in the
    new, conversions read the source's type and write one the target accepts, defaults are
    valid values, every required new field is produced, and every field the new schema no
    longer has is mapped or dropped explicitly. A constraint tightened on a kept field is left
    to ``check_against_samples``: only values can show whether it bites."""
    old_props, old_required, old = _schema(old_schema, "old schema")
    new_props, new_required, _ = _schema(new_schema, "new schema")
    fields, drop, problems = _mappings(migration)
    claimed = migration.get("from_schema") if isinstance(migration, Mapping) else None
    if isinstance(claimed, str) and len(claimed) == 64 and claimed != schema_fingerprint(old):
        problems.append("data_migration.from_schema is not the old schema's fingerprint")
    sources = {m["from"] for m in fields.values() if "from" in m}
    for name in drop:
        if name not in old_props:
            problems.append(f"drop: {name!r} is not a field of the old schema")
        if name in sources:
            problems.append(f"drop: {name!r} is also the source of a mapping")
    for target, mapping in sorted(fields.items()):
        where = f"data_migration.fields.{target}"
        if target not in new_props:
            problems.append(f"{where}: {target!r} is not a field of the new schema")
            continue
        target_types = _types(new_props[target])
        if "default" in mapping:
            error = _first_error(new_props[target], mapping["default"])
            if error:
                problems.append(f"{where}.default is not valid for the new field: {error}")
        if "from" not in mapping:
            continue
        source = mapping["from"]
        if source not in old_props:
            problems.append(f"{where}.from: {source!r} is not a field of the old schema")
            continue
        source_types = _types(old_props[source])
        convert = mapping.get("convert")
        if convert is None:
            written = source_types
        else:
            reads = _CONVERSION_READS[convert]
            if source_types is not None and not source_types <= reads:
                problems.append(
                    f"{where}: convert {convert!r} cannot read {source!r} "
                    f"(type {_show(source_types)})"
                )
            written = {_CONVERSION_WRITES[convert]}
        if not _types_hold(target_types, written):
            problems.append(
                f"{where}: {source!r} gives {_show(written)}, the new field takes "
                f"{_show(target_types)}; add a convert"
            )
        if target in new_required and "default" not in mapping and source not in old_required:
            problems.append(f"{where}: required, but {source!r} may be missing: add a default")
    for name in sorted(new_props):
        if name in fields:
            continue
        if name in old_props and name not in drop and name not in sources:
            if not _types_hold(_types(new_props[name]), _types(old_props[name])):
                problems.append(
                    f"{name!r} changes type from {_show(_types(old_props[name]))} to "
                    f"{_show(_types(new_props[name]))}: map it with a convert, or drop it"
                )
            elif name in new_required and name not in old_required:
                problems.append(f"{name!r} is now required: map it with a default")
        elif name in new_required:
            problems.append(f"{name!r} is required by the new schema and nothing produces it")
    for name in sorted(set(old_props) - set(new_props) - set(drop) - sources):
        problems.append(f"{name!r} is not in the new schema: map it to a field or drop it")
    return problems


def _first_error(schema: dict, value: Any) -> str | None:
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def _convert(value: Any, convert: str, separator: str | None) -> Any:
    """``value`` through one conversion; ValueError when it does not fit."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if convert in ("number", "integer"):
        if is_number:
            number = value
        elif isinstance(value, str):
            text = value.strip()
            try:
                number = int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    raise ValueError(f"{value!r} is not a number") from None
        else:
            raise ValueError(f"{type(value).__name__} is not a number")
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        if convert == "integer":
            if number != int(number):
                raise ValueError(f"{number} is not a whole number")
            return int(number)
        return number
    if convert == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if is_number or isinstance(value, str):
            return str(value)
        raise ValueError(f"{type(value).__name__} does not convert to a string")
    if convert == "boolean":
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower() if is_number or isinstance(value, str) else None
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        raise ValueError(f"{value!r} is not a yes or no")
    if convert == "split":
        if not isinstance(value, str):
            raise ValueError(f"{type(value).__name__} is not a string to split")
        return [part.strip() for part in value.split(separator or ",") if part.strip()]
    if not isinstance(value, list) or not all(
        isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool))
        for v in value
    ):
        raise ValueError("not a list of strings and numbers to join")
    return (", " if separator is None else separator).join(str(v) for v in value)


def apply_migration(record: Mapping, migration: Mapping) -> dict:
    """The record migrated (module docstring); ValueError when the migration is malformed or a
    value does not convert and its mapping has no default."""
    if not isinstance(record, Mapping):
        raise ValueError("a record must be a JSON object")
    fields, drop, problems = _mappings(migration)
    if problems:
        raise ValueError(problems[0])
    record = _plain_json(record, "record", MAX_RECORD_BYTES, MAX_RECORD_DEPTH)
    sources = {m["from"] for m in fields.values() if "from" in m}
    out = {k: v for k, v in record.items() if k not in drop and k not in sources}
    for target, mapping in fields.items():
        value = record.get(mapping["from"]) if "from" in mapping else None
        if value is not None:
            try:
                if "convert" in mapping:
                    value = _convert(value, mapping["convert"], mapping.get("separator"))
            except (ValueError, OverflowError) as exc:
                if "default" not in mapping:
                    raise ValueError(f"{target}: {mapping['from']!r} {exc}") from None
                value = None
            else:
                renamed = mapping.get("values", {})
                if isinstance(value, str) and value in renamed:
                    value = renamed[value]
        if value is None and "default" in mapping:
            value = copy.deepcopy(mapping["default"])
        if value is None:
            out.pop(target, None)
        else:
            out[target] = value
    return out


def check_against_samples(
    old_schema: Mapping, new_schema: Mapping, migration: Any, sample_records: Sequence
) -> list[str]:
    """The migration's problems (``validate_migration``), then each sample's: invalid under
    the old schema, failing to migrate, or migrated into a record the new schema refuses."""
    problems = validate_migration(old_schema, new_schema, migration)
    if problems:
        return problems
    if not isinstance(sample_records, Sequence) or isinstance(sample_records, (str, bytes)):
        return ["sample records must be a list of JSON objects"]
    if not sample_records:
        return ["no sample records to check the migration against"]
    if len(sample_records) > MAX_SAMPLES:
        return [f"more than {MAX_SAMPLES} sample records"]
    _, _, old = _schema(old_schema, "old schema")
    _, _, new = _schema(new_schema, "new schema")
    for i, record in enumerate(sample_records):
        if not isinstance(record, Mapping):
            problems.append(f"sample {i}: not a JSON object")
            continue
        try:
            record = _plain_json(record, f"sample {i}", MAX_RECORD_BYTES, MAX_RECORD_DEPTH)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        error = _first_error(old, record)
        if error:
            problems.append(f"sample {i}: not valid under the old schema: {error}")
            continue
        try:
            migrated = apply_migration(record, migration)
        except ValueError as exc:
            problems.append(f"sample {i}: does not migrate: {exc}")
            continue
        error = _first_error(new, migrated)
        if error:
            problems.append(f"sample {i}: migrated record is refused by the new schema: {error}")
    return problems


# --------------------------------------------------------------------------- switching branches


def implicit_migration(from_schema: Mapping, to_schema: Mapping) -> dict:
    """The migration a switch applies when the path declares none: fields both schemas hold
    are kept (converted to string where only the type changed and the target takes strings),
    the others dropped, and target fields with a schema ``default`` filled with it."""
    from_props, _, _ = _schema(from_schema, "current schema")
    to_props, _, _ = _schema(to_schema, "target schema")
    fields: dict[str, dict] = {}
    drop = []
    for name in sorted(from_props):
        if name not in to_props:
            drop.append(name)
            continue
        source_types, target_types = _types(from_props[name]), _types(to_props[name])
        if _types_hold(target_types, source_types):
            continue
        if (
            source_types is not None
            and source_types <= _CONVERSION_READS["string"]
            and _types_hold(target_types, {"string"})
        ):
            fields[name] = {"from": name, "convert": "string"}
        else:
            drop.append(name)
    for name in sorted(set(to_props) - set(from_props)):
        if "default" in to_props[name]:
            fields[name] = {"default": to_props[name]["default"]}
    return {"fields": fields, "drop": drop}


def switch_plan(from_schema: Mapping, to_schema: Mapping, migration: Any = None) -> SwitchPlan:
    """What happens to each field of a person's data moved from ``from_schema`` to
    ``to_schema`` by ``migration`` (by ``implicit_migration`` when None), before anything
    happens. ValueError when a schema or the migration is malformed."""
    from_props, _, _ = _schema(from_schema, "current schema")
    to_props, to_required, _ = _schema(to_schema, "target schema")
    if migration is None:
        migration = implicit_migration(from_schema, to_schema)
    fields, drop, problems = _mappings(migration)
    if problems:
        raise ValueError(problems[0])
    sources = {m["from"] for m in fields.values() if "from" in m}
    plans = []
    for name in sorted(from_props):
        targets = sorted(t for t, m in fields.items() if m.get("from") == name and t in to_props)
        if name in drop or (not targets and (name in sources or name not in to_props)):
            plans.append(FieldPlan(name, LOST, (), "no place in the target"))
        elif not targets and name in fields:
            plans.append(FieldPlan(name, LOST, (), "replaced by the migration's default"))
        elif targets and (left_out := _values_left_out(fields, targets)):
            # A value the migration maps to null has no counterpart in the target: a record
            # holding it keeps the field empty (or takes the mapping's default).
            detail = f"{_describe(fields, targets)}; {', '.join(left_out)} left out"
            plans.append(FieldPlan(name, AT_RISK, tuple(targets), detail))
        elif targets and targets != [name]:
            plans.append(FieldPlan(name, TRANSFORMED, tuple(targets), _describe(fields, targets)))
        elif targets and ("convert" in fields[name] or "values" in fields[name]):
            plans.append(FieldPlan(name, TRANSFORMED, (name,), _describe(fields, targets)))
        else:
            found = _constraint_changes(from_props[name], to_props[name])
            risks = [detail for change, detail in found if change != "loosened"]
            if any(change == "type_changed" for change, _ in found):
                detail = "; ".join(risks) + ": the target refuses every value"
                plans.append(FieldPlan(name, LOST, (), detail))
            elif risks:
                detail = "; ".join(risks) + ": a value outside the target's rules is refused"
                plans.append(FieldPlan(name, AT_RISK, (name,), detail))
            else:
                plans.append(FieldPlan(name, CARRIED, (name,), "kept as it is"))
    produced = {t for t, m in fields.items() if "from" in m} | {
        n for n in from_props if n in to_props and n not in {*drop, *sources, *fields}
    }
    defaults: dict[str, Any] = {}
    unfilled = []
    for name in sorted(set(to_props) - produced):
        if name in fields and "default" in fields[name]:
            defaults[name] = fields[name]["default"]
        elif "default" in to_props[name]:
            defaults[name] = to_props[name]["default"]
        elif name in to_required:
            unfilled.append(name)
    safe = not unfilled and all(p.verdict in (CARRIED, TRANSFORMED) for p in plans)
    return SwitchPlan(tuple(plans), defaults, tuple(unfilled), safe)


def _values_left_out(fields: dict[str, dict], targets: list[str]) -> list[str]:
    """The source values the mappings into ``targets`` rename to null, as JSON."""
    return [
        json.dumps(old, ensure_ascii=False)
        for target in targets
        if isinstance(fields[target].get("values"), dict)
        for old, new in fields[target]["values"].items()
        if new is None
    ]


def _describe(fields: dict[str, dict], targets: list[str]) -> str:
    parts = []
    for target in targets:
        mapping = fields[target]
        how = [f"convert {mapping['convert']}"] if "convert" in mapping else []
        how += ["values renamed"] if "values" in mapping else []
        parts.append(f"into {target}" + (f" ({', '.join(how)})" if how else ""))
    return "; ".join(parts)


def compose(first: Any, second: Any) -> dict:
    """One migration doing ``first`` then ``second`` (a tree path's steps, for a switch to an
    ancestor or a sibling branch): ``apply_migration(r, compose(m1, m2))`` equals
    ``apply_migration(apply_migration(r, m1), m2)`` wherever the latter succeeds (a value the
    first step fails to convert but the second discards no longer stops the migration).
    ValueError where one mapping cannot say
    both steps: a field converted or renamed by values in each, or converted by the second
    step with defaults in both."""
    f1, d1, problems = _mappings(first)
    f2, d2, more = _mappings(second)
    if problems or more:
        raise ValueError((problems + more)[0])
    sources1 = {m["from"] for m in f1.values() if "from" in m}
    sources2 = {m["from"] for m in f2.values() if "from" in m}

    def via_first(middle: str) -> dict | None:
        """How the middle record's field comes from the first record (None: never there)."""
        if middle in f1:
            return f1[middle]
        if middle in d1 or middle in sources1:
            return None
        return {"from": middle}

    fields: dict[str, dict] = {}
    dropped = set(d1)
    for target, step2 in f2.items():
        if "from" not in step2:
            fields[target] = step2
            continue
        step1 = via_first(step2["from"])
        if step1 is not None and "from" not in step1:
            # The middle value is a constant: the second step converts it now.
            constant = _second_step_of_default(target, step1["default"], step2)
            if "v" in constant:
                fields[target] = {"default": constant["v"]}
            else:
                dropped.add(target)
            continue
        if step1 is None:
            if "default" in step2:
                fields[target] = {"default": step2["default"]}
            else:
                dropped.add(target)
            continue
        how1 = {k: step1[k] for k in ("convert", "separator", "values") if k in step1}
        how2 = {k: step2[k] for k in ("convert", "separator", "values") if k in step2}
        if how1 and how2:
            raise ValueError(f"{target}: converted in both steps; apply the migrations in order")
        if "default" in step1 and "default" in step2 and "convert" in step2:
            raise ValueError(f"{target}: defaults in both steps around a conversion")
        mapping = {"from": step1["from"], **how1, **how2}
        if "default" in step1:
            converted = _second_step_of_default(target, step1["default"], step2)
            if "v" in converted:
                mapping["default"] = converted["v"]
        elif "default" in step2:
            mapping["default"] = step2["default"]
        fields[target] = mapping
    for middle, step1 in f1.items():
        if middle not in f2 and middle not in d2 and middle not in sources2:
            fields[middle] = step1
    # What either step removes must not reach the end; a composed source or target is
    # removed or written by its mapping anyway.
    dropped |= set(d2) | sources1 | sources2
    dropped -= {m["from"] for m in fields.values() if "from" in m} | set(fields)
    out: dict[str, Any] = {"fields": fields, "drop": sorted(dropped)}
    if isinstance(first, Mapping) and isinstance(first.get("from_schema"), str):
        out["from_schema"] = first["from_schema"]
    return out


def _second_step_of_default(target: str, default: Any, step2: dict) -> dict:
    """The first step's default through the second step's mapping, as ``{"v": value}`` (or
    ``{}`` when it yields nothing)."""
    try:
        return apply_migration({"v": default}, {"fields": {"v": {**step2, "from": "v"}}})
    except ValueError:
        raise ValueError(
            f"{target}: the first step's default {default!r} does not convert in the second step"
        ) from None
