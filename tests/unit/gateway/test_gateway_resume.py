"""Resume: a /ws client that drops mid-episode reattaches with the token from its reset."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openenv.core.generic_client import GenericEnvClient
from websockets.asyncio.client import connect


def _ws(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


async def _wait_for(predicate: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


async def _drop(env: GenericEnvClient) -> None:
    assert env._ws is not None
    await env._ws.close()  # hang up without a close message, as a lost connection does


async def test_dropped_client_resumes_the_same_episode(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway() as url:
        env = GenericEnvClient(base_url=url)
        first = await env.reset(seed=3, episode_id="kept")
        token = first.metadata["resume_token"]
        last = await env.step({"tool": "list_files"})
        await _drop(env)
        async with GenericEnvClient(base_url=url) as again:
            resumed = await again.reset(resume_token=token)
            assert resumed.observation == last.observation  # the last reply, replayed
            state = await again.state()
            assert (state["episode_id"], state["step_count"]) == ("kept", 1)
            result = await again.step({"tool": "submit"})
            assert (result.reward, result.done) == (1.0, True)
        assert echo_envs[0].closed
        assert echo_envs[1].closed  # the reconnecting socket's own, unused environment


async def test_resume_waits_for_the_step_the_dropped_socket_sent(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway() as url:
        async with connect(_ws(url)) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            token = json.loads(await ws.recv())["data"]["metadata"]["resume_token"]
            await ws.send(json.dumps({"type": "step", "data": {"tool": "run_tests"}}))  # 0.3 s
        async with GenericEnvClient(base_url=url) as env:
            resumed = await env.reset(resume_token=token)
            assert resumed.observation["output"] == "ran run_tests"  # the reply the drop lost
            assert echo_envs[0].steps == 1


async def test_a_wrong_token_is_a_clear_error_and_the_session_goes_on(echo_gateway: Any) -> None:
    async with echo_gateway() as url, GenericEnvClient(base_url=url) as env:
        with pytest.raises(RuntimeError, match=r"unknown or expired resume_token.*SESSION_ERROR"):
            await env.reset(resume_token="not-a-token")
        with pytest.raises(RuntimeError, match="resume takes only resume_token"):
            await env.reset(resume_token="x", seed=1)
        assert (await env.reset(seed=2)).observation["output"] == "reset seed=2"


async def test_a_detached_session_is_reaped_after_the_grace_period(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway(resume_grace_s=0.3) as url:
        env = GenericEnvClient(base_url=url)
        token = (await env.reset()).metadata["resume_token"]
        await _drop(env)
        await asyncio.sleep(0.1)
        assert not echo_envs[0].closed  # kept for the client to come back
        await _wait_for(lambda: echo_envs[0].closed)
        async with GenericEnvClient(base_url=url) as again:
            with pytest.raises(RuntimeError, match="unknown or expired resume_token"):
                await again.reset(resume_token=token)


async def test_a_clean_close_or_a_finished_episode_keeps_nothing(
    echo_gateway: Any, echo_envs: list[Any]
) -> None:
    async with echo_gateway() as url:
        async with GenericEnvClient(base_url=url) as env:
            closed_token = (await env.reset()).metadata["resume_token"]
        env = GenericEnvClient(base_url=url)
        done_token = (await env.reset()).metadata["resume_token"]
        await env.step({"tool": "submit"})
        await _drop(env)
        await _wait_for(lambda: echo_envs[0].closed and echo_envs[1].closed)
        async with GenericEnvClient(base_url=url) as again:
            for token in (closed_token, done_token):
                with pytest.raises(RuntimeError, match="unknown or expired resume_token"):
                    await again.reset(resume_token=token)


async def test_a_full_gateway_admits_the_client_coming_back(echo_gateway: Any) -> None:
    async with echo_gateway(max_sessions=1) as url:
        env = GenericEnvClient(base_url=url)
        token = (await env.reset(episode_id="solo")).metadata["resume_token"]
        await _drop(env)
        async with GenericEnvClient(base_url=url) as again:
            await again.reset(resume_token=token)
            assert (await again.state())["episode_id"] == "solo"
            async with connect(_ws(url)) as extra:  # the slot is taken again
                assert json.loads(await extra.recv())["data"]["code"] == "CAPACITY_REACHED"
