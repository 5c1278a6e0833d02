"""The example IDOR bundle in real sandboxes: exploit, fix, traps, and agent-level errors."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from a01gym.grading import runner, verification
from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import ControlError
from a01gym.scenario.httptest import Outcome, TestKind
from a01gym.scenario.manifest import Patch

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _suite(backend, bundle, files):
    sandbox = await backend.acquire()
    try:
        status = await sandbox.client.load_workspace(
            files, entrypoint=bundle.manifest.entrypoint, start=True
        )
        assert status.state is protocol.AppState.RUNNING, status.error
        return await runner.run_suite(
            sandbox.client, bundle.manifest, bundle.hidden.fixture, bundle.hidden.tests, seed=99
        )
    finally:
        await backend.release(sandbox)


async def test_exploit_passes_on_vulnerable_and_fails_on_fixed(backend, idor_bundle):
    vulnerable = await _suite(backend, idor_bundle, idor_bundle.workspace)
    fixed = await _suite(
        backend, idor_bundle, idor_bundle.patched_workspace(idor_bundle.hidden.reference_fix)
    )
    for results, exploit_outcome in ((vulnerable, Outcome.PASS), (fixed, Outcome.FAIL)):
        exploits = [r for r in results if r.kind is TestKind.EXPLOIT]
        regressions = [r for r in results if r.kind is TestKind.REGRESSION]
        assert exploits and all(r.outcome is exploit_outcome for r in exploits), exploits
        assert regressions and all(r.outcome is Outcome.PASS for r in regressions), [
            (r.test_id, r.reason) for r in regressions if r.outcome is not Outcome.PASS
        ]


async def test_reference_scores_one_noop_zero_traps_at_most_partial(backend, idor_bundle):
    async def score(patch: Patch) -> float:
        files = idor_bundle.patched_workspace(patch)
        result = await verification.verify(backend, idor_bundle, files, seed=7)
        return result.score.value

    assert await score(idor_bundle.hidden.reference_fix) == 1.0
    assert await score(Patch()) == 0.0
    for name, trap in idor_bundle.hidden.traps.items():
        assert await score(trap) <= 0.2, name


async def test_hidden_world_differs_from_the_visible_one(backend, idor_bundle):
    """The hard-coding trap blocks the visible ids only, so hidden exploits still pass."""
    trap = idor_bundle.hidden.traps["hardcode-visible-ids"]
    files = idor_bundle.patched_workspace(trap)
    result = await verification.verify(backend, idor_bundle, files, seed=12345)
    exploits = [r for r in result.results if r.kind is TestKind.EXPLOIT]
    assert any(r.outcome is Outcome.PASS for r in exploits)
    assert not result.score.resolved


async def test_syntax_error_is_reported_and_the_app_recovers(backend, idor_bundle):
    sandbox = await backend.acquire()
    try:
        client = sandbox.client
        await client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        original = await client.read_file("app/main.py")
        await client.write_file("app/main.py", original + "\ndef broken(:\n")
        status = await client.restart_app()
        assert status.state is protocol.AppState.CRASHED
        assert "SyntaxError" in status.error and "main.py" in status.error
        with pytest.raises(ControlError) as error:
            await client.request(protocol.ProxyRequest(path="/health"))
        assert error.value.code is protocol.ErrorCode.APP_NOT_RUNNING
        await client.write_file("app/main.py", original)
        status = await client.restart_app()
        assert status.state is protocol.AppState.RUNNING
        response = await client.request(protocol.ProxyRequest(path="/health"))
        assert response.status == 200
    finally:
        await backend.release(sandbox)


async def test_loading_starts_the_app_only_when_asked(backend, idor_bundle):
    sandbox = await backend.acquire()
    try:
        entrypoint = idor_bundle.manifest.entrypoint
        loaded = await sandbox.client.load_workspace(idor_bundle.workspace, entrypoint=entrypoint)
        assert loaded.state is protocol.AppState.STOPPED
        started = await sandbox.client.load_workspace(
            idor_bundle.workspace, entrypoint=entrypoint, start=True
        )
        assert started.state is protocol.AppState.RUNNING, started.error
        assert started.start_ms is not None and started.start_ms > 0
        response = await sandbox.client.request(protocol.ProxyRequest(path="/health"))
        assert response.status == 200
        broken = await sandbox.client.load_workspace(
            {"app/__init__.py": b"", "app/main.py": b"def broken(:\n"},
            entrypoint=entrypoint,
            start=True,
        )
        assert broken.state is protocol.AppState.CRASHED
        assert "SyntaxError" in (broken.error or "")
    finally:
        await backend.release(sandbox)


@pytest.mark.parametrize(
    "path", ["../token", "/etc/passwd", "app/../../token", "a\x00b", "workspace/../x"]
)
async def test_path_escapes_are_refused_with_a_clear_error(backend, idor_bundle, path):
    sandbox = await backend.acquire()
    try:
        await sandbox.client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        for call in (
            sandbox.client.read_file(path),
            sandbox.client.write_file(path, "x"),
            sandbox.client.edit_file(path, "a", "b"),
        ):
            with pytest.raises(ControlError) as error:
                await call
            assert error.value.code is protocol.ErrorCode.PATH_INVALID
            assert "path" in error.value.message
    finally:
        await backend.release(sandbox)


async def test_bad_workspace_uploads_are_refused_and_nothing_is_written(backend, idor_bundle):
    sandbox = await backend.acquire()
    try:
        await sandbox.client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        cases = [
            (b'{"files": {"../escape.py": "eA=="}}', protocol.ErrorCode.BAD_REQUEST, "escapes"),
            (b'{"files": {"a.py": "not base64!"}}', protocol.ErrorCode.BAD_REQUEST, "upload"),
            (b'{"files": ["a.py"]}', protocol.ErrorCode.BAD_REQUEST, "upload"),
            (b"\x1f\x8b not json", protocol.ErrorCode.BAD_REQUEST, "upload"),
        ]
        for body, code, words in cases:
            with pytest.raises(ControlError) as error:
                await sandbox.client._call(
                    "PUT",
                    "/workspace",
                    params={"entrypoint": "app.main:app"},
                    content=body,
                    content_type="application/json",
                )
            assert error.value.code is code and words in error.value.message, body
        # The workspace loaded before is untouched.
        names = {entry.path for entry in await sandbox.client.list_files()}
        assert names == set(idor_bundle.workspace)
    finally:
        await backend.release(sandbox)


async def test_oversized_and_non_unique_edits_are_refused(backend, idor_bundle):
    sandbox = await backend.acquire()
    try:
        client = sandbox.client
        await client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        with pytest.raises(ControlError) as error:
            await client.write_file("big.py", "x" * (backend.settings.max_file_bytes + 1))
        assert error.value.code is protocol.ErrorCode.TOO_LARGE
        with pytest.raises(ControlError) as error:
            await client.edit_file("app/routers/notes.py", "user: User = Depends", "u")
        assert error.value.code is protocol.ErrorCode.EDIT_NOT_UNIQUE
        assert "include more context" in error.value.message
        assert await client.changes() == {}
    finally:
        await backend.release(sandbox)


async def test_database_checks_are_read_only(backend, idor_bundle):
    sandbox = await backend.acquire()
    try:
        client = sandbox.client
        await client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        await client.restart_app()
        await client.seed(
            protocol.SeedRequest(
                tables={"users": [], "notes": [{"id": 1, "owner_id": 2, "title": "t", "body": "b"}]}
            )
        )
        assert (await client.query("SELECT body FROM notes")).rows == [["b"]]
        for statement in (
            "DELETE FROM notes",
            "UPDATE notes SET body='x'",
            "ATTACH DATABASE '/tmp/x.db' AS x",
            "PRAGMA writable_schema=1",
        ):
            with pytest.raises(ControlError) as error:
                await client.query(statement)
            assert error.value.code is protocol.ErrorCode.QUERY_FAILED
        assert (await client.query("SELECT body FROM notes")).rows == [["b"]]
    finally:
        await backend.release(sandbox)


async def test_reseeding_is_skipped_only_while_nothing_wrote_the_database(backend, idor_bundle):
    sandbox = await backend.acquire()
    try:
        client = sandbox.client
        await client.load_workspace(
            idor_bundle.workspace, entrypoint=idor_bundle.manifest.entrypoint, start=True
        )
        world = protocol.SeedRequest(
            tables={
                "users": [
                    {"id": 1, "username": "ann", "token": "t-ann", "role": "user", "tenant": "a"}
                ],
                "notes": [{"id": 1, "owner_id": 1, "title": "t", "body": "b"}],
            },
            actors={"ann": {"Authorization": "Bearer t-ann"}},
        )
        assert await client.seed(world) is True
        assert (await client.request(protocol.ProxyRequest(path="/notes/1", actor="ann"))).status
        assert await client.seed(world) is False  # a read changed nothing
        created = await client.request(
            protocol.ProxyRequest(
                method="POST", path="/notes", actor="ann", json={"title": "n", "body": "new"}
            )
        )
        assert created.status == 201, created.body
        assert await client.seed(world) is True  # the app wrote: the seed is redone
        assert (await client.query("SELECT id FROM notes")).rows == [[1]]
        other = world.model_copy(update={"actors": {}})
        assert await client.seed(other) is True  # a different seed is never skipped
    finally:
        await backend.release(sandbox)


async def test_control_api_requires_the_token(backend):
    from a01gym.sandbox.host.client import SupervisorClient

    sandbox = await backend.acquire()
    intruder = SupervisorClient(token="wrong", uds=str(sandbox.layout.control_sock))
    try:
        with pytest.raises(ControlError) as error:
            await intruder.list_files()
        assert error.value.code is protocol.ErrorCode.UNAUTHORIZED
        assert (await intruder.health()).status == "ok"  # health is public, and reveals nothing
    finally:
        await intruder.aclose()
        await backend.release(sandbox)


async def test_the_app_runs_at_the_sandbox_priority(backend, idor_bundle):
    """The app (a former standby, then a fresh fork) keeps the sandbox's policy and niceness."""
    sandbox = await backend.acquire()
    try:
        for _ in range(2):  # the standby's start, then a fresh fork's
            status = await sandbox.client.load_workspace(
                idor_bundle.workspace, entrypoint=idor_bundle.manifest.entrypoint, start=True
            )
            assert status.state is protocol.AppState.RUNNING and status.pid is not None
            host_pid = _host_pid(backend.uid_of(sandbox), status.pid)
            assert os.sched_getscheduler(host_pid) == os.SCHED_OTHER
            assert os.getpriority(os.PRIO_PROCESS, host_pid) == backend.settings.limits.nice
    finally:
        await backend.release(sandbox)


def _host_pid(uid: int, sandbox_pid: int) -> int:
    """The host pid of the sandbox process (uid ``uid``) that is ``sandbox_pid`` inside."""
    for process in psutil.process_iter(["uids"]):
        if process.info["uids"] is None or process.info["uids"].real != uid:
            continue
        status = Path(f"/proc/{process.pid}/status").read_text()
        nspid = next(line for line in status.splitlines() if line.startswith("NSpid:"))
        if int(nspid.split()[-1]) == sandbox_pid:
            return process.pid
    raise AssertionError(f"no process {sandbox_pid} in the sandbox of uid {uid}")


@pytest.mark.parametrize("patched", [False, True])
async def test_grading_on_a_spare_matches_grading_on_a_fresh_sandbox(backend, idor_bundle, patched):
    from a01gym.env import warm

    files = (
        idor_bundle.patched_workspace(idor_bundle.hidden.reference_fix)
        if patched
        else idor_bundle.workspace
    )
    fresh = await verification.verify(backend, idor_bundle, files, seed=11)
    spare = await warm.prepare(backend, idor_bundle, warm.Kind.GRADING)
    reused = await verification.verify(backend, idor_bundle, files, seed=11, started=spare)
    assert spare.id not in {s.id for s in backend._in_use}, "the spare is released afterwards"
    outcomes = [(r.test_id, r.outcome) for r in fresh.results]
    assert [(r.test_id, r.outcome) for r in reused.results] == outcomes
    assert reused.score == fresh.score
    assert fresh.score.resolved is patched
