"""The default demo's default export is a real preference dataset: a couple of hundred pairs
under the export's own privacy rules (opt-in, k-anonymity, confidence, all at their defaults),
each with the request its sides answer rather than the bare category."""

from __future__ import annotations

import re

import pyarrow.parquet as pq
from sqlmodel import Session, select

from feedback.export import ExportParameters
from market.catalog.models import SubAgent
from market.exports import services as export_service

# Measured: 194 to 215 pairs with the demo anchored at four dates over seven months (206 on
# the day this was written), mostly co-rated; the floor leaves room for the anchor's day.
MIN_PAIRS = 180
GENERIC = re.compile(r"^Write an? \w+ mini-app\.$")
PROMPT_TITLE = re.compile(r"mini-app, “(.+?)”")


def _rows(exports, config: str) -> list[dict]:
    """Every row of one config of the run in ``exports`` (shards sit under
    ``<run>/<config>/<category>/``)."""
    return [
        row
        for path in sorted(exports.glob(f"*/{config}/*/*.parquet"))
        for row in pq.read_table(path).to_pylist()
    ]


def test_the_default_export_of_the_demo_has_hundreds_of_pairs_with_real_prompts(demo_app, tmp_path):
    with Session(demo_app.engine) as session:
        run = export_service.create_run(session, ExportParameters())
        session.commit()
        run_id = run.id
    run = export_service.execute_run(demo_app.engine, run_id, tmp_path, settle_seconds=0)
    assert run.status == "succeeded", run.error
    counts = run.manifest["model"]["pairs"]
    print(f"\ndemo export: {counts}, {run.manifest['model']['exported_versions']} versions")

    pairs = _rows(tmp_path, "pairwise")
    assert len(pairs) == sum(counts.values()) >= MIN_PAIRS
    assert counts["co_rated"] > 0 and counts["parent_child"] + counts["sibling"] > 0
    assert not [p["prompt"] for p in pairs if GENERIC.match(p["prompt"])]

    # A child against its parent asks the child's request; apps of two lineages, the chosen
    # one's: both are that version's own prompt, as its scalar row has it. Two relatives ask
    # their nearest common ancestor's request: an app of the same lineage, by its title.
    own_prompt = {row["version_id"]: row["prompt"] for row in _rows(tmp_path, "scalar")}
    with Session(demo_app.engine) as session:
        lineage_titles: dict[int, set[str]] = {}
        for subagent in session.exec(select(SubAgent)):
            lineage_titles.setdefault(subagent.root_id or subagent.id, set()).add(subagent.title)
    for pair in pairs:
        if pair["relation"] == "parent_child":
            younger = max(pair["chosen_version_id"], pair["rejected_version_id"])
            assert pair["prompt"] == own_prompt[younger]
        elif pair["chosen_root_id"] != pair["rejected_root_id"]:
            assert pair["prompt"] == own_prompt[pair["chosen_version_id"]]
        else:
            title = PROMPT_TITLE.search(pair["prompt"]).group(1)
            assert title in lineage_titles[pair["chosen_root_id"]], pair["prompt"]
