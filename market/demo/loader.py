"""Load the generated demo community through the same service paths real publishes take.

Every demo bundle is validated and scanned like any upload, forks get their parent links from
the server, and counters come from the rows (``recount_counters``), so the demo can only show
what the product really does.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine, func
from sqlmodel import select

from market.catalog import bundles, near_copies
from market.catalog import services as catalog
from market.catalog.maintenance import recount_counters
from market.catalog.models import ForkRequest, Install, SubAgent, Version
from market.demo.activity import DEMO_DAYS, Progress, no_progress, simulate_activity
from market.demo.content import DemoCommunity, generate_community
from market.identity.models import User
from market.identity.tokens import METRICS_SCOPE, SERVICE_SCOPES, issue_token
from market.platform.db import UnitOfWork, session_scope
from market.platform.time import utcnow
from market.ranking.services import run_ranking
from market.usage.ingest import log_installs

# The demo's main-agent service may do what any service does, except scrape /metrics: it is
# an agent, not the operator's Prometheus.
DEMO_SERVICE_SCOPES = sorted(SERVICE_SCOPES - {METRICS_SCOPE})


def is_empty(engine: Engine) -> bool:
    with session_scope(engine) as session:
        return session.exec(select(func.count(User.id))).one() == 0


def load_demo(
    engine: Engine, seed: int = 7, *, now: datetime | None = None, progress: Progress = no_progress
) -> dict[str, int]:
    """Load the community and its activity, all anchored at one reading of the clock
    (``now``), so the catalog and the days of usage agree on which day is today.

    ``progress`` gets a line as each stage starts: the load takes one to three minutes, most
    of it the activity, written through the real ingest and feedback paths."""
    community = generate_community(seed)
    progress(
        f"Loading the demo community: {len(community.users)} people, "
        f"{len(community.subagents)} sub-agents and {DEMO_DAYS} days of their activity "
        "(one to three minutes, once)"
    )
    now = now or utcnow()
    with session_scope(engine) as session:
        users = _load_users(session, community)
        keys = _load_subagents(session, community, users, now)
        installs = _load_installs(session, community, users, keys, now)
        requests = _load_fork_requests(session, community, users, keys, now)
        session.flush()
        recount_counters(session)
        # The demo's apps share templates: learn them, so a visitor's copy of one is found.
        near_copies.refresh(session)
    progress(f"  published {len(keys)} sub-agents; writing their usage and ratings")
    activity = simulate_activity(engine, seed, now=now, progress=progress)
    # Browse sorts, best descendants and tastes are there from the start.
    progress("  ranking the catalog")
    run_ranking(lambda: UnitOfWork(engine))
    return {
        "users": len(users),
        "sub-agents": len(keys),
        "installs": installs,
        "open fork requests": requests,
        **activity,
    }


def _load_users(session, community: DemoCommunity) -> dict[str, User]:
    users = {}
    for demo in community.users:
        user = User(
            handle=demo.handle,
            display_name=demo.display_name,
            kind=demo.kind,
            role=demo.role,
            email=demo.email,
            phone=demo.phone,
            address=demo.address,
            bio=demo.bio,
            locale=demo.locale,
            share_feedback_for_training=demo.share_feedback_for_training,
        )
        session.add(user)
        users[demo.handle] = user
    session.flush()
    return users


def _load_subagents(session, community, users, now) -> dict[str, SubAgent]:
    keys: dict[str, SubAgent] = {}
    for demo in community.subagents:
        author = users[demo.author]
        created = now - timedelta(days=demo.created_days_ago)
        first, *later = demo.versions
        bundle = bundles.bundle_from_json({"manifest": first.manifest, "files": first.files})
        listing = {
            "title": demo.title,
            "summary": demo.summary,
            "story": demo.story,
            "tags": list(demo.tags),
            "visibility": demo.visibility,
            "created_at": created,
        }
        if demo.parent is None:
            subagent, _version, _ = catalog.publish(
                session, author, category=demo.category, bundle=bundle, **listing
            )
        else:
            subagent, _version, _ = catalog.fork(
                session,
                author,
                keys[demo.parent],
                bundle=bundle,
                fork_request=demo.fork_request,
                category=demo.category,
                **listing,
            )
        for step, later_version in enumerate(later, start=1):
            version, _ = catalog.publish_version(
                session,
                author,
                subagent,
                bundles.bundle_from_json(
                    {"manifest": later_version.manifest, "files": later_version.files}
                ),
                later_version.changelog,
            )
            # Later versions land between the sub-agent's birth and today.
            version.created_at = created + (now - created) * step / (len(later) + 1)
        keys[demo.key] = subagent
    return keys


def _load_installs(session, community, users, keys, now) -> int:
    latest = {
        v.subagent_id: v
        for v in session.exec(
            select(Version).where(Version.id.in_([s.latest_version_id for s in keys.values()]))
        )
    }
    seen = set()
    logged = []
    for demo in community.installs:
        subagent = keys[demo.subagent]
        user = users[demo.user]
        if (user.id, subagent.id) in seen:
            continue
        seen.add((user.id, subagent.id))
        version = latest[subagent.id]
        when = now - timedelta(days=demo.days_ago)
        session.add(
            Install(
                user_id=user.id,
                subagent_id=subagent.id,
                version_id=version.id,
                source="browse",
                granted_scopes=sorted(version.manifest.get("scopes", [])),
                created_at=when,
                updated_at=when,
            )
        )
        logged.append((user.id, subagent.id, "install", when))
    log_installs(session, logged)
    return len(seen)


def _load_fork_requests(session, community, users, keys, now) -> int:
    for demo in community.fork_requests:
        session.add(
            ForkRequest(
                subagent_id=keys[demo.subagent].id,
                requester_id=users[demo.user].id,
                text=demo.text,
                created_at=now - timedelta(days=demo.days_ago),
            )
        )
    return len(community.fork_requests)


def demo_tokens(engine: Engine) -> list[tuple[str, str, str]]:
    """Fresh tokens for the demo's most-installed creator and for the coding-agent service."""
    with session_scope(engine) as session:
        creator = session.exec(
            select(User)
            .join(SubAgent, SubAgent.author_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.sum(SubAgent.install_count).desc(), User.id)
        ).first()
        service = session.exec(
            select(User).where(User.kind == "service").order_by(User.handle)
        ).first()
        tokens = []
        if creator is not None:
            tokens.append(("creator", creator.handle, issue_token(session, creator, name="demo")))
        if service is not None:
            scopes = DEMO_SERVICE_SCOPES
            token = issue_token(session, service, scopes, name="demo")
            tokens.append(("service", service.handle, token))
        return tokens
