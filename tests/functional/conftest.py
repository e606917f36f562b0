"""People most functional tests need: two signed-up users with tokens (a file may override
either with a richer profile)."""

from __future__ import annotations

import pytest

from tests.factories import make_user


@pytest.fixture
def alice(engine):
    return make_user(engine, "alice")


@pytest.fixture
def bob(engine):
    return make_user(engine, "bob")
