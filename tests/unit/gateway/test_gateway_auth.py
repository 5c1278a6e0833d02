"""Bearer-token auth: header, query or path prefix; ``/health`` stays open."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient
from pydantic import SecretStr
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from a01gym.errors import ConfigError
from a01gym.gateway_settings import GatewaySettings, is_loopback

TOKEN = "s3cret-token"


async def test_requests_without_the_token_are_refused(echo_gateway: Any) -> None:
    async with echo_gateway(token=SecretStr(TOKEN)) as url, httpx.AsyncClient(base_url=url) as http:
        assert (await http.get("/health")).status_code == 200
        assert (await http.get("/metadata")).status_code == 401
        assert (
            await http.post("/mcp", json={}, headers={"Authorization": "Bearer nope"})
        ).status_code == 401
        ok = await http.get("/metadata", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200
        assert (await http.get("/metadata", params={"token": TOKEN})).status_code == 200
        with pytest.raises(InvalidStatus):
            async with connect(url.replace("http", "ws") + "/ws"):
                pass
        ws_url = url.replace("http", "ws") + f"/ws?token={TOKEN}"
        async with connect(ws_url) as ws:
            await ws.send(json.dumps({"type": "state"}))
            assert json.loads(await ws.recv())["type"] == "state"
        metrics = await http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert 'a01gym_gateway_sessions_rejected_total{reason="auth"}' in metrics.text


async def test_stock_client_authenticates_with_a_path_prefix(echo_gateway: Any) -> None:
    async with echo_gateway(token=SecretStr(TOKEN)) as url:
        async with GenericEnvClient(base_url=f"{url}/t/{TOKEN}") as env:
            result = await env.reset(seed=4)
            assert result.observation["output"] == "reset seed=4"
        with pytest.raises(ConnectionError):
            async with GenericEnvClient(base_url=f"{url}/t/wrong") as env:
                await env.reset()


def test_binding_beyond_loopback_requires_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    with pytest.raises(ConfigError, match="token"):
        GatewaySettings(host="0.0.0.0").check_exposure()
    GatewaySettings(host="0.0.0.0", token=SecretStr("x")).check_exposure()
    GatewaySettings(host="127.0.0.1").check_exposure()
