"""The expert behind ``ask_expert``: one chat-completions call to an OpenAI-compatible endpoint.

The call runs here, on the gateway's side (httpx, async), never inside a sandbox: the sandbox has
no network, and the endpoint's key must never reach agent-run code. What the expert is told is
built by :mod:`a01gym.env.expertprompt` from what the agent may see; this module only sends it.

Every way the endpoint can fail (refused connection, timeout, an HTTP error status, a body that
is not the chat-completions shape) comes back as an :class:`ExpertReply` with an ``outcome``
other than ``ok`` and a message saying what happened, so the episode turns it into an error
observation and goes on. Nothing here raises for a bad endpoint.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a01gym.expert_settings import ExpertSettings

__all__ = ["ExpertOutcome", "ExpertReply", "ExpertService"]

logger = logging.getLogger(__name__)


class ExpertOutcome(enum.StrEnum):
    """How one question ended; also the metric label (a small fixed set)."""

    OK = "ok"
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    HTTP_ERROR = "http_error"
    BAD_RESPONSE = "bad_response"


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")

    message: _Message


class _Usage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)


class _Completion(BaseModel):
    """The part of an OpenAI chat-completions response we read."""

    model_config = ConfigDict(extra="ignore")

    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage = Field(default_factory=_Usage)


@dataclasses.dataclass(frozen=True)
class ExpertReply:
    """One question's answer, or why there is none."""

    outcome: ExpertOutcome
    answer: str = ""
    message: str = ""
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome is ExpertOutcome.OK


class ExpertService:
    """Sends questions to the configured endpoint; one connection pool per gateway process."""

    def __init__(
        self, settings: ExpertSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ):
        if not settings.configured:
            raise ValueError("ExpertService needs expert.base_url and expert.model")
        self.settings = settings
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {}
            if self.settings.api_key is not None:
                headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
            self._client = httpx.AsyncClient(
                base_url=str(self.settings.base_url).rstrip("/") + "/",
                headers=headers,
                timeout=httpx.Timeout(self.settings.timeout_s),
            )
        return self._client

    async def ask(self, messages: list[dict[str, Any]]) -> ExpertReply:
        """Send one chat; never raises for the endpoint's failures (see the module docstring)."""
        body = {
            "model": self.settings.model,
            "messages": messages,
            "max_tokens": self.settings.max_tokens,
            "temperature": self.settings.temperature,
        }
        started = time.perf_counter()

        def failed(outcome: ExpertOutcome, message: str) -> ExpertReply:
            seconds = time.perf_counter() - started
            logger.warning("expert call failed (%s): %s", outcome.value, message)
            return ExpertReply(outcome, message=message, seconds=seconds)

        try:
            response = await self._http().post("chat/completions", json=body)
        except httpx.TimeoutException:
            return failed(
                ExpertOutcome.TIMEOUT,
                f"the expert did not answer within {self.settings.timeout_s:g} s",
            )
        except httpx.HTTPError as exc:
            return failed(
                ExpertOutcome.UNREACHABLE,
                f"the expert endpoint is unreachable ({type(exc).__name__})",
            )
        if response.status_code != 200:
            return failed(
                ExpertOutcome.HTTP_ERROR,
                f"the expert endpoint answered HTTP {response.status_code}",
            )
        try:
            completion = _Completion.model_validate_json(response.content)
        except ValidationError as exc:
            return failed(
                ExpertOutcome.BAD_RESPONSE,
                f"the expert's reply is not a chat completion ({exc.error_count()} problems)",
            )
        answer = (completion.choices[0].message.content or "").strip()
        if not answer:
            return failed(ExpertOutcome.BAD_RESPONSE, "the expert answered with no text")
        return ExpertReply(
            ExpertOutcome.OK,
            answer=answer,
            seconds=time.perf_counter() - started,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
        )

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
