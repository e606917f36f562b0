"""What pages send so they lay out on a phone: the ranking formulas as HTML, the API docs'
viewport and icon, distinct retention cohorts. (The layouts themselves, measured in Chromium,
are tests/e2e/test_layouts.py.)"""

from __future__ import annotations

import base64
import hashlib
import re

from market.ranking.views import formula_blocks
from market.usage.views import _retention_chart

DOC = """Every number below is computed
from three kinds of data.

1. One rating scale
   Stars and thumbs differ, so each is put
   in standard units:
       z = (r - mean) / sd
       sd over all ratings
   of that kind.
   1b. The ends of a scale are bounds.

4. Scores
   * display score: a lower bound,
     E - 1.64 sd.
   * fork gain: what forking did,
         (sum + k) / (n + k)
     shrunk toward its branch.
   Never ranked by installs.
"""


def shape(blocks):
    out = []
    for block in blocks:
        if block.kind == "list":
            out.append(("list", [[(p.kind, p.text) for p in item] for item in block.items]))
        else:
            out.append((block.kind, block.part.text))
    return out


def test_the_formulas_docstring_becomes_headings_paragraphs_formulas_and_lists():
    assert shape(formula_blocks(DOC)) == [
        ("text", "Every number below is computed from three kinds of data."),
        ("heading", "1. One rating scale"),
        ("text", "Stars and thumbs differ, so each is put in standard units:"),
        ("formula", "z = (r - mean) / sd\nsd over all ratings"),
        ("text", "of that kind."),
        ("text", "1b. The ends of a scale are bounds."),
        ("heading", "4. Scores"),
        (
            "list",
            [
                [("text", "display score: a lower bound, E - 1.64 sd.")],
                [
                    ("text", "fork gain: what forking did,"),
                    ("formula", "(sum + k) / (n + k)"),
                    ("text", "shrunk toward its branch."),
                ],
            ],
        ),
        ("text", "Never ranked by installs."),
    ]


def test_ranking_page_is_readable_html_not_a_raw_docstring(client):
    body = client.get("/ranking").get_data(as_text=True)
    assert "<h2>1. One rating scale</h2>" in body
    assert len(re.findall(r'<pre class="formula"><code>', body)) >= 5
    assert body.count("<li>") >= 10
    assert "   * " not in body  # no bullet left as plain text
    assert "How Sprig ranks sub-agents." not in body  # the docstring's title: the page has one


def test_api_docs_have_a_viewport_and_an_icon_that_exists(client):
    response = client.get("/api/v1/docs")
    body = response.get_data(as_text=True)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in body
    icon = re.search(r'<link rel="icon" type="([^"]+)"\s+href="([^"]+)"', body)
    assert icon, "no icon link"
    fetched = client.get(icon.group(2))
    assert fetched.status_code == 200
    assert fetched.mimetype == icon.group(1) == "image/svg+xml"
    # The rewritten page still runs its inline script under the page's CSP.
    script = re.search(r"<script>(.*?)</script>", body, re.S).group(1).encode()
    digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
    assert f"'sha256-{digest}'" in response.headers["Content-Security-Policy"]


def cohort(start: str, day1, day7, day30, size: int = 10) -> dict:
    rate = {
        k: (None if v is None else v / size) for k, v in (("1", day1), ("7", day7), ("30", day30))
    }
    return {
        "cohort_start": start,
        "cohort_size": size,
        "day1": day1 or 0,
        "day7": day7 or 0,
        "day30": day30 or 0,
        "day1_rate": rate["1"],
        "day7_rate": rate["7"],
        "day30_rate": rate["30"],
    }


def test_six_retention_cohorts_each_get_their_own_colour_and_the_average_its_own():
    cohorts = [cohort(f"2026-11-0{day}", 5, 3, None) for day in range(1, 9)]
    chart = _retention_chart(cohorts)
    classes = [line.css_class for line in chart.lines]
    assert classes == [f"cohort-{n}" for n in range(1, 7)] + ["average"]
    names = [line.name for line in chart.lines]
    assert names[:6] == [f"cohort of 2026-11-0{day}" for day in range(3, 9)]
