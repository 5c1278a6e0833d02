"""The gateway speaks OpenEnv exactly: real clients, raw frames, capacity, lifecycle."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient
from websockets.asyncio.client import connect

from a01gym.env import models


def _ws(url: str, path: str = "/ws") -> str:
    return url.replace("http://", "ws://") + path


async def _wait_for(predicate, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


async def test_generic_client_reset_step_state_and_errors(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway() as url:
        async with GenericEnvClient(base_url=url) as env:
            result = await env.reset(seed=7, episode_id="e-1")
            assert result.observation["output"] == "reset seed=7"
            assert result.reward is None and result.done is False
            result = await env.step({"tool": "list_files"})
            assert result.observation["steps_left"] == 9
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.reset(seed=-1)
            state = await env.state()
            assert state["episode_id"] == "e-1" and state["step_count"] == 1
            result = await env.step({"tool": "submit"})
            assert (result.reward, result.done) == (1.0, True)
        await _wait_for(lambda: echo_envs[0].closed)


async def test_sync_wrapper_drives_an_episode(echo_gateway: Any) -> None:
    async with echo_gateway() as url:

        def drive() -> tuple[float | None, bool]:
            with GenericEnvClient(base_url=url).sync() as env:
                env.reset(seed=1)
                env.step({"tool": "read_file", "path": "x"})
                result = env.step({"tool": "submit"})
                return result.reward, result.done

        assert await asyncio.to_thread(drive) == (1.0, True)


async def test_mcp_tool_client_lists_and_calls_tools(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway() as url:
        async with MCPToolClient(base_url=url) as client:
            tools = await client.list_tools()
            assert [t.name for t in tools][:2] == ["list_files", "read_file"]
            assert tools[1].input_schema["required"] == ["path"]
            await client.reset(seed=3)  # over /ws?session_id=…, the session tools use
            data = await client.call_tool("read_file", path="app/main.py")
            assert data["output"] == "ran read_file" and data["done"] is False
            with pytest.raises(RuntimeError, match="Unknown tool: 'reset'"):
                await client.call_tool("reset")
            data = await client.call_tool("submit")
            assert data["done"] is True and data["reward"] == 1.0
        assert len(echo_envs) == 1  # one session: the socket attached to the HTTP one
        await _wait_for(lambda: echo_envs[0].closed)


async def test_malformed_frames_get_protocol_codes_and_the_socket_stays_usable(
    echo_gateway: Any,
) -> None:
    cases = [
        ("not json", "INVALID_JSON"),
        (json.dumps({"type": "bogus"}), "UNKNOWN_TYPE"),
        (json.dumps({"data": {}}), "UNKNOWN_TYPE"),
        (json.dumps({"type": 3}), "UNKNOWN_TYPE"),
        (json.dumps({"type": "step"}), "VALIDATION_ERROR"),
        (json.dumps({"type": "reset", "data": {}, "extra": 1}), "VALIDATION_ERROR"),
        (json.dumps({"type": "reset", "data": {"seed": "x"}}), "VALIDATION_ERROR"),
        (json.dumps([1, 2]), "VALIDATION_ERROR"),
        (json.dumps({"type": "step", "data": {"type": "call_tool"}}), "VALIDATION_ERROR"),
    ]
    async with echo_gateway() as url, connect(_ws(url)) as ws:
        for frame, code in cases:
            await ws.send(frame)
            reply = json.loads(await ws.recv())
            assert reply["type"] == "error", frame
            assert reply["data"]["code"] == code, frame
            assert reply["data"]["message"]
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}).encode())  # binary frame
        reply = json.loads(await ws.recv())
        assert reply["type"] == "observation" and reply["data"]["done"] is False
        await ws.send(json.dumps({"type": "step", "data": {"tool": "nope"}}))
        reply = json.loads(await ws.recv())
        assert reply["data"]["observation"]["error"]["code"] == "unknown_tool"
        await ws.send(
            json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "id": 4, "method": "x"}})
        )
        reply = json.loads(await ws.recv())
        assert reply == {
            "type": "mcp",
            "data": {
                "jsonrpc": "2.0",
                "id": 4,
                "error": {"code": -32601, "message": "Method not found: x", "data": None},
            },
        }


async def test_unknown_reset_arguments_are_ignored_and_named(echo_gateway: Any) -> None:
    async with echo_gateway() as url:
        async with GenericEnvClient(base_url=url) as env:
            result = await env.reset(seed=7, famly="F01", zeta=1)
            output = result.observation["output"]
            assert output.splitlines()[0].startswith(
                "Note: reset ignored unknown arguments famly, zeta; it takes seed, episode_id"
            )
            assert output.endswith("reset seed=7")
            assert result.observation["result"]["ignored_args"] == ["famly", "zeta"]
            plain = await env.reset(seed=8)
            assert plain.observation["output"] == "reset seed=8"
            assert "ignored_args" not in plain.observation["result"]
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                await env.reset(seed="x", famly="F01")  # known arguments are still checked
        async with httpx.AsyncClient(base_url=url) as http:
            reply = (await http.post("/reset", json={"seed": 2, "sede": 3})).json()
        assert reply["observation"]["result"]["ignored_args"] == ["sede"]


async def test_ws_serves_openenv_session_methods_like_openenv(echo_gateway: Any) -> None:
    async def rpc(ws: Any, method: str, **params: object) -> dict:
        request = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
        await ws.send(json.dumps({"type": "mcp", "data": request}))
        reply = json.loads(await ws.recv())
        assert reply["type"] == "mcp"
        return reply["data"]

    async with (
        echo_gateway() as url,
        httpx.AsyncClient(base_url=url) as http,
        connect(_ws(url)) as ws,
    ):
        own = (await rpc(ws, "openenv/session/create"))["result"]["session_id"]
        assert own == (await rpc(ws, "openenv/session/create"))["result"]["session_id"]
        refused = await rpc(ws, "openenv/session/close", session_id=own)
        assert refused["error"]["code"] == -32600
        assert "Cannot close active WebSocket-managed session" in refused["error"]["message"]
        assert (await rpc(ws, "openenv/session/close"))["error"]["code"] == -32602
        body = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}
        other = (await http.post("/mcp", json=body)).json()["result"]["session_id"]
        closed = await rpc(ws, "openenv/session/close", session_id=other)
        assert closed["result"] == {"session_id": other, "closed": True}
        await ws.send(json.dumps({"type": "state"}))  # still usable
        assert json.loads(await ws.recv())["type"] == "state"


async def test_ws_attaches_to_an_http_session_and_detaching_keeps_it(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async def rpc(http: httpx.AsyncClient, method: str, **params: object) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return (await http.post("/mcp", json=body)).json()

    async with echo_gateway() as url, httpx.AsyncClient(base_url=url) as http:
        session = (await rpc(http, "openenv/session/create"))["result"]["session_id"]
        async with connect(_ws(url) + f"?session_id={session}") as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 4}}))
            assert json.loads(await ws.recv())["type"] == "observation"
            async with connect(_ws(url) + f"?session_id={session}") as second:
                refused = json.loads(await second.recv())
                assert refused["data"]["code"] == "SESSION_ERROR"
                assert "already has an attached WebSocket" in refused["data"]["message"]
        # detached: the episode lives on, over HTTP and over a new socket
        called = await rpc(http, "tools/call", session_id=session, name="list_files")
        assert called["result"]["data"]["output"] == "ran list_files"
        async with connect(_ws(url) + f"?session_id={session}") as ws:
            await ws.send(json.dumps({"type": "state"}))
            assert json.loads(await ws.recv())["data"]["step_count"] == 1
            closing = await rpc(http, "openenv/session/close", session_id=session)
            assert closing["result"] == {"session_id": session, "closed": False, "closing": True}
            assert not echo_envs[0].closed
        await _wait_for(lambda: echo_envs[0].closed)
        gone = await rpc(http, "openenv/session/close", session_id=session)
        assert gone["error"]["code"] == -32602
        async with connect(_ws(url) + "?session_id=nope") as ws:
            refused = json.loads(await ws.recv())
            assert refused["data"]["code"] == "SESSION_ERROR"
            assert "openenv/session/create" in refused["data"]["message"]


async def test_capacity_reached_is_sent_then_the_socket_closes(echo_gateway: Any) -> None:
    async with echo_gateway(max_sessions=2) as url:
        async with connect(_ws(url)) as a, connect(_ws(url)) as b:
            for ws in (a, b):
                await ws.send(json.dumps({"type": "state"}))
                assert json.loads(await ws.recv())["type"] == "state"
            async with connect(_ws(url)) as c:
                reply = json.loads(await c.recv())
                assert reply["data"]["code"] == "CAPACITY_REACHED"
                assert reply["data"]["max_sessions"] == 2
                await c.wait_closed()
                assert c.close_code == 1000
        # slots free as soon as sockets close
        async with GenericEnvClient(base_url=url) as env:
            await env.reset()


async def test_disconnect_mid_step_closes_the_environment_when_resume_is_off(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway(resume_grace_s=0) as url:
        ws = await connect(_ws(url))
        await ws.send(json.dumps({"type": "reset"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": {"tool": "run_tests"}}))
        await ws.close()  # before the slow step answers
        await _wait_for(lambda: echo_envs and echo_envs[0].closed)


async def test_idle_sessions_are_reaped_and_hung_up(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway(idle_timeout_s=0.3) as url, connect(_ws(url)) as ws:
        await ws.send(json.dumps({"type": "reset"}))
        await ws.recv()
        await asyncio.wait_for(ws.wait_closed(), 5)
        assert echo_envs[0].closed
        async with httpx.AsyncClient() as http:
            metrics = (await http.get(url + "/metrics")).text
        assert "a01gym_gateway_sessions_reaped_total 1.0" in metrics


async def test_shutdown_closes_every_session(echo_gateway: Any, echo_envs: list[Any]) -> None:
    sockets = []
    async with echo_gateway() as url:
        for _ in range(3):
            ws = await connect(_ws(url))
            await ws.send(json.dumps({"type": "reset"}))
            await ws.recv()
            sockets.append(ws)
    assert len(echo_envs) == 3
    assert all(env.closed for env in echo_envs)
    for ws in sockets:
        await ws.close()


async def test_http_endpoints_and_stateless_reset_step(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway() as url, httpx.AsyncClient(base_url=url) as http:
        assert (await http.get("/health")).json() == {"status": "healthy"}
        meta = (await http.get("/metadata")).json()
        assert meta["name"] == "a01gym" and isinstance(meta["description"], str)
        schema = (await http.get("/schema")).json()
        assert {"action", "observation", "state"} <= set(schema)
        tools_in_schema = {
            v["properties"]["tool"]["const"]
            for v in schema["action"]["$defs"].values()
            if "tool" in v.get("properties", {})
        }
        assert "submit" in tools_in_schema
        paths = (await http.get("/openapi.json")).json()["paths"]
        assert {"/reset", "/step", "/state", "/mcp"} <= set(paths)
        reset = (await http.post("/reset", json={"seed": 2})).json()
        assert reset["observation"]["output"] == "reset seed=2" and reset["done"] is False
        assert (await http.post("/reset")).status_code == 200
        assert (await http.post("/reset", json={"seed": -3})).status_code == 422
        step = (await http.post("/step", json={"action": {"tool": "list_files"}})).json()
        assert step["observation"]["error"]["code"] == "no_episode"
        assert (await http.post("/step", json={})).status_code == 422
        assert (await http.get("/state")).json()["step_count"] == 0
        assert (await http.get("/episodes/nope/artifacts")).status_code == 404
        assert (await http.get("/episodes/..%2F..%2Fetc/artifacts")).status_code in (400, 404)
    assert all(env.closed for env in echo_envs)


async def test_mcp_json_rpc_over_http_with_persistent_sessions(echo_gateway: Any) -> None:
    async def rpc(http: httpx.AsyncClient, method: str, **params: object) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = await http.post("/mcp", json=body)
        assert response.status_code == 200
        return response.json()

    async with echo_gateway() as url, httpx.AsyncClient(base_url=url) as http:
        empty = (await http.post("/mcp", json={})).json()
        assert empty["jsonrpc"] == "2.0" and empty["error"]["code"] == -32600
        garbage = (await http.post("/mcp", content=b"{nope")).json()
        assert garbage["error"]["code"] == -32700
        listed = await rpc(http, "tools/list")
        assert len(listed["result"]["tools"]) == len(models.TOOL_NAMES)
        no_episode = await rpc(http, "tools/call", name="list_files", arguments={})
        assert no_episode["result"]["data"]["error"]["code"] == "no_episode"
        session = (await rpc(http, "openenv/session/create"))["result"]["session_id"]
        reset = await rpc(http, "a01gym/reset", session_id=session, seed=5)
        assert reset["result"]["observation"]["output"] == "reset seed=5"
        called = await rpc(http, "tools/call", session_id=session, name="submit", arguments={})
        assert called["result"]["data"]["done"] is True and called["result"]["isError"] is False
        missing = await rpc(http, "tools/call", session_id=session, name="nope", arguments={})
        assert missing["error"]["code"] == -32602
        closed = await rpc(http, "openenv/session/close", session_id=session)
        assert closed["result"] == {"session_id": session, "closed": True}
        again = await rpc(http, "openenv/session/close", session_id=session)
        assert again["error"]["code"] == -32602


async def test_mcp_websocket_is_a_session(echo_gateway: Any) -> None:
    async with echo_gateway() as url, connect(_ws(url, "/mcp")) as ws:
        await ws.send(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "a01gym/reset", "params": {}})
        )
        assert json.loads(await ws.recv())["result"]["done"] is False
        await ws.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "submit"}}
            )
        )
        reply = json.loads(await ws.recv())
        assert reply["id"] == 2 and reply["result"]["data"]["reward"] == 1.0
        await ws.send("{")
        assert json.loads(await ws.recv())["error"]["code"] == -32700


async def test_metrics_follow_naming_rules_and_carry_no_ids(echo_gateway: Any) -> None:
    async with echo_gateway() as url:
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(episode_id="unique-episode-123")
            await env.step({"tool": "list_files"})
            await env.step({"tool": "made_up_tool_name"})
            await env.step({"tool": "submit"})
        async with httpx.AsyncClient() as http:
            text = (await http.get(url + "/metrics")).text
    names = {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert names and all(n.startswith("a01gym_") for n in names)
    assert "unique-episode-123" not in text and "made_up_tool_name" not in text
    assert 'a01gym_env_steps_total{outcome="ok",tool="list_files"} 1.0' in text
    assert 'a01gym_env_steps_total{outcome="error",tool="invalid"} 1.0' in text
    assert "a01gym_env_resets_total" in text and "a01gym_gateway_sessions_opened_total" in text


async def test_openenv_validate_passes(echo_gateway: Any) -> None:
    openenv = Path(sys.executable).parent / "openenv"
    async with echo_gateway() as url:
        proc = await asyncio.create_subprocess_exec(
            str(openenv),
            "validate",
            "--url",
            url,
            "--json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    report = json.loads(out)
    assert proc.returncode == 0, (out, err)
    assert report["passed"] is True, report
