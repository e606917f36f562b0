"""evolution.data_schema: schema change classes, declared migrations checked against sample
records, and the plan shown before a person's data switches branch."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolution.data_schema import (
    ADDITIVE,
    AT_RISK,
    BREAKING,
    CARRIED,
    COMPATIBLE,
    LOST,
    TRANSFORMED,
    apply_migration,
    check_against_samples,
    classify_change,
    compose,
    implicit_migration,
    schema_fingerprint,
    switch_plan,
    validate_migration,
)
from market.demo.content import generate_community
from market.demo.render import _manifest_schema

ROOTS = Path(__file__).resolve().parents[2] / "market" / "demo" / "assets" / "roots"


def demo_schema(root: str) -> dict:
    """The data schema the demo publishes for one of its root apps."""
    config = json.loads((ROOTS / f"{root}.json").read_text(encoding="utf-8"))["config"]
    return _manifest_schema(config)


WATER = demo_schema("01-water-tracker")  # day (required date), amount (number >= 0, in ml)
SLEEP = demo_schema("05-sleep-log")  # day, date, start, end, quality (enum "1".."5"), wakeups
MOOD = demo_schema("06-mood-diary")  # day, note (maxLength 500)


def edited(schema: dict, **props) -> dict:
    """``schema`` with properties replaced (a value of None removes one)."""
    out = copy.deepcopy(schema)
    for name, prop in props.items():
        if prop is None:
            out["properties"].pop(name)
        else:
            out["properties"][name] = prop
    return out


def changes(old: dict, new: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in classify_change(old, new).fields:
        out.setdefault(c.name, []).append(c.change)
    return out


# --------------------------------------------------------------------------- change classes


def test_the_demo_schemas_are_read() -> None:
    assert set(WATER["properties"]) == {"day", "amount"}
    assert SLEEP["properties"]["quality"]["enum"] == ["1", "2", "3", "4", "5"]


def test_same_schema_and_annotation_edits_are_compatible() -> None:
    assert classify_change(WATER, WATER).kind == COMPATIBLE
    assert classify_change(WATER, WATER).fields == ()
    relabelled = edited(WATER, amount={**WATER["properties"]["amount"], "title": "Glasses"})
    assert classify_change(WATER, relabelled) == classify_change(WATER, WATER)


@pytest.mark.parametrize(
    ("prop", "change"),
    [
        ({"type": "number"}, "loosened"),  # minimum dropped
        ({"type": "number", "minimum": -10}, "loosened"),
        ({"type": ["number", "null"], "minimum": 0}, "loosened"),
        ({"minimum": 0}, "loosened"),  # no type: any type
        ({"type": "number", "minimum": 0, "maximum": 5000}, "tightened"),
        ({"type": "number", "minimum": 1}, "tightened"),
        ({"type": "number", "exclusiveMinimum": 0}, "tightened"),
        ({"type": "integer", "minimum": 0}, "type_changed"),
        ({"type": "string"}, "type_changed"),
        ({"type": "number", "minimum": 0, "multipleOf": 50}, "changed"),
    ],
)
def test_each_field_change_of_the_water_amount(prop: dict, change: str) -> None:
    new = edited(WATER, amount=prop)
    assert change in changes(WATER, new)["amount"]
    expected = COMPATIBLE if change == "loosened" else BREAKING
    assert classify_change(WATER, new).kind == expected


def test_integer_widened_to_number_is_compatible_and_back_is_breaking() -> None:
    integer = edited(WATER, amount={"type": "integer"})
    number = edited(WATER, amount={"type": "number"})
    assert classify_change(integer, number).kind == COMPATIBLE
    assert changes(number, integer)["amount"] == ["type_changed"]


def test_enum_values_added_loosen_and_removed_tighten() -> None:
    quality = SLEEP["properties"]["quality"]
    more = edited(SLEEP, quality={**quality, "enum": [*quality["enum"], "6"]})
    fewer = edited(SLEEP, quality={**quality, "enum": ["1", "2", "3"]})
    assert classify_change(SLEEP, more).kind == COMPATIBLE
    assert classify_change(SLEEP, fewer).kind == BREAKING
    assert changes(SLEEP, fewer) == {"quality": ["tightened"]}


def test_enum_compares_as_json_so_true_is_not_one() -> None:
    flag = edited(WATER, flag={"enum": [1, 2]})
    as_bool = edited(WATER, flag={"enum": [True, 2]})
    assert changes(flag, as_bool) == {"flag": ["tightened"]}
    assert changes(edited(WATER, flag={"const": 1}), edited(WATER, flag={"const": True})) == {
        "flag": ["changed"]
    }


def test_string_constraints_pattern_format_and_length() -> None:
    note = MOOD["properties"]["note"]
    assert classify_change(MOOD, edited(MOOD, note={**note, "maxLength": 1000})).kind == (
        COMPATIBLE
    )
    assert changes(MOOD, edited(MOOD, note={**note, "maxLength": 140})) == {"note": ["tightened"]}
    with_format = edited(MOOD, note={**note, "format": "email"})
    assert changes(MOOD, with_format) == {"note": ["tightened"]}
    start = SLEEP["properties"]["start"]
    no_pattern = edited(SLEEP, start={k: v for k, v in start.items() if k != "pattern"})
    assert classify_change(SLEEP, no_pattern).kind == COMPATIBLE
    assert classify_change(no_pattern, SLEEP).kind == BREAKING


def test_new_optional_field_or_required_with_default_is_additive() -> None:
    optional = edited(WATER, glasses={"type": "integer", "minimum": 0})
    assert classify_change(WATER, optional).kind == ADDITIVE
    with_default = copy.deepcopy(optional)
    with_default["properties"]["unit"] = {"type": "string", "enum": ["ml", "oz"], "default": "ml"}
    with_default["required"] = ["day", "unit"]
    result = classify_change(WATER, with_default)
    assert result.kind == ADDITIVE
    assert {c.name: c.change for c in result.fields} == {"glasses": "added", "unit": "added"}


def test_new_required_field_without_default_is_breaking() -> None:
    new = edited(WATER, unit={"type": "string"})
    new["required"] = ["day", "unit"]
    result = classify_change(WATER, new)
    assert result.kind == BREAKING
    assert result.fields[0].detail == "required without a default"


def test_existing_field_made_required_breaks_unless_it_has_a_default() -> None:
    required = copy.deepcopy(WATER)
    required["required"] = ["day", "amount"]
    assert changes(WATER, required) == {"amount": ["now_required"]}
    assert classify_change(WATER, required).kind == BREAKING
    defaulted = edited(required, amount={**WATER["properties"]["amount"], "default": 0})
    assert classify_change(WATER, defaulted).kind == ADDITIVE
    assert changes(required, WATER) == {"amount": ["now_optional"]}
    assert classify_change(required, WATER).kind == COMPATIBLE


def test_removed_field_and_top_level_keyword_are_breaking() -> None:
    assert changes(SLEEP, edited(SLEEP, wakeups=None)) == {"wakeups": ["removed"]}
    assert classify_change(SLEEP, edited(SLEEP, wakeups=None)).kind == BREAKING
    closed = {**WATER, "additionalProperties": False}
    assert changes(WATER, closed) == {"additionalProperties": ["changed"]}


def test_demo_forks_that_do_not_break_switch_without_loss() -> None:
    community = generate_community(7, n_users=200, n_subagents=120)
    by_key = {s.key: s for s in community.subagents}
    seen = set()
    for fork in community.subagents:
        if fork.parent is None:
            continue
        old = by_key[fork.parent].versions[-1].manifest["data_schema"]
        new = fork.versions[0].manifest["data_schema"]
        kind = classify_change(old, new).kind
        seen.add(kind)
        plan = switch_plan(old, new)
        if kind != BREAKING:
            assert plan.safe, fork.key
    assert seen == {COMPATIBLE, ADDITIVE, BREAKING}


def test_a_rename_is_not_guessed() -> None:
    renamed = edited(WATER, amount=None, volume=WATER["properties"]["amount"])
    assert changes(WATER, renamed) == {"amount": ["removed"], "volume": ["added"]}


# --------------------------------------------------------------------------- migrations

# The water tracker's fork: amount in ml renamed to volume_ml, a unit with a default, a
# "glasses" count from a string field, tags split from a text field; the old note dropped.
OLD = edited(
    WATER,
    glasses={"type": "string"},
    tags={"type": "string"},
    note={"type": "string"},
    done={"type": "string"},
)
NEW = {
    "type": "object",
    "properties": {
        "day": {"type": "string", "format": "date"},
        "volume_ml": {"type": "number", "minimum": 0},
        "unit": {"type": "string", "enum": ["ml", "oz"]},
        "glasses": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "done": {"type": "boolean"},
    },
    "required": ["day", "unit"],
}
MIGRATION = {
    "from_schema": schema_fingerprint(OLD),
    "fields": {
        "volume_ml": {"from": "amount"},
        "unit": {"default": "ml"},
        "glasses": {"from": "glasses", "convert": "integer", "default": 0},
        "tags": {"from": "tags", "convert": "split"},
        "done": {"from": "done", "convert": "boolean"},
    },
    "drop": ["note"],
}
SAMPLES = [
    {"day": "2026-11-30", "amount": 750, "glasses": "3", "tags": "gym, hot ,", "note": "x"},
    {"day": "2026-12-01", "done": "yes"},
    {"day": "2026-12-02", "amount": 0.5, "glasses": "two"},
]


def test_the_fork_is_breaking_and_its_migration_is_valid() -> None:
    assert classify_change(OLD, NEW).kind == BREAKING
    assert validate_migration(OLD, NEW, MIGRATION) == []
    assert check_against_samples(OLD, NEW, MIGRATION, SAMPLES) == []


def test_migration_renames_defaults_converts_and_drops() -> None:
    assert apply_migration(SAMPLES[0], MIGRATION) == {
        "day": "2026-11-30",
        "volume_ml": 750,
        "unit": "ml",
        "glasses": 3,
        "tags": ["gym", "hot"],
    }
    assert apply_migration(SAMPLES[1], MIGRATION) == {
        "day": "2026-12-01",
        "unit": "ml",
        "glasses": 0,
        "done": True,
    }
    # "two" is not a whole number: the declared default stands in.
    assert apply_migration(SAMPLES[2], MIGRATION)["glasses"] == 0


def test_values_map_renames_enum_values() -> None:
    quality = SLEEP["properties"]["quality"]
    words = edited(SLEEP, quality={**quality, "enum": ["bad", "ok", "good"]})
    migration = {
        "fields": {
            "quality": {
                "from": "quality",
                "values": {"1": "bad", "2": "bad", "3": "ok", "4": "good", "5": "good"},
            }
        }
    }
    assert validate_migration(SLEEP, words, migration) == []
    samples = [{"day": "2026-12-01", "quality": q} for q in "12345"]
    assert check_against_samples(SLEEP, words, migration, samples) == []
    assert apply_migration(samples[3], migration)["quality"] == "good"
    partial = {"fields": {"quality": {"from": "quality", "values": {"1": "bad"}}}}
    problems = check_against_samples(SLEEP, words, partial, samples)
    assert problems[0].startswith("sample 1: migrated record is refused by the new schema")


def test_conversion_failure_without_default_is_an_error_not_a_loss() -> None:
    migration = {"fields": {"glasses": {"from": "glasses", "convert": "integer"}}}
    with pytest.raises(ValueError, match="glasses"):
        apply_migration({"glasses": "two"}, migration)
    problems = check_against_samples(
        OLD, edited(OLD, glasses={"type": "integer"}), migration, [SAMPLES[2]]
    )
    assert problems == ["sample 0: does not migrate: glasses: 'glasses' 'two' is not a number"]


@pytest.mark.parametrize(
    ("migration", "problem"),
    [
        ({"fields": {"volume_ml": {"from": "amount"}}}, "'unit' is required"),
        ({**MIGRATION, "drop": []}, "'note' is not in the new schema: map it to a field or drop"),
        (
            {**MIGRATION, "fields": {**MIGRATION["fields"], "volume_ml": {"from": "volume"}}},
            "'volume' is not a field of the old schema",
        ),
        (
            {**MIGRATION, "fields": {**MIGRATION["fields"], "tags": {"from": "tags"}}},
            "'tags' gives string, the new field takes array; add a convert",
        ),
        (
            {
                **MIGRATION,
                "fields": {**MIGRATION["fields"], "done": {"from": "amount", "convert": "split"}},
            },
            "convert 'split' cannot read 'amount'",
        ),
        ({**MIGRATION, "fields": {**MIGRATION["fields"], "unit": {"default": "l"}}}, "default"),
        ({**MIGRATION, "fields": {**MIGRATION["fields"], "unit": {}}}, "needs a 'from' or"),
        (
            {**MIGRATION, "fields": {**MIGRATION["fields"], "unit": {"code": "rm -rf /"}}},
            "unknown key",
        ),
        ({**MIGRATION, "fields": {**MIGRATION["fields"], "x": {"default": 1}}}, "'x' is not a"),
        ({**MIGRATION, "from_schema": schema_fingerprint(NEW)}, "fingerprint"),
        ({**MIGRATION, "drop": ["note", "amount"]}, "also the source of a mapping"),
        ("not a migration", "must be a JSON object"),
        ({"fields": []}, "fields must be an object"),
    ],
)
def test_bad_migration_is_rejected_with_a_clear_problem(migration, problem: str) -> None:
    problems = validate_migration(OLD, NEW, migration)
    assert any(problem in p for p in problems), problems
    assert check_against_samples(OLD, NEW, migration, SAMPLES) == problems


def test_samples_are_checked_against_the_old_schema_and_bounded() -> None:
    bad_old = [{"day": "yesterday", "amount": -1}]
    assert check_against_samples(OLD, NEW, MIGRATION, bad_old)[0].startswith(
        "sample 0: not valid under the old schema"
    )
    assert check_against_samples(OLD, NEW, MIGRATION, []) == [
        "no sample records to check the migration against"
    ]
    assert check_against_samples(OLD, NEW, MIGRATION, ["x"]) == ["sample 0: not a JSON object"]
    assert "more than" in check_against_samples(OLD, NEW, MIGRATION, [SAMPLES[0]] * 201)[0]


# --------------------------------------------------------------------------- hostile input


def test_hostile_schemas_raise_value_error() -> None:
    recursive: dict = {"type": "object", "properties": {}}
    recursive["properties"]["self"] = recursive
    deep: dict = {}
    for _ in range(50):
        deep = {"properties": {"x": deep}}
    huge = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(5000)}}
    for schema in (
        "a string",
        ["a", "list"],
        recursive,
        deep,
        huge,
        {"type": 5},
        {"minimum": True},
    ):
        with pytest.raises(ValueError):
            classify_change(WATER, schema)
        with pytest.raises(ValueError):
            switch_plan(schema, WATER)


def test_a_schema_seen_before_is_judged_again_by_what_it_now_says() -> None:
    # The metaschema check is kept per canonical text: the same object edited in place, or
    # the same schema with its keys in another order, must get its own verdict.
    schema = copy.deepcopy(WATER)
    assert classify_change(WATER, schema).kind == COMPATIBLE
    schema["properties"]["amount"]["type"] = 5
    for _ in range(2):
        with pytest.raises(ValueError, match="not a valid JSON Schema"):
            classify_change(WATER, schema)
    reordered = dict(reversed(list(WATER.items())))
    assert classify_change(reordered, WATER).kind == COMPATIBLE


def test_record_with_unexpected_types_is_a_problem_or_value_error() -> None:
    with pytest.raises(ValueError):
        apply_migration(["not", "a", "record"], MIGRATION)
    with pytest.raises(ValueError):
        apply_migration({"day": float("nan")}, MIGRATION)
    with pytest.raises(ValueError, match="larger than"):
        apply_migration({"note": "x" * (1 << 20)}, MIGRATION)
    # An object where split expects a string, and a number where join expects a list.
    with pytest.raises(ValueError, match="tags"):
        apply_migration({"tags": {"a": 1}}, MIGRATION)
    problems = check_against_samples(OLD, NEW, MIGRATION, [{"day": "2026-12-01", "tags": 3}])
    assert problems[0].startswith("sample 0: not valid under the old schema")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["day", "amount", "glasses", "tags", "note", "done", "other"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(10**30), 10**30),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(max_size=8),
            st.lists(st.text(max_size=3), max_size=3),
            st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
        ),
    )
)
def test_any_record_migrates_or_raises_value_error(record: dict) -> None:
    try:
        migrated = apply_migration(record, MIGRATION)
    except ValueError:
        return
    assert "note" not in migrated and "amount" not in migrated
    assert migrated["unit"] == "ml"


# --------------------------------------------------------------------------- switch plans


def verdicts(plan) -> dict[str, str]:
    return {p.name: p.verdict for p in plan.fields}


def test_switch_plan_with_the_declared_migration() -> None:
    plan = switch_plan(OLD, NEW, MIGRATION)
    assert verdicts(plan) == {
        "amount": TRANSFORMED,
        "day": CARRIED,
        "done": TRANSFORMED,
        "glasses": TRANSFORMED,
        "note": LOST,
        "tags": TRANSFORMED,
    }
    assert {p.name: p.into for p in plan.fields}["amount"] == ("volume_ml",)
    assert plan.defaults == {"unit": "ml"}
    assert plan.unfilled == ()
    assert plan.safe is False  # the note is lost


def test_switch_plan_without_migration_between_demo_apps() -> None:
    # Moving a water log to the mood diary keeps the day and nothing else.
    plan = switch_plan(WATER, MOOD)
    assert verdicts(plan) == {"amount": LOST, "day": CARRIED}
    assert not plan.safe
    # A loosened fork: everything carried, safe.
    loose = edited(WATER, amount={"type": "number"}, glasses={"type": "integer", "default": 0})
    plan = switch_plan(WATER, loose)
    assert verdicts(plan) == {"amount": CARRIED, "day": CARRIED}
    assert plan.defaults == {"glasses": 0}
    assert plan.safe


def test_switch_plan_implicit_conversion_risk_and_unfilled() -> None:
    as_text = edited(SLEEP, wakeups={"type": "string"}, quality={"type": "string", "enum": ["1"]})
    as_text["properties"]["mood"] = {"type": "string"}
    as_text["required"] = ["day", "mood"]
    plan = switch_plan(SLEEP, as_text)
    assert verdicts(plan)["wakeups"] == TRANSFORMED
    assert verdicts(plan)["quality"] == AT_RISK
    assert plan.unfilled == ("mood",)
    assert not plan.safe
    migration = implicit_migration(SLEEP, as_text)
    assert apply_migration({"day": "2026-12-01", "wakeups": 2}, migration) == {
        "day": "2026-12-01",
        "wakeups": "2",
    }


def test_switch_plan_sees_moves_overwrites_and_undeclared_targets() -> None:
    swapped = {
        "fields": {"amount": {"default": 0}, "litres": {"from": "amount"}},
    }
    plan = switch_plan(WATER, WATER, swapped)
    # amount moves into litres, which the target does not declare, and is overwritten.
    assert verdicts(plan) == {"amount": LOST, "day": CARRIED}
    assert plan.defaults == {"amount": 0}
    moved = {"fields": {"volume": {"from": "amount"}}}
    required = {**edited(WATER, volume={"type": "number"}), "required": ["day", "amount"]}
    plan = switch_plan(WATER, required, moved)
    assert verdicts(plan) == {"amount": TRANSFORMED, "day": CARRIED}
    assert plan.unfilled == ("amount",)  # moved away, and nothing writes it back


def test_switch_back_to_the_parent_loses_what_the_fork_added() -> None:
    back = {"fields": {"amount": {"from": "volume_ml"}}, "drop": ["unit", "tags", "done"]}
    plan = switch_plan(NEW, OLD, back)
    assert verdicts(plan)["volume_ml"] == TRANSFORMED
    assert verdicts(plan)["unit"] == LOST
    assert verdicts(plan) == {
        "day": CARRIED,
        "done": LOST,
        "glasses": LOST,  # integer in the fork, string in the parent: the step does not convert
        "tags": LOST,
        "unit": LOST,
        "volume_ml": TRANSFORMED,
    }
    assert validate_migration(NEW, OLD, back) == [
        "'glasses' changes type from integer to string: map it with a convert, or drop it"
    ]
    fixed = {
        **back,
        "fields": {**back["fields"], "glasses": {"from": "glasses", "convert": "string"}},
    }
    assert verdicts(switch_plan(NEW, OLD, fixed))["glasses"] == TRANSFORMED
    assert validate_migration(NEW, OLD, fixed) == []


# --------------------------------------------------------------------------- composing


SECOND = {
    "fields": {"litres": {"from": "volume_ml", "convert": "string"}, "unit": {"default": "l"}},
    "drop": ["tags"],
}


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {"day": st.just("2026-12-01")},
        optional={
            "amount": st.integers(0, 5000),
            "glasses": st.sampled_from(["1", "x", "12"]),
            "tags": st.text(alphabet="ab, ", max_size=6),
            "note": st.text(max_size=3),
            "done": st.sampled_from(["yes", "no"]),
        },
    )
)
def test_compose_equals_applying_in_order(record: dict) -> None:
    composed = compose(MIGRATION, SECOND)
    assert apply_migration(record, composed) == apply_migration(
        apply_migration(record, MIGRATION), SECOND
    )


def test_compose_refuses_two_conversions_of_one_field() -> None:
    again = {"fields": {"glasses": {"from": "glasses", "convert": "string"}}}
    with pytest.raises(ValueError, match="converted in both steps"):
        compose(MIGRATION, again)


def test_compose_converts_a_first_step_default_now() -> None:
    first = {"fields": {"unit": {"default": "ml"}, "count": {"default": "3"}}}
    second = {
        "fields": {
            "label": {"from": "unit", "values": {"ml": "millilitres"}},
            "count": {"from": "count", "convert": "integer"},
        }
    }
    composed = compose(first, second)
    assert composed["fields"]["label"] == {"default": "millilitres"}
    assert composed["fields"]["count"] == {"default": 3}
    assert apply_migration({"unit": "oz"}, composed) == {"label": "millilitres", "count": 3}


NAMES = ["a", "b", "c", "d"]


@st.composite
def migrations(draw) -> dict:
    fields = {}
    for target in draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3)):
        mapping = {}
        if draw(st.booleans()):
            mapping["from"] = draw(st.sampled_from(NAMES))
            convert = draw(st.sampled_from([None, "integer", "string"]))
            if convert:
                mapping["convert"] = convert
        if "from" not in mapping or draw(st.booleans()):
            mapping["default"] = draw(st.sampled_from([0, "7", "x"]))
        fields[target] = mapping
    sources = {m["from"] for m in fields.values() if "from" in m}
    drop = draw(st.lists(st.sampled_from([n for n in NAMES if n not in sources]), unique=True))
    return {"fields": fields, "drop": drop}


@settings(max_examples=500, deadline=None)
@given(
    migrations(),
    migrations(),
    st.dictionaries(st.sampled_from(NAMES), st.sampled_from([None, 1, 2.5, "4", "y", True])),
)
def test_compose_of_any_two_migrations_equals_applying_in_order(first, second, record) -> None:
    try:
        composed = compose(first, second)
    except ValueError as exc:
        assert "both steps" in str(exc) or "does not convert in the second step" in str(exc)
        return
    try:
        expected = apply_migration(apply_migration(record, first), second)
    except ValueError:
        # A value the first step fails to convert stops it even when the second step would
        # discard it; the composed migration never converts that value.
        return
    assert apply_migration(record, composed) == expected


def test_values_renamed_to_null_put_the_field_at_risk() -> None:
    """A guitar timer forked from a piano one keeps "scales" but has no "sight reading": the
    migration leaves that value out, which the plan must not call safe."""
    piano = {
        "type": "object",
        "properties": {"focus": {"type": "string", "enum": ["scales", "sight"]}},
    }
    guitar = {
        "type": "object",
        "properties": {"focus": {"type": "string", "enum": ["scales", "chords"]}},
    }
    leaves_out = {"fields": {"focus": {"from": "focus", "values": {"sight": None}}}}
    plan = switch_plan(piano, guitar, leaves_out)
    [field] = plan.fields
    assert (field.verdict, field.into) == (AT_RISK, ("focus",))
    assert '"sight" left out' in field.detail
    assert not plan.safe
    assert apply_migration({"focus": "sight"}, leaves_out) == {}
    renames = {"fields": {"focus": {"from": "focus", "values": {"sight": "chords"}}}}
    assert verdicts(switch_plan(piano, guitar, renames)) == {"focus": TRANSFORMED}
