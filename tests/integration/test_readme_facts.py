"""What the README tells a newcomer to type matches what the demo really prints and accepts."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from market.demo.loader import demo_tokens

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


def test_the_readme_names_the_creator_the_demo_prints(demo_app):
    labels = {label: handle for label, handle, _token in demo_tokens(demo_app.engine)}
    assert f"creator token ({labels['creator']}): sprig_…" in README
    assert f"service token ({labels['service']}): sprig_…" in README
    assert "export TOKEN=" in README and "export SERVICE=" in README


def test_the_readmes_event_is_one_the_api_stores(demo_app):
    """The /events example, with its time filled in as the shell would, is stored."""
    example = re.search(r"-d '(\{\"events\".*?\}\]\})'", README, re.S)
    assert example, "the README shows a POST /events body"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = example.group(1).replace("'\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"'", now)
    body = body.replace("6f1c2b9e-4a0d-4c3e-9a57-0d7c5f1e2a33", str(uuid.uuid4()))
    tokens = {label: token for label, _handle, token in demo_tokens(demo_app.engine)}
    response = demo_app.app.test_client().post(
        "/api/v1/events",
        data=body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {tokens['service']}"},
    )
    assert response.status_code == 202, response.get_json()
    assert response.get_json()["stored"] == 1
