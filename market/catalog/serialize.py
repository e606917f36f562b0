"""Turn table rows and the services' results into response models (never return a table row:
it would leak fields), and request bodies into the services' commands."""

from __future__ import annotations

from market.catalog import bundles
from market.catalog.installs import ForkRequestPage, InstallPage
from market.catalog.models import ForkRequest, Install, NearCopyOffer, Report, SubAgent, Version
from market.catalog.near_copies import OfferedOriginal
from market.catalog.queries import Card, CardAuthor, CardPage, LineagePath, Subtree
from market.catalog.schemas import (
    AuthorOut,
    BestDescendantOut,
    FieldChangeOut,
    FieldPlanOut,
    ForkIn,
    ForkRequestList,
    ForkRequestOut,
    InstallList,
    InstallOut,
    Lineage,
    LineageNode,
    MergedDiffOut,
    NearCopyEvidenceOut,
    NearCopyOut,
    Page,
    PathStepOut,
    RankingOut,
    ReportOut,
    SchemaChangeOut,
    SubAgentCard,
    SubAgentOut,
    SwitchEndOut,
    SwitchPlanOut,
    Tree,
    TreeNode,
    UpstreamDetailOut,
    UpstreamFileOut,
    UpstreamProposalList,
    UpstreamProposalOut,
    UpstreamQueue,
    VersionOut,
)
from market.catalog.services import Detail, ForkCommand
from market.catalog.switch_plans import SwitchPlanned
from market.catalog.upstream import Offer, OfferPage, offer_diff
from market.identity.access import can_view
from market.identity.models import User
from market.ranking.services import ranking_figures


def fork_command(parent_id: int, body: ForkIn, bundle: bundles.Bundle) -> ForkCommand:
    return ForkCommand(
        parent_id=parent_id,
        title=body.title,
        fork_request=body.fork_request,
        bundle=bundle,
        summary=body.summary,
        story=body.story,
        tags=body.tags,
        category=body.category.value if body.category else None,
        parent_version_id=body.parent_version_id,
        fork_request_id=body.fork_request_id,
        visibility=body.visibility.value,
        on_behalf_of=body.on_behalf_of,
    )


def author_out(user: User | CardAuthor) -> AuthorOut:
    return AuthorOut(handle=user.handle, display_name=user.display_name)


def version_out(version: Version) -> VersionOut:
    return VersionOut(
        id=version.id,
        number=version.number,
        sha256=version.sha256,
        manifest=version.manifest,
        changelog=version.changelog,
        status=version.status,
        status_reason=version.status_reason,
        size_bytes=version.size_bytes,
        file_count=version.file_count,
        created_at=version.created_at,
    )


def card_out(
    subagent: SubAgent | Card, author: User | CardAuthor, similar_count: int = 0
) -> SubAgentCard:
    """A list card, from a sub-agent row and its author or from a query's ``Card`` (the two
    carry the same fields)."""
    return SubAgentCard(
        id=subagent.id,
        title=subagent.title,
        summary=subagent.summary,
        category=subagent.category,
        tags=subagent.tags,
        author=author_out(author),
        visibility=subagent.visibility,
        status=subagent.status,
        parent_id=subagent.parent_id,
        depth=subagent.depth,
        install_count=subagent.install_count,
        fork_count=subagent.fork_count,
        created_at=subagent.created_at,
        similar_count=similar_count,
    )


def listed_card_out(card: Card) -> SubAgentCard:
    return card_out(card, card.author, card.similar_count)


def page_out(page: CardPage) -> Page:
    return Page(items=[listed_card_out(card) for card in page.items], next_cursor=page.next_cursor)


def lineage_out(path: LineagePath) -> Lineage:
    ancestors = [
        LineageNode(
            depth=node.depth,
            hidden=node.hidden,
            subagent=listed_card_out(node.subagent) if node.subagent else None,
        )
        for node in path.ancestors
    ]
    return Lineage(subagent_id=path.subagent_id, root_id=path.root_id, ancestors=ancestors)


def tree_out(tree: Subtree) -> Tree:
    nodes = [
        TreeNode(
            id=node.id,
            parent_id=node.parent_id,
            depth=node.depth,
            title=node.title,
            status=node.status,
            install_count=node.install_count,
            fork_count=node.fork_count,
            shown_children=node.shown_children,
        )
        for node in tree.nodes
    ]
    return Tree(root_id=tree.root_id, depth=tree.depth, nodes=nodes, truncated=tree.truncated)


def subagent_out(subagent: SubAgent, author: User, latest: Version | None) -> SubAgentOut:
    return SubAgentOut(
        id=subagent.id,
        title=subagent.title,
        summary=subagent.summary,
        story=subagent.story,
        category=subagent.category,
        tags=subagent.tags,
        author=author_out(author),
        visibility=subagent.visibility,
        status=subagent.status,
        status_reason=subagent.status_reason,
        parent_id=subagent.parent_id,
        parent_version_id=subagent.parent_version_id,
        root_id=subagent.root_id,
        depth=subagent.depth,
        fork_request=subagent.fork_request_text,
        fork_request_id=subagent.fork_request_id,
        latest_version=version_out(latest) if latest else None,
        install_count=subagent.install_count,
        fork_count=subagent.fork_count,
        created_at=subagent.created_at,
        updated_at=subagent.updated_at,
    )


def near_copy_out(offered: OfferedOriginal) -> NearCopyOut:
    return NearCopyOut(
        id=offered.original.id,
        title=offered.original.title,
        author=author_out(offered.author),
        similarity=offered.offer.similarity,
    )


def report_out(report: Report, offer: NearCopyOffer | None) -> ReportOut:
    evidence = None
    if offer is not None:
        evidence = NearCopyEvidenceOut(
            original_id=offer.original_id,
            similarity=offer.similarity,
            shared_shingles=offer.shared_shingles,
            matching_files=offer.matching_files,
        )
    return ReportOut(
        id=report.id,
        subagent_id=report.subagent_id,
        reason=report.reason,
        detail=report.detail,
        status=report.status,
        created_at=report.created_at,
        near_copy=evidence,
    )


def install_out(
    install: Install, new_scopes: list[str] | None = None, card: SubAgentCard | None = None
) -> InstallOut:
    return InstallOut(
        id=install.id,
        subagent_id=install.subagent_id,
        version_id=install.version_id,
        source=install.source,
        active=install.active,
        granted_scopes=install.granted_scopes,
        new_scopes=new_scopes or [],
        created_at=install.created_at,
        subagent=card,
    )


def fork_request_out(request: ForkRequest, requester: User) -> ForkRequestOut:
    return ForkRequestOut(
        id=request.id,
        subagent_id=request.subagent_id,
        requester=requester.handle,
        text=request.text,
        status=request.status,
        fulfilled_by_id=request.fulfilled_by_id,
        created_at=request.created_at,
    )


def install_page_out(page: InstallPage) -> InstallList:
    items = [
        install_out(row.install, card=card_out(row.subagent, row.author)) for row in page.items
    ]
    return InstallList(items=items, next_cursor=page.next_cursor)


def fork_request_page_out(page: ForkRequestPage) -> ForkRequestList:
    items = [fork_request_out(queued.request, queued.requester) for queued in page.items]
    return ForkRequestList(items=items, next_cursor=page.next_cursor)


def visible_detail(
    session, viewer, read: Detail, language: str | None = None, version: Version | None = None
) -> SubAgentOut:
    """A sub-agent's detail as ``viewer`` may see it, for every caller (API, MCP, the answer to
    a write): links to a parent or root the viewer may not see are blanked (their ids alone
    would reveal that they exist), and the ranking figures and best descendant (preferring
    one in the reader's ``language``) are added. ``read`` is the sub-agent and those rows, read
    together (``market.catalog.services.get_visible_detail`` or ``read_detail``); ``version``
    is the one to show when it is not the latest (a publish that matched an older one)."""
    detail = subagent_out(read.subagent, read.author, version or read.version)
    links = (read.parent, read.root)
    hidden = {link.id for link in links if link is not None and not can_view(viewer, link)}
    figures = ranking_figures(
        session, viewer, detail.id, language, score=read.score, best=read.best
    )
    if detail.parent_id in hidden:
        detail.parent_id = detail.parent_version_id = detail.fork_request_id = None
    if detail.root_id in hidden:
        detail.root_id = None
    if figures is None:
        return detail
    detail.ranking = RankingOut.model_validate(figures.score, from_attributes=True)
    best = figures.best_descendant
    if best is not None:
        detail.best_descendant = BestDescendantOut(
            id=best.id,
            title=best.title,
            depth=best.depth,
            probability_better=round(figures.best_probability, 3),
            language=figures.best_language,
        )
    return detail


def upstream_out(offer: Offer) -> UpstreamProposalOut:
    proposal = offer.proposal
    return UpstreamProposalOut(
        id=proposal.id,
        fork_id=proposal.fork_id,
        parent_id=proposal.parent_id,
        parent_title=offer.parent.title,
        status=proposal.status,
        conflicted=proposal.conflicted,
        base_version=offer.base.number,
        upstream_version=offer.upstream.number,
        fork_version=offer.fork_version.number,
        current_version=offer.current.number,
        stale=offer.stale,
        added_scopes=proposal.added_scopes,
        files=[UpstreamFileOut(**entry) for entry in proposal.file_summary],
        merged_version_id=proposal.merged_version_id,
        created_at=proposal.created_at,
        decided_at=proposal.decided_at,
    )


def upstream_detail_out(session, offer: Offer) -> UpstreamDetailOut:
    """A proposal with its conflicts and the diff accepting it would make."""
    diff = offer_diff(session, offer)
    return UpstreamDetailOut(
        **upstream_out(offer).model_dump(),
        conflicts=offer.proposal.conflicts,
        diff=None if diff is None else MergedDiffOut(**diff),
    )


def upstream_page_out(page: OfferPage) -> UpstreamProposalList:
    return UpstreamProposalList(
        items=[upstream_out(offer) for offer in page.items],
        next_cursor=page.next_cursor,
        open_count=page.open_count,
        conflicted_count=page.conflicted_count,
    )


def upstream_queue_out(offers: list[Offer], next_cursor: str | None) -> UpstreamQueue:
    return UpstreamQueue(items=[upstream_out(offer) for offer in offers], next_cursor=next_cursor)


def switch_plan_out(planned: SwitchPlanned) -> SwitchPlanOut:
    def end(subagent, version) -> SwitchEndOut:
        return SwitchEndOut(
            subagent_id=subagent.id,
            title=subagent.title,
            version_id=version.id,
            version_number=version.number,
        )

    plan = planned.plan
    return SwitchPlanOut(
        current=end(planned.current, planned.current_version),
        installed=planned.installed,
        target=end(planned.target, planned.target_version),
        change=SchemaChangeOut(
            kind=planned.change.kind,
            fields=[
                FieldChangeOut(name=f.name, change=f.change, detail=f.detail, kind=f.kind)
                for f in planned.change.fields
            ],
        ),
        fields=[
            FieldPlanOut(name=f.name, verdict=f.verdict, into=list(f.into), detail=f.detail)
            for f in plan.fields
        ],
        defaults=plan.defaults,
        unfilled=list(plan.unfilled),
        safe=plan.safe,
        path=[
            PathStepOut(subagent_id=p.subagent_id, version_id=p.version_id, migration=p.migration)
            for p in planned.path
        ],
        migration=planned.migration,
        new_scopes=planned.new_scopes,
        composed=planned.composed,
    )
