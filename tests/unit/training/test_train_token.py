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
