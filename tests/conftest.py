"""Shared fixtures: the example bundle and real local sandbox backends."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from a01gym.sandbox import isolation
from a01gym.sandbox.local import LocalBackend
from a01gym.scenario.bundle import Bundle

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def full_isolation() -> None:
    """Fail (in CI, A01GYM_REQUIRE_ISOLATION=1) or skip when isolation layers are missing."""
    missing = isolation.probe().missing()
    if not missing:
        return
    message = f"full sandbox isolation unavailable here: {'; '.join(missing)}"
    if os.environ.get("A01GYM_REQUIRE_ISOLATION") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def idor_bundle() -> Bundle:
    return Bundle.load(FIXTURES / "idor_notes")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def backend() -> AsyncIterator[LocalBackend]:
    """One real backend per test module (starting a zygote costs ~0.5 s)."""
    async with LocalBackend(pool_size=2) as started:
        yield started
