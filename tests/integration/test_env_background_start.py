"""A reset answers before its sandbox is prepared; each tool waits for exactly what it needs.

A cold reset takes an empty warm sandbox and returns; the workspace upload, the app start and
the visible world's seeding run in the background (``env/appstart.py``). These tests hold the
upload back at the real sandbox's client (the only thing not real: a gate in front of
``SupervisorClient.load_workspace``, so the order of events is certain rather than a race) and
check that the reset did not wait for it, that ``read_file`` is answered meanwhile, that
``list_files`` and the app's tools see the whole workspace once it lands, and that a sandbox
dying during the upload is replaced like any lost sandbox.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping
from typing import Any

import pytest

from a01gym.env import environment
from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import SupervisorClient
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle

pytestmark = pytest.mark.asyncio(loop_scope="module")


class UploadGate:
    """Holds the first workspace upload (the episode's) until :meth:`open`; later ones (a
    replacement sandbox's, grading's) pass. Counts the uploads begun and done."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.begun = 0
        self.done = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = SupervisorClient.load_workspace
        gate = self

        async def held(
            client: SupervisorClient, files: Mapping[str, bytes], **kwargs: Any
        ) -> protocol.AppStatus:
            gate.begun += 1
            if gate.begun == 1:
                await gate.opened.wait()
            status = await real(client, files, **kwargs)
            gate.done += 1
            return status

        monkeypatch.setattr(SupervisorClient, "load_workspace", held)

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> UploadGate:
    held = UploadGate()
    held.install(monkeypatch)
    return held


async def test_a_reset_answers_before_the_upload_and_each_tool_waits_for_what_it_needs(
    env: environment.A01Environment, gate: UploadGate, idor_bundle: Bundle
) -> None:
    reset = (await asyncio.wait_for(env.reset(seed=3), 30)).wire()
    assert "notes" in reset["observation"]["output"]
    assert gate.done == 0  # the reset did not wait for the upload
    await asyncio.sleep(0)
    assert gate.begun == 1
    # The gateway answers read_file from the bundle while the upload is held back.
    read = (await env.step({"tool": "read_file", "path": "app/routers/notes.py"})).wire()
    assert read["observation"]["error"] is None
    assert read["observation"]["result"]["content"] in (
        idor_bundle.workspace["app/routers/notes.py"].decode()
    )
    assert gate.done == 0
    # list_files waits for the upload, then sees every file of the workspace.
    listing = asyncio.ensure_future(env.step({"tool": "list_files"}))
    await asyncio.sleep(0.2)
    assert not listing.done()
    gate.open()
    files = (await asyncio.wait_for(listing, 30)).wire()["observation"]["result"]["files"]
    assert {f["path"] for f in files} >= set(idor_bundle.workspace)
    assert gate.done == 1
    # The app's tools wait for the start and then serve the seeded world.
    tests = (await env.step({"tool": "run_tests"})).wire()["observation"]
    assert tests["error"] is None, tests["output"]
    final = (await env.step({"tool": "submit"})).wire()
    assert final["done"] is True and final["reward"] == 0.0


async def test_a_sandbox_lost_during_the_upload_is_replaced(
    env: environment.A01Environment, gate: UploadGate, backend: LocalBackend
) -> None:
    await env.reset(seed=4)
    episode = env._episode  # the test started this backend and its sandboxes
    assert episode is not None and episode.sandbox is not None
    os.kill(episode.sandbox.pid, signal.SIGKILL)
    gate.open()
    wire = (await env.step({"tool": "search", "pattern": "def "})).wire()
    assert wire["observation"]["error"]["code"] == "sandbox_lost"
    assert "replaced" in wire["observation"]["output"]
    again = (await env.step({"tool": "search", "pattern": "def "})).wire()["observation"]
    assert again["error"] is None and again["result"]["matches"]
    final = (await env.step({"tool": "submit"})).wire()
    assert final["done"] is True


async def test_an_episode_ended_during_the_upload_leaves_nothing_behind(
    env: environment.A01Environment, gate: UploadGate, backend: LocalBackend
) -> None:
    before = backend.stats().in_use
    await env.reset(seed=5)
    await asyncio.sleep(0)
    assert gate.begun >= 1 and gate.done == 0
    final = (await env.step({"tool": "submit"})).wire()  # graded with the upload still held
    assert final["done"] is True and final["reward"] == 0.0
    await env.reset(seed=6)  # abandons nothing: the last episode is over
    await env.close()
    assert backend.stats().in_use == before
