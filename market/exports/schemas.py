"""Request and response models of reward-dataset exports."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, StrictBool, StringConstraints

from market.platform.schemas import Id, StrictInput, UtcDatetime, whole_number


# --------------------------------------------------------------------------- reward exports
def _json_number(value: Any) -> Any:
    # A JSON number only: "0.9" and true are not confidences.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return value


Number = Annotated[float, BeforeValidator(_json_number)]


class ExportIn(StrictInput):
    """What to export. Every field is optional; the defaults are the documented ones."""

    since_run: Id | None = Field(
        None, description="incremental: only feedback written after this run's watermark"
    )
    incremental: StrictBool = Field(
        False,
        description="without `since_run`: incremental from the last run that succeeded "
        "(everything if none did); with it, implied",
    )
    k_anonymity: whole_number(5, 100_000) = Field(
        5, description="a version needs at least this many distinct raters"
    )
    confidence: Number = Field(
        0.95, ge=0.6, le=0.999, description="P(chosen better) a pair (or a KTO label) needs"
    )
    test_share: Number = Field(0.1, ge=0.0, le=0.5, description="share of lineage roots in test")
    include_comments: StrictBool = Field(False, description="scrubbed comments and tags")
    conversational: StrictBool = Field(True, description="also the *_conversational configs")
    openai_jsonl: StrictBool = Field(False, description="also OpenAI preference JSONL")


class ExportListQuery(StrictInput):
    limit: int = Field(20, ge=1, le=100)
    cursor: Annotated[str, StringConstraints(max_length=200)] | None = None


class ExportFileOut(BaseModel):
    path: str
    config: str
    category: str
    split: str
    rows: int
    bytes: int
    sha256: str
    url: str


class ExportRunOut(BaseModel):
    id: int
    folder: str | None = Field(
        description="the run's folder once it succeeded: `run-NNNNN-<fingerprint>` (runs "
        "written before fingerprints: `run-NNNNN`), the name `load_dataset` caches it under"
    )
    status: str = Field(description="queued, running, succeeded or failed")
    since_run: int | None
    parameters: dict[str, Any]
    watermark: UtcDatetime | None
    created_at: UtcDatetime
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    error: str | None
    manifest: dict[str, Any] | None = Field(description="the run's manifest.json once it succeeded")
    files: list[ExportFileOut] = Field(description="every file of the run, with a download URL")


class ExportRunList(BaseModel):
    """Runs newest first; each as ``GET /exports/{run_id}`` shows it."""

    items: list[ExportRunOut]
    next_cursor: str | None
