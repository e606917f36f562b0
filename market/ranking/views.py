"""How ranking works: the page that publishes the formulas and the last run's parameters."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from flask import render_template
from sqlmodel import select

import evolution.ranking
from market.platform.api_deps import db
from market.ranking.models import RankingRun
from market.web.blueprint import bp, shared_page

# The layout of ``evolution.ranking``'s docstring, the one text of the formulas (also served
# as plain text by the API): "N. Title" headings at the margin, prose indented by 3 ("Nb." opens
# a paragraph), "* " bullets, and formulas indented by 7 or more.
SECTION = re.compile(r"(\d+)\. (.+)")
BULLET = re.compile(r"( *)\* (.+)")
SUBSECTION = re.compile(r" +\d+[a-z]\. .+")  # "1b. …": a new paragraph of its section
FORMULA_INDENT = 7


@dataclass
class Part:
    kind: str  # "text" or "formula"
    lines: list[str]

    @property
    def text(self) -> str:
        if self.kind == "formula":
            return textwrap.dedent("\n".join(self.lines))
        return " ".join(line.strip() for line in self.lines)


@dataclass
class Block:
    kind: str  # "heading", "text", "formula" or "list"
    part: Part | None = None  # a heading's, paragraph's or formula's text
    items: list[list[Part]] = field(default_factory=list)  # a list's items


def formula_blocks(text: str) -> list[Block]:
    """The docstring as headings, paragraphs, formula blocks and lists (a list item may hold
    formulas of its own), so the page can lay it out for a phone: prose wraps, a formula keeps
    its alignment and scrolls inside its box."""
    blocks: list[Block] = []
    open_text: Part | None = None  # the paragraph or item text a prose line continues
    item: list[Part] | None = None  # the list item being read
    item_indent = 0
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            open_text, item = None, None
            continue
        heading = SECTION.fullmatch(line)
        bullet = BULLET.fullmatch(line)
        if heading and indent == 0:
            blocks.append(Block("heading", Part("text", [line])))
            open_text, item = None, None
        elif indent >= FORMULA_INDENT:
            if item is not None:
                if item[-1].kind == "formula":
                    item[-1].lines.append(line)
                else:
                    item.append(Part("formula", [line]))
            elif blocks and blocks[-1].kind == "formula":
                blocks[-1].part.lines.append(line)
            else:
                blocks.append(Block("formula", Part("formula", [line])))
            open_text = None
        elif bullet:
            if item is None or not blocks or blocks[-1].kind != "list":
                blocks.append(Block("list"))
            open_text = Part("text", [bullet.group(2)])
            item = [open_text]
            item_indent = len(bullet.group(1)) + 2
            blocks[-1].items.append(item)
        elif item is not None and indent >= item_indent:
            if open_text is None:
                open_text = Part("text", [])
                item.append(open_text)
            open_text.lines.append(line)
        else:
            if item is not None or SUBSECTION.fullmatch(line):
                item, open_text = None, None
            if open_text is None:
                open_text = Part("text", [])
                blocks.append(Block("text", open_text))
            open_text.lines.append(line)
    return blocks


@bp.get("/ranking")
@shared_page
def ranking_page():
    """How ranking works: the published formulas and the last run's estimated parameters."""
    session = db()
    last = session.scalars(
        select(RankingRun).where(RankingRun.mode != "skipped").order_by(RankingRun.id.desc())
    ).first()
    # The docstring's first line is its title; the page has its own.
    _title, _, body = evolution.ranking.__doc__.strip().partition("\n")
    return render_template("web/ranking.html", blocks=formula_blocks(body), last_run=last)
