"""The bubblewrap fallback (for kernels without Landlock), forced on with Landlock disabled.

Sandboxes then see only the interpreter and the sandboxes' root; they are kept apart from each
other by their own uids and 0700 directories, and from the network by namespaces.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from a01gym.grading import verification
from a01gym.sandbox import protocol
from a01gym.sandbox.host.local import LocalBackend

from .test_sandbox_containment import HOSTILE_APP

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bwrap_backend() -> AsyncIterator[LocalBackend]:
    import os

    if shutil.which("bwrap") is None or os.geteuid() != 0:
        message = "bubblewrap fallback needs bwrap installed and root"
        if os.environ.get("A01GYM_REQUIRE_ISOLATION") == "1":
            pytest.fail(message)
        pytest.skip(message)
    async with LocalBackend(pool_size=1, filesystem="bwrap") as backend:
        assert backend.capabilities.filesystem == "bwrap"
        assert backend.capabilities.landlock_abi == 0
        yield backend


async def test_the_example_bundle_scores_correctly_under_bwrap(bwrap_backend, idor_bundle):
    fixed = idor_bundle.patched_workspace(idor_bundle.hidden.reference_fix)
    assert (await verification.verify(bwrap_backend, idor_bundle, fixed, seed=3)).score.value == 1
    vulnerable = await verification.verify(
        bwrap_backend, idor_bundle, idor_bundle.workspace, seed=3
    )
    assert vulnerable.score.value == 0


async def test_hostile_app_is_contained_under_bwrap(bwrap_backend):
    victim = await bwrap_backend.acquire()
    sandbox = await bwrap_backend.acquire()
    outside = Path("/tmp") / f"a01gym-bwrap-escape-{secrets.token_hex(4)}"
    try:
        await victim.client.load_workspace({"secret.txt": b"VICTIM"}, entrypoint="m:a")
        await sandbox.client.load_workspace(
            {"main.py": HOSTILE_APP.encode()}, entrypoint="main:app"
        )
        assert (await sandbox.client.restart_app()).state is protocol.AppState.RUNNING

        async def get(route: str, **query: object) -> str:
            response = await sandbox.client.request(protocol.ProxyRequest(path=route, query=query))
            return response.body

        hidden = Path(__file__).parents[1] / "fixtures" / "idor_notes" / "hidden.json"
        for target in ("/etc/shadow", str(hidden), str(victim.layout.workspace / "secret.txt")):
            body = await get("/read", path=target)
            assert "blocked" in body and "VICTIM" not in body, (target, body)
        await get("/write", path=str(outside))
        assert not outside.exists()  # at most it wrote into the sandbox view's private /tmp
        assert "blocked" in await get("/write", path=str(victim.layout.workspace / "secret.txt"))
        assert (victim.layout.workspace / "secret.txt").read_text() == "VICTIM"
        assert "blocked" in await get("/connect", port=9)
    finally:
        await bwrap_backend.release(victim)
        await bwrap_backend.release(sandbox)
