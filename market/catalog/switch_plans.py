"""The plan a person sees before their data moves to another branch of the lineage: what
becomes of each field their current version keeps, in the target version.

The path runs from the current version up to the common ancestor and down to the target: each
hop down into a fork applies the migration that fork declared (checked at its publish by
:mod:`market.catalog.schema_checks`), composed into one migration from the current schema to
the target's; on every other hop a field keeps its name. With no declared migration on the
way, the implicit one stands (fields both schemas hold are kept, converted to text where only
the type changed and the target takes text). :mod:`evolution.data_schema` has the rules; who
sees which sub-agent is :mod:`market.identity.access`'s to say.

A switch (:func:`switch_install`) moves the person's install once they agreed to the plan;
Sprig keeps no records itself: the main agent applies the plan's migration to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from sqlmodel import Session, select

from evolution import data_schema
from market.catalog import installs
from market.catalog.installs import Installed
from market.catalog.models import Install, SubAgent, Version
from market.catalog.schema_checks import classify_or_refuse
from market.catalog.services import get_version, get_visible
from market.identity.access import can_view
from market.identity.tokens import Principal
from market.platform.errors import Conflict, NotFound, Unprocessable

DECLARED, IMPLICIT = "declared", "implicit"
SWITCH = "switch"  # an install's source when a switch made it


@dataclass(frozen=True)
class PathStep:
    """A hop of the tree path a switch follows: the version it arrives at (None where the
    caller may not see that sub-agent) and whether a declared migration takes the data there."""

    subagent_id: int | None
    version_id: int | None
    migration: str


@dataclass(frozen=True)
class SwitchPlanned:
    current: SubAgent
    current_version: Version
    installed: bool  # the current version is the one in the caller's agent
    target: SubAgent
    target_version: Version
    change: data_schema.SchemaChange
    plan: data_schema.SwitchPlan
    path: list[PathStep]
    migration: dict  # what the plan applies: the main agent runs it on the person's records
    new_scopes: list[str]  # what the target asks beyond what the person granted the current
    composed: bool  # False: the path's migrations did not compose; the implicit one is used


@dataclass(frozen=True)
class _Waypoint:
    subagent: SubAgent
    version: Version
    declared: dict | None = None  # the migration a fork declared into this version


def plan_switch(
    session: Session,
    viewer: Principal,
    current_id: int,
    target_id: int,
    *,
    version_id: int | None = None,
    target_version_id: int | None = None,
) -> SwitchPlanned:
    """What becomes of each field of the data kept by ``current_id`` (at ``version_id``, else
    the version in the caller's agent, else its latest) moved to ``target_id`` (at
    ``target_version_id``, else its latest), before anything happens. 404 for a sub-agent the
    caller may not see, 422 for one of another lineage or without a data_schema."""
    current = get_visible(session, viewer, current_id)
    try:
        target = get_visible(session, viewer, target_id)
    except NotFound:
        raise NotFound(
            f"No sub-agent {target_id}.",
            errors=[{"location": "to", "message": "no such sub-agent"}],
        ) from None
    if target.root_id != current.root_id:
        raise Unprocessable(
            f"Sub-agent {target.id} is not a branch of sub-agent {current.id}'s lineage: a "
            "switch moves data between branches of one family tree.",
            errors=[{"location": "to", "message": "another lineage"}],
        )
    install = _install_row(session, viewer.user_id, current.id)
    installed_version = install.version_id if install is not None and install.active else None
    current_version = get_version(session, current, version_id or installed_version)
    target_version = get_version(session, target, target_version_id)
    for who, version, where in (
        (current, current_version, "version_id"),
        (target, target_version, "to"),
    ):
        if version.manifest.get("data_schema") is None:
            raise Unprocessable(
                f"Version {version.number} of sub-agent {who.id} declares no data_schema: "
                "there is no stored data to plan for.",
                errors=[{"location": where, "message": "no data_schema"}],
            )
    old = current_version.manifest["data_schema"]
    new = target_version.manifest["data_schema"]
    change = classify_or_refuse(old, new, "to")
    waypoints = _waypoints(session, current, current_version, target, target_version)
    migration, composed = _path_migration(waypoints)
    migration = _between(migration, old, new)
    plan = data_schema.switch_plan(old, new, migration)
    path = [
        PathStep(
            w.subagent.id if can_view(viewer, w.subagent) else None,
            w.version.id if can_view(viewer, w.subagent) else None,
            DECLARED if w.declared is not None else IMPLICIT,
        )
        for w in waypoints[1:]
    ]
    return SwitchPlanned(
        current,
        current_version,
        installed_version == current_version.id,
        target,
        target_version,
        change,
        plan,
        path,
        migration,
        sorted(
            set(target_version.manifest.get("scopes", []))
            - set(
                install.granted_scopes
                if installed_version is not None
                else current_version.manifest.get("scopes", [])
            )
        ),
        composed,
    )


def _chain(session: Session, subagent: SubAgent) -> list[SubAgent]:
    """The sub-agent's ancestors, root first, then itself."""
    ids = [int(i) for i in subagent.ancestry.split("/") if i]
    rows = {s.id: s for s in session.exec(select(SubAgent).where(SubAgent.id.in_(ids)))}
    return [rows[i] for i in ids] + [subagent]


def _waypoints(
    session: Session,
    current: SubAgent,
    current_version: Version,
    target: SubAgent,
    target_version: Version,
) -> list[_Waypoint]:
    """The versions the data passes on the way: the current one, the version of the common
    ancestor the target's branch was forked from, each fork's first version down to the
    target (with the migration it declared) and the version forked from next, then the
    target version. Going up no migration was declared (a fork says how to come from its
    parent, not how to go back), so the way up is one implicit hop."""
    current_chain, target_chain = _chain(session, current), _chain(session, target)
    shared = 0
    for mine, theirs in zip(current_chain, target_chain, strict=False):
        if mine.id != theirs.id:
            break
        shared += 1
    down = target_chain[shared:]
    points = [_Waypoint(current, current_version)]
    if not down:  # the target is the current sub-agent or one of its ancestors
        points.append(_Waypoint(target, target_version))
        return _without_repeats(points)
    fork_point = _Waypoint(
        target_chain[shared - 1], session.get(Version, down[0].parent_version_id)
    )
    points.append(fork_point)
    for i, fork in enumerate(down):
        first = session.exec(
            select(Version).where(Version.subagent_id == fork.id, Version.number == 1)
        ).one()
        points.append(_Waypoint(fork, first, first.manifest.get("data_migration")))
        onward = (
            session.get(Version, down[i + 1].parent_version_id)
            if i + 1 < len(down)
            else target_version
        )
        points.append(_Waypoint(fork, onward))
    return _without_repeats(points)


def _without_repeats(points: list[_Waypoint]) -> list[_Waypoint]:
    """The waypoints that change something: a version without a schema declares no data, and
    a hop to the same schema without a declared migration keeps every field."""
    kept: list[_Waypoint] = []
    for point in points:
        schema = point.version.manifest.get("data_schema")
        if schema is None:
            continue
        if kept and point.declared is None:
            before = kept[-1].version.manifest["data_schema"]
            if data_schema.schema_fingerprint(before) == data_schema.schema_fingerprint(schema):
                continue
        kept.append(point)
    return kept


def _path_migration(points: list[_Waypoint]) -> tuple[dict, bool]:
    """One migration from the first waypoint's schema to the last's, and whether it is the
    path's own (False: its steps did not compose, and the implicit migration stands in).

    The path's own is the declared migrations composed in order; between them a field keeps
    its name (``switch_plan`` then keeps it where the target has it). Going through each
    intermediate schema instead would drop a field two sibling branches both added, which
    their common parent lacks, though the target has it and nothing would be lost."""
    first = points[0].version.manifest["data_schema"]
    last = points[-1].version.manifest["data_schema"]
    declared = [point.declared for point in points[1:] if point.declared is not None]
    if not declared:
        return data_schema.implicit_migration(first, last), True
    try:
        return reduce(data_schema.compose, declared), True
    except ValueError:
        return data_schema.implicit_migration(first, last), False


def _between(migration: dict, old: dict, new: dict) -> dict:
    """The migration cut down to what a record of ``old`` and the ``new`` schema hold: the
    composed steps also name fields of the schemas between (some in sub-agents the caller may
    not see) that such a record never has and the target never reads. A mapping from a field
    the record lacks is its default alone; the plan is made from, and says, this migration."""
    old_props, new_props = old.get("properties", {}), new.get("properties", {})
    fields = {}
    for target, mapping in migration.get("fields", {}).items():
        if target not in new_props:
            continue
        if "from" in mapping and mapping["from"] not in old_props:
            if "default" not in mapping:
                continue
            mapping = {"default": mapping["default"]}
        fields[target] = mapping
    return {"fields": fields, "drop": [d for d in migration.get("drop", []) if d in old_props]}


# --------------------------------------------------------------------------- switching


@dataclass(frozen=True)
class Switched:
    installed: Installed  # the target's install (``created`` False: an earlier switch made it)
    planned: SwitchPlanned


def switch_install(
    session: Session,
    caller: Principal,
    current_id: int,
    target_id: int,
    *,
    target_version_id: int | None,
    accept_losses: bool,
    grant_scopes: list[str],
) -> Switched:
    """Move the caller's install of ``current_id`` to ``target_id`` once they agreed to what
    the plan says: ``accept_losses`` when a field would be lost, at risk or unfilled, and
    ``grant_scopes`` naming every scope the target asks for beyond those granted to the
    current one (409 naming what is missing otherwise; nothing changes). A retried or
    concurrent switch that finds it done answers with the target's install."""
    caller.require("install")
    current = get_visible(session, caller, current_id)
    target = get_visible(session, caller, target_id)
    current_install = _install_row(session, caller.user_id, current.id)
    if current_install is None or not current_install.active:
        done = _install_row(session, caller.user_id, target.id)
        if (
            current_install is not None
            and done is not None
            and done.active
            and target_version_id in (None, done.version_id)
        ):
            # A retried (or concurrent) switch: the first one moved the install (or the
            # person moved it themselves, which leaves them where the switch would).
            planned = plan_switch(
                session,
                caller,
                current_id,
                target_id,
                version_id=current_install.version_id,
                target_version_id=done.version_id,
            )
            return Switched(Installed(done, [], False), planned)
        raise Conflict(
            f"Sub-agent {current.id} is not in your agent: there is nothing to switch.",
            errors=[{"location": "subagent_id", "message": "not installed"}],
        )
    planned = plan_switch(
        session, caller, current_id, target_id, target_version_id=target_version_id
    )
    if not planned.plan.safe and not accept_losses:
        at_stake = [
            f.name
            for f in planned.plan.fields
            if f.verdict in (data_schema.AT_RISK, data_schema.LOST)
        ]
        raise Conflict(
            "Switching would not carry all of the data over: show the plan to the person, "
            "and send accept_losses once they agree.",
            errors=[
                {"location": f"fields.{name}", "message": "lost or at risk"} for name in at_stake
            ]
            + [
                {"location": f"unfilled.{name}", "message": "required, filled by nothing"}
                for name in planned.plan.unfilled
            ],
        )
    ungranted = sorted(set(planned.new_scopes) - set(grant_scopes))
    if ungranted:
        raise Conflict(
            f"{target.title} asks for more of the person's data than they granted: ask them, "
            f"and send grant_scopes with {', '.join(ungranted)}.",
            errors=[{"location": "grant_scopes", "message": scope} for scope in ungranted],
        )
    installs.uninstall(session, caller, current)
    installed = installs.install(
        session,
        caller,
        target,
        version_id=planned.target_version.id,
        source=SWITCH,
        exposure_id=None,
    )
    # New to the person is what the target asks beyond the current one, just granted.
    return Switched(Installed(installed.install, planned.new_scopes, installed.created), planned)


def _install_row(session: Session, user_id: int | None, subagent_id: int) -> Install | None:
    """The person's install of the sub-agent, active or not, as committed last."""
    if user_id is None:
        return None
    return session.exec(
        select(Install)
        .where(Install.user_id == user_id, Install.subagent_id == subagent_id)
        .execution_options(populate_existing=True)
    ).first()
