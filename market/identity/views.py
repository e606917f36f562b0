"""The sign-in page (a token, or the embedded demo's picker) and signing out."""

from __future__ import annotations

from flask import redirect, render_template, request, url_for
from sqlmodel import select

from market.catalog.models import Install, SubAgent
from market.identity.models import User
from market.platform.api_deps import db
from market.platform.errors import SprigError
from market.web import signin
from market.web.blueprint import bp


def _demo_people(limit: int = 16) -> list[User]:
    """The demo picker: the most installed creators first, then some people who only import."""
    from sqlmodel import func

    session = db()
    creators = list(
        session.exec(
            select(User)
            .join(SubAgent, SubAgent.author_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.sum(SubAgent.install_count).desc(), User.id)
            .limit(limit - 4)
        )
    )
    seen = {u.id for u in creators}
    importers = [
        u
        for u in session.exec(
            select(User)
            .join(Install, Install.user_id == User.id)
            .where(User.kind == "person")
            .group_by(User.id)
            .order_by(func.count(Install.id).desc(), User.id)
            .limit(limit)
        )
        if u.id not in seen
    ][:4]
    return creators + importers


@bp.route("/signin", methods=["GET", "POST"])
def signin_page():
    target = signin.same_site_path(request.values.get("next"))
    error = None
    if request.method == "POST":
        try:
            if request.form.get("demo_handle"):
                signin.sign_in_demo_user(request.form["demo_handle"])
            else:
                signin.sign_in_with_token(request.form.get("token", ""))
        except SprigError as problem:
            error = problem.detail
        else:
            return redirect(target)
    demo = signin.demo_signin_enabled()
    return render_template(
        "web/signin.html",
        next=target,
        error=error,
        demo_people=_demo_people() if demo else [],
    ), (400 if error else 200)


@bp.post("/signout")
def signout():
    signin.sign_out()
    return redirect(url_for("web.browse_page"))
