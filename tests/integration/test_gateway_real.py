"""The gateway on real sandboxes, driven by the real ``openenv`` clients and CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from a01gym.config import Settings, get_settings
from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"
BIN = Path(sys.executable).parent


@pytest_asyncio.fixture(loop_scope="module")
async def gateway(backend: LocalBackend, tmp_path: Path) -> AsyncIterator[str]:
    runtime = environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(FIXTURE)),
        logger=RunLogger(tmp_path),
    )
    deps = gateway_app.runtime_deps(runtime, own_backend=False)
    settings = GatewaySettings(runs_dir=tmp_path, resume_grace_s=1.0)
    app = gateway_app.create_app(Settings(gateway=settings), deps=deps)
    async with server.background(app) as url:
        yield url


async def _settled(backend: LocalBackend, in_use: int) -> None:
    for _ in range(250):
        if backend.stats().in_use == in_use:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"in_use stayed {backend.stats().in_use}, expected {in_use}")


async def test_reference_fix_over_ws_scores_one_and_leaves_artifacts(
    gateway: str, idor_bundle: Bundle
) -> None:
    async with GenericEnvClient(base_url=gateway) as env:
        first = await env.reset(seed=21, episode_id="ws-reference")
        assert first.observation["result"]["scenario"] == idor_bundle.manifest.content_hash
        for path, content in idor_bundle.hidden.reference_fix.files.items():
            result = await env.step({"tool": "write_file", "path": path, "content": content})
            assert result.reward is None and result.done is False
        result = await env.step({"tool": "submit"})
        assert (result.reward, result.done) == (1.0, True)
        refused = await env.step({"tool": "list_files"})
        assert refused.observation["error"]["code"] == "episode_done"
    async with httpx.AsyncClient(base_url=gateway) as http:
        files = (await http.get("/episodes/ws-reference/artifacts")).json()["files"]
    assert "+++ b/app/routers/notes.py" in files["diff.patch"]
    assert json.loads(files["summary.json"])["reward"] == 1.0


async def test_the_same_seed_gives_a_byte_identical_first_observation(gateway: str) -> None:
    """Reproducibility (OpenEnv's same-seed contract): two sessions resetting with one seed get
    the same observation bytes; the per-session resume token travels beside it, in the reply's
    ``metadata``, and still takes the episode back."""
    observations, tokens = [], []
    for _ in range(2):
        async with GenericEnvClient(base_url=gateway) as env:
            first = await env.reset(seed=27)
            observations.append(json.dumps(first.observation).encode())
            tokens.append(first.metadata["resume_token"])
    assert observations[0] == observations[1]
    assert tokens[0] != tokens[1] and tokens[0].encode() not in observations[0]
    env = GenericEnvClient(base_url=gateway)
    token = (await env.reset(seed=27)).metadata["resume_token"]
    assert env._ws is not None
    await env._ws.close()  # dropped mid-episode
    async with GenericEnvClient(base_url=gateway) as again:
        resumed = await again.reset(resume_token=token)
        assert json.dumps(resumed.observation).encode() == observations[0]
        assert (await again.step({"tool": "submit"})).done is True


async def test_sync_client_no_op_scores_zero(gateway: str) -> None:
    def episode() -> float | None:
        with GenericEnvClient(base_url=gateway).sync() as env:
            env.reset(seed=22)
            env.step({"tool": "http_request", "method": "GET", "path": "/notes", "actor": "bob"})
            return env.step({"tool": "submit"}).reward

    assert await asyncio.to_thread(episode) == 0.0


async def test_reset_names_ignored_arguments_and_still_starts_the_episode(
    gateway: str, idor_bundle: Bundle
) -> None:
    async with GenericEnvClient(base_url=gateway) as env:
        first = await env.reset(seed=26, famly="F01")
        lines = first.observation["output"].splitlines()
        assert lines[0].startswith("Note: reset ignored unknown arguments famly; it takes seed")
        assert "# Notes service: security review" in lines  # the briefing, after the note
        result = first.observation["result"]
        assert result["ignored_args"] == ["famly"]
        assert result["scenario"] == idor_bundle.manifest.content_hash
        assert (await env.step({"tool": "submit"})).done is True


async def test_mcp_tool_client_episode(gateway: str, idor_bundle: Bundle) -> None:
    async with MCPToolClient(base_url=gateway) as client:
        first = await client.reset(seed=23)  # openenv-core 0.3 keeps only metadata here
        assert first.observation.metadata["task"].startswith("# Notes service")
        assert "## Budget and grading" in first.observation.metadata["task"]
        tools = await client.list_tools()  # read from inputSchema, the MCP spelling
        assert tools[1].name == "read_file" and tools[1].input_schema["required"] == ["path"]
        listing = await client.call_tool("list_files")
        assert "app/routers/notes.py" in listing["output"]
        for name in ("verify", "reward", "score"):
            with pytest.raises(RuntimeError, match=f"Unknown tool: '{name}'"):
                await client.call_tool(name)
        for path, content in idor_bundle.hidden.reference_fix.files.items():
            data = await client.call_tool("write_file", path=path, content=content)
            assert data["reward"] is None and data["reward_breakdown"] is None
        final = await client.call_tool("submit")
        assert final["done"] is True
        assert final["reward_breakdown"]["security"] == 1.0
        # three invalid (tool_not_found) calls cost 3 × 0.02
        assert final["reward"] == pytest.approx(0.94)


async def test_mcp_http_session_cannot_read_a_score_mid_episode(gateway: str) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:

        async def rpc(method: str, **params: object) -> dict:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            return (await http.post("/mcp", json=body)).json()

        session = (await rpc("openenv/session/create"))["result"]["session_id"]
        reset = (await rpc("a01gym/reset", session_id=session, seed=24))["result"]
        assert reset["observation"]["output"].startswith("# Notes service")
        run = await rpc("tools/call", session_id=session, name="run_tests", arguments={})
        assert set(run["result"]) == {"content", "structuredContent", "isError", "data"}
        assert run["result"]["structuredContent"] == run["result"]["data"]
        assert run["result"]["content"][0]["text"] == run["result"]["data"]["output"]
        assert run["result"]["data"]["reward"] is None
        assert run["result"]["data"]["reward_breakdown"] is None
        state = (await rpc("a01gym/state", session_id=session))["result"]
        assert state["reward"] is None and state["done"] is False
        assert (await rpc("tools/call", session_id=session, name="verify"))["error"][
            "code"
        ] == -32602
        await rpc("openenv/session/close", session_id=session)


async def test_client_disconnect_mid_episode_releases_the_sandbox_after_the_grace(
    gateway: str, backend: LocalBackend
) -> None:
    await _settled(backend, 0)
    env = GenericEnvClient(base_url=gateway)
    await env.connect()
    await env.reset(seed=25)
    assert backend.stats().in_use == 1
    assert env._ws is not None
    await env._ws.close()  # drop the connection without a close message
    await asyncio.sleep(0.3)
    assert backend.stats().in_use == 1  # kept for a resume within the 1 s grace
    await _settled(backend, 0)


async def test_a01gym_serve_passes_openenv_validate_and_stops_cleanly(tmp_path: Path) -> None:
    port = server.free_port()
    proc = await asyncio.create_subprocess_exec(
        str(BIN / "a01gym"),
        "serve",
        "--port",
        str(port),
        "--cache",
        str(FIXTURE),
        "--runs-dir",
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "A01GYM_SANDBOX__POOL_SIZE": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(300):
                try:
                    if (await http.get(url + "/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            else:
                raise AssertionError("a01gym serve did not come up")
        check = await asyncio.create_subprocess_exec(
            str(BIN / "openenv"),
            "validate",
            "--url",
            url,
            "--json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(check.communicate(), 120)
        assert check.returncode == 0, (out, err)
        report = json.loads(out)
        assert report["passed"] is True, report
        criteria = {c["id"]: c["passed"] for c in report["criteria"]}
        assert criteria == dict.fromkeys(
            [
                "openapi_version_available",
                "health_endpoint",
                "metadata_endpoint",
                "schema_endpoint",
                "mcp_endpoint",
                "mode_endpoint_consistency",
            ],
            True,
        )
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(seed=1)
            assert (await env.step({"tool": "submit"})).done is True
    finally:
        proc.send_signal(signal.SIGTERM)  # our own child, by PID
        code = await asyncio.wait_for(proc.wait(), 30)
    # uvicorn shuts down gracefully, then re-raises the signal so the exit status tells why
    assert code in (0, -signal.SIGTERM)
    sandbox_root = get_settings().sandbox.root
    leftovers = list(sandbox_root.glob(f"{proc.pid}-*")) if sandbox_root.is_dir() else []
    assert leftovers == [], "graceful shutdown must remove every sandbox"
