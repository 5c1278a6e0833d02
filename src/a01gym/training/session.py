"""One OpenEnv session played as a tool-calling episode: the engine under both rollout paths.

:class:`EpisodeSession` wraps the OpenEnv client (``GenericEnvClient`` over ``/ws``) with what a
trainer needs and the stock client does not give: tool output rendered and cut for the token
budget (head and tail kept, since ``max_completion_length`` counts tool tokens),
reconnection with backoff after a dropped WebSocket (re-attaching the episode with the resume
token from its reset reply's ``metadata``), and an episode that cannot finish scored as failed
(reward 0) with its reason in :attr:`EpisodeSession.failure`, never an exception in the trainer.

Why a process-wide event loop: TRL calls ``reset`` synchronously, while the client is async and
its WebSocket belongs to the loop that opened it. Every session therefore lives on one daemon
loop (:func:`env_loop`): :class:`~a01gym.training.toolenv.A01ToolEnv` waits on it from TRL's
thread, and :mod:`a01gym.training.rollout` gathers many sessions' steps on it at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import tenacity

__all__ = [
    "EpisodeSession",
    "action_tool_call",
    "env_loop",
    "render_observation",
    "run_sync",
    "tool_action",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_URL_ENV = "A01GYM_GATEWAY_URL"
RESET_KEYS = ("seed", "split", "family", "difficulty", "scenario", "agent", "episode_id")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def env_loop() -> asyncio.AbstractEventLoop:
    """The daemon event loop every session's client lives on (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="a01gym-env", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on :func:`env_loop` and wait for it (from any thread but that loop's)."""
    return asyncio.run_coroutine_threadsafe(coro, env_loop()).result()


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    skipped = len(text) - head - tail
    return f"{text[:head]}\n… ({skipped} characters cut) …\n{text[-tail:]}"


def render_observation(observation: dict[str, Any], *, max_chars: int) -> str:
    """The text a model sees for one observation: output, then the error code, then the budget.

    The SFT exporter renders logged observations with this same function, so a warm-started
    model sees exactly the tool messages it will see in GRPO.
    """
    text = _cut(str(observation.get("output") or ""), max_chars)
    error = observation.get("error")
    if isinstance(error, dict) and error.get("code") and not text.startswith("error"):
        text = f"error ({error['code']}): {text}"
    steps_left = observation.get("steps_left")
    if steps_left is not None and observation.get("phase") != "done":
        text += f"\n[{steps_left} steps left]"
    return text


class EpisodeSession:
    """One OpenEnv session on a gateway, played one episode at a time (async API).

    Holds the episode's last observation, reward and failure reason; never raises for the
    agent's mistakes, which come back as error text like any other observation.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        max_output_chars: int = 2000,
        message_timeout_s: float = 120.0,
        reconnect_attempts: int = 3,
    ) -> None:
        self.base_url = base_url
        self.max_output_chars = max_output_chars
        self.message_timeout_s = message_timeout_s
        self.reconnect_attempts = reconnect_attempts
        self._client: Any = None
        self._resume_token: str | None = None
        self._clear()

    def _clear(self) -> None:
        self.observation: dict[str, Any] = {}
        self.breakdown: dict[str, Any] | None = None
        self.reward: float | None = None
        self.done = False
        self.failure: str | None = None
        self.actions = 0
        self.invalid_actions = 0
        self.row: dict[str, Any] = {}
        self.scenario: str | None = None
        self.episode_id: str | None = None
        self.expert_allowed = False

    # -- connection ---------------------------------------------------------------------------
    def _url(self) -> str:
        url = self.base_url or os.environ.get(DEFAULT_URL_ENV)
        if not url:
            raise RuntimeError(
                f"no gateway URL: pass base_url (A01ToolEnv.configure) or set {DEFAULT_URL_ENV}"
            )
        return url

    async def _connect(self) -> Any:
        from openenv.core.generic_client import GenericEnvClient

        await self._disconnect()
        client = GenericEnvClient(base_url=self._url(), message_timeout_s=self.message_timeout_s)
        await client.connect()
        self._client = client
        return client

    async def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except Exception as exc:  # closing a dead socket must not mask the real error
                logger.debug("closing the OpenEnv client failed: %s", exc)

    async def close(self) -> None:
        """Close the session (the gateway frees its sandbox)."""
        await self._disconnect()

    def _retrying(self) -> tenacity.AsyncRetrying:
        return tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.reconnect_attempts),
            wait=tenacity.wait_exponential(multiplier=0.2, max=2.0),
            retry=tenacity.retry_if_exception_type((ConnectionError, OSError, TimeoutError)),
            reraise=True,
        )

    # -- episode ------------------------------------------------------------------------------
    async def reset(self, **row: Any) -> str:
        """Start an episode for a dataset row; returns the task text for the prompt."""
        self._clear()
        self.row = dict(row)
        kwargs = {key: row[key] for key in RESET_KEYS if row.get(key) is not None}
        # Solo unless the row says otherwise (the trainer's expert ratio sets it per rollout),
        # whatever the gateway's own default.
        kwargs["expert"] = self.expert_allowed = bool(row.get("expert", False))
        # Named episodes join the gateway's logs to the trainer's records (reports, export).
        kwargs.setdefault("agent", "model")
        kwargs.setdefault(
            "episode_id", f"{kwargs['agent']}-{kwargs.get('seed', 'x')}-{secrets.token_hex(4)}"
        )
        self.episode_id = kwargs["episode_id"]
        async for attempt in self._retrying():
            with attempt:
                client = self._client or await self._connect()
                try:
                    result = await client.reset(**kwargs)
                except Exception:
                    await self._disconnect()
                    raise
        self.observation = dict(result.observation)
        self._resume_token = (result.metadata or {}).get("resume_token")
        self.scenario = (self.observation.get("result") or {}).get("scenario")
        return str(self.observation.get("output") or "")

    async def step(self, action: dict[str, Any]) -> str:
        """Send one action; returns the text the model sees (an agent's mistake is text too)."""
        if self.done:
            return "error (episode_done): the episode is over; no more tools can be called."
        self.actions += 1
        try:
            result = await self._send(action)
        except Exception as exc:
            self.fail(f"{type(exc).__name__}: {exc}")
            return f"error (environment_unavailable): {exc}. The episode ends."
        self.observation = dict(result.observation)
        if self.observation.get("error"):
            code = self.observation["error"].get("code")
            if code in ("invalid_action", "unknown_tool"):
                self.invalid_actions += 1
        if result.done:
            self.done = True
            self.reward = float(result.reward or 0.0)
            self.breakdown = self.observation.get("reward_breakdown")
            return "Submitted. The episode is over."
        return render_observation(self.observation, max_chars=self.max_output_chars)

    async def _send(self, action: dict[str, Any]) -> Any:
        """One step, re-attaching the episode after a dropped connection.

        A drop shows up two ways: the client raises a connection error, or (openenv 0.10) it
        quietly opens a fresh socket, whose new session answers ``no_episode``. Either way the
        resume token takes the episode back and the action is sent again.
        """
        try:
            result = await self._client.step(action)
        except Exception as exc:
            if not _is_connection_error(exc):
                raise
            logger.warning("connection lost mid-episode (%s); reattaching", exc)
            await self._reattach(reconnect=True)
            return await self._client.step(action)
        error = result.observation.get("error") or {}
        if error.get("code") != "no_episode":
            return result
        logger.warning("the connection was replaced mid-episode; reattaching")
        await self._reattach(reconnect=False)
        return await self._client.step(action)

    async def _reattach(self, *, reconnect: bool) -> None:
        if not self._resume_token:
            raise ConnectionError("the connection dropped and the gateway gave no resume token")
        async for attempt in self._retrying():
            with attempt:
                client = (
                    await self._connect() if reconnect or self._client is None else self._client
                )
                try:
                    await client.reset(resume_token=self._resume_token)
                except Exception:
                    reconnect = True
                    raise

    @property
    def shaping(self) -> dict[str, Any]:
        """The terminal breakdown's expert shaping (zeros before the end or without one)."""
        shaping = (self.breakdown or {}).get("shaping")
        return shaping if isinstance(shaping, dict) else {}

    def fail(self, reason: str) -> None:
        """End the episode as failed (reward 0), e.g. when it could not even start."""
        logger.warning("episode failed (scored 0): %s", reason)
        self.failure = reason
        self.done = True
        self.reward = 0.0

    async def finish(self) -> float:
        """The terminal reward, submitting first if the model stopped without submitting."""
        if not self.done:
            if self._client is None:
                self.fail("the episode was never started")
            else:
                await self.step({"tool": "submit"})
        return float(self.reward or 0.0)

    async def invalid_reply(self, reply: str, reason: str) -> str:
        """Report a reply with no parsable tool call: the gateway counts it as an invalid action,
        and the model reads why its reply was not a tool call (not the gateway's unknown-tool
        text, which would name a tool it never called)."""
        output = await self.step({"tool": "invalid_reply", "reply": reply[:200]})
        if self.done:
            return output
        steps_left = self.observation.get("steps_left")
        return (
            f"error (invalid_action): {reason}. Reply with exactly one tool call, such as "
            '<tool_call>{"name": "list_files", "arguments": {}}</tool_call>'
            + (f"\n[{steps_left} steps left]" if steps_left is not None else "")
        )


def tool_action(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The gateway action for a model's tool call (``json_body`` is the wire's ``json``)."""
    action = {"tool": name, **{k: v for k, v in arguments.items() if v is not None}}
    if "json_body" in action:
        action["json"] = action.pop("json_body")
    return action


def action_tool_call(action: dict[str, Any]) -> dict[str, Any]:
    """The tool call a model would make for a gateway action (inverse of :func:`tool_action`)."""
    arguments = {k: v for k, v in action.items() if k != "tool" and v is not None}
    if "json" in arguments:
        arguments["json_body"] = arguments.pop("json")
    return {"type": "function", "function": {"name": action["tool"], "arguments": arguments}}


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, ConnectionError | OSError | asyncio.IncompleteReadError):
        return True
    name = type(exc).__name__
    return "ConnectionClosed" in name or "WebSocket" in name
