"""``a01gym train`` presents the gateway token from ``A01GYM_GATEWAY_TOKEN`` as the leading
``/t/<token>`` path (which the gateway's auth accepts, see test_gateway_auth.py) and only in
the URL it connects with, never in the config it writes."""

from __future__ import annotations

import pytest

from a01gym.cli import train


def test_the_token_leads_the_path_only_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A01GYM_GATEWAY_TOKEN", raising=False)
    assert train._with_token("http://gateway:8000") == "http://gateway:8000"
    monkeypatch.setenv("A01GYM_GATEWAY_TOKEN", "s3cret")
    assert train._with_token("http://gateway:8000/") == "http://gateway:8000/t/s3cret"


def test_an_unreachable_gateway_error_never_shows_the_token() -> None:
    from a01gym.errors import UnreachableError

    error = UnreachableError(
        "http://gateway:8000/t/s3cret", "ws://gateway:8000/t/s3cret/ws: connection refused"
    )
    assert "s3cret" not in str(error) and "/t/***" in str(error)
