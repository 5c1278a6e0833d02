"""The trainer's episode session on a real gateway: a dropped WebSocket costs nothing.

``EpisodeSession`` (what GRPO rollouts and ``A01ToolEnv`` use) must survive the connection
dropping mid-episode: it reconnects and re-attaches the same episode with its resume token, so
the episode scores exactly as an uninterrupted one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from a01gym.cli.background import gateway_thread
from a01gym.scenario.bundle import Bundle
from a01gym.training import session

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory):
    with gateway_thread(FIXTURE, tmp_path_factory.mktemp("runs")) as started:
        yield started


def _play(url: str, *, drop: bool) -> tuple[float | None, dict, str | None]:
    bundle = Bundle.load(FIXTURE)
    ((path, fix),) = bundle.hidden.reference_fix.files.items()

    async def episode() -> tuple[float | None, dict, str | None]:
        played = session.EpisodeSession(url)
        try:
            await played.reset(seed=3, split="train")
            await played.step({"tool": "list_files"})
            if drop:  # the socket dies under the client, as a long generation's can
                await played._client._ws.close()
            output = await played.step({"tool": "write_file", "path": path, "content": fix})
            assert "error" not in output.splitlines()[0], output
            await played.step({"tool": "submit"})
            return played.reward, played.breakdown or {}, played.failure
        finally:
            await played.close()

    return asyncio.run(episode())


def _stable(breakdown: dict) -> dict:
    return {k: v for k, v in breakdown.items() if k not in ("verify_ms", "grading")}


def test_a_dropped_connection_is_resumed_and_scores_as_uninterrupted(url: str) -> None:
    reward, breakdown, failure = _play(url, drop=False)
    assert failure is None and reward == 1.0
    resumed_reward, resumed_breakdown, resumed_failure = _play(url, drop=True)
    assert resumed_failure is None
    assert resumed_reward == reward
    assert _stable(resumed_breakdown) == _stable(breakdown)


def test_an_unreachable_gateway_fails_the_episode_with_a_reason() -> None:
    async def episode() -> session.EpisodeSession:
        played = session.EpisodeSession("http://127.0.0.1:9", reconnect_attempts=1)
        with pytest.raises(ConnectionError):
            await played.reset(seed=1)
        played.fail("reset failed")
        assert await played.finish() == 0.0
        return played

    played = asyncio.run(episode())
    assert played.failure == "reset failed" and played.done
