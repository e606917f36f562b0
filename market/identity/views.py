"""The sign-in page (a token, or the embedded demo's picker), signing out, and the signed-in
person's API tokens (list and revoke)."""

from __future__ import annotations

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext
from sqlmodel import select

from market.catalog.models import Install, SubAgent
from market.identity.models import User
from market.identity.tokens import caller, list_tokens, revoke_token_id, token_state
from market.platform.api_deps import commit, db
from market.platform.errors import BadRequest, SprigError, TooManyRequests
from market.platform.time import utcnow
from market.web import signin
from market.web.blueprint import bp

TOKENS_PAGE_SIZE = 50


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
        except TooManyRequests:
            raise  # the error page, with Retry-After, not a form to try again at once
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


@bp.get("/me/tokens")
def my_tokens_page():
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=request.full_path))
    cursor = request.args.get("cursor", "").strip() or None
    if cursor and (len(cursor) > 200 or "\x00" in cursor):
        raise BadRequest("The cursor is not one this site made.")
    page = list_tokens(db(), viewer.user_id, limit=TOKENS_PAGE_SIZE, cursor=cursor)
    now = utcnow()
    items = [(row, token_state(row, now)) for row in page.items]
    next_url = url_for("web.my_tokens_page", cursor=page.next_cursor) if page.next_cursor else None
    return render_template(
        "web/tokens.html", items=items, current_token_id=viewer.token_id, next_url=next_url
    )


@bp.post("/me/tokens/<int(max=2147483647):token_id>/revoke")
def revoke_my_token(token_id: int):
    """Revoke one of the signed-in person's tokens (theirs only: another's is a 404). Revoking
    the token this browser signed in with signs it out from the next page on."""
    viewer = caller()
    if not viewer.is_authenticated:
        return redirect(url_for("web.signin_page", next=url_for("web.my_tokens_page")))
    revoked = revoke_token_id(db(), token_id, owner_id=viewer.user_id)
    commit()
    if token_id == viewer.token_id:
        flash(gettext("Token revoked. You signed in with it, so you are signed out."), "ok")
    elif revoked:
        flash(gettext("Token revoked: it is refused from now on."), "ok")
    else:
        flash(gettext("That token was already revoked."), "ok")
    return redirect(url_for("web.my_tokens_page"))
