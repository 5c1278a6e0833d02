"""Baseline agents for evaluation. They reach environments only through the OpenEnv client.

An :class:`Agent` sees observations (the ``observation`` dicts the client returns) and answers
with one action dict per turn; :func:`run_episode` drives one episode over a
``GenericEnvClient`` session. The agents:

* ``noop`` submits at once (the floor: reward 0);
* ``deny-all`` makes the app refuse every request, then submits (a trap that breaks legitimate
  use: reward ≤ 0);
* ``reference`` writes the scenario's stored reference fix with ``write_file`` and submits:
  a sanity upper bound for eval only. It reads the bundle from the scenario cache by the hash
  in the first observation, so it is never available to training;
* ``openai`` asks any OpenAI-compatible endpoint for one JSON action per turn, re-asking with
  the parse error when a reply is not a single JSON object. Its ``messages`` (the prompt and
  every raw reply, unparsable ones included) are saved with the episode. An endpoint that
  cannot be reached raises :class:`~a01gym.errors.UnreachableError`, which ends a run.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Protocol

from a01gym.env.sampler import ScenarioSource
from a01gym.errors import UnreachableError
from a01gym.training import session, toolcalls

__all__ = [
    "AGENT_NAMES",
    "Agent",
    "DenyAllAgent",
    "NoopAgent",
    "OpenAIAgent",
    "ReferenceAgent",
    "parse_action_text",
]

logger = logging.getLogger(__name__)

AGENT_NAMES = ("noop", "deny-all", "reference", "solver", "openai")

Action = dict[str, Any]
Observation = dict[str, Any]


class Agent(Protocol):
    """Chooses actions. ``start`` gets the reset observation, ``act`` every later one."""

    async def start(self, observation: Observation) -> None: ...

    async def act(self, observation: Observation) -> Action: ...


class NoopAgent:
    """Submits without changing anything."""

    async def start(self, observation: Observation) -> None:
        pass

    async def act(self, observation: Observation) -> Action:
        return {"tool": "submit"}


_APP_ASSIGNMENT = re.compile(r"^(\w+)\s*=\s*FastAPI\(", re.MULTILINE)
_DENY_MIDDLEWARE = """

@{app}.middleware("http")
async def _a01gym_deny_all(request, call_next):
    from starlette.responses import JSONResponse

    return JSONResponse({{"detail": "forbidden"}}, status_code=403)
"""


class DenyAllAgent:
    """Finds the file that creates the FastAPI app and adds a middleware refusing everything."""

    def __init__(self) -> None:
        self._plan: list[Action] = []
        self._target: str | None = None

    async def start(self, observation: Observation) -> None:
        files = [f["path"] for f in (observation.get("result") or {}).get("files", [])]
        self._plan = [{"tool": "search", "pattern": "FastAPI("}]
        self._candidates = [p for p in files if p.endswith(".py")]

    async def act(self, observation: Observation) -> Action:
        result = observation.get("result") or {}
        if "matches" in result and self._target is None:
            for match in result["matches"]:
                if _APP_ASSIGNMENT.match(match["text"].strip()):
                    self._target = match["path"]
                    return {"tool": "read_file", "path": match["path"]}
            return {"tool": "submit"}
        if "content" in result and self._target is not None and result.get("path") == self._target:
            found = _APP_ASSIGNMENT.search(result["content"])
            if found is None:
                return {"tool": "submit"}
            content = result["content"] + _DENY_MIDDLEWARE.format(app=found.group(1))
            self._target = ""
            return {"tool": "write_file", "path": result["path"], "content": content}
        if self._plan:
            return self._plan.pop(0)
        return {"tool": "submit"}


class ReferenceAgent:
    """Writes the stored reference fix through ``write_file``, then submits (eval only)."""

    def __init__(self, source: ScenarioSource) -> None:
        self.source = source
        self._plan: list[Action] = []

    async def start(self, observation: Observation) -> None:
        digest = (observation.get("result") or {}).get("scenario")
        bundle = self.source.load(str(digest))
        self._plan = [
            {"tool": "write_file", "path": path, "content": content}
            for path, content in sorted(bundle.hidden.reference_fix.files.items())
            if content is not None
        ]

    async def act(self, observation: Observation) -> Action:
        return self._plan.pop(0) if self._plan else {"tool": "submit"}


_SYSTEM_PROMPT = """\
You are a security engineer fixing broken access control (OWASP A01) in a small FastAPI app.
Each turn, reply with exactly ONE JSON object (no prose, no code fences) choosing a tool:
{tools}
Explore the code, reproduce the problem with http_request as different actors, fix it with
edit_file (exact `old` text; `line` picks one of several) or write_file, run_tests, submit.
A fix must block every unauthorised access without breaking legitimate use."""

_ENDPOINT_HINT = "check --base-url (or OPENAI_BASE_URL) and that the server is running"
_KEY_HINT = "set the variable named by --api-key-env (default OPENAI_API_KEY)"


def parse_action_text(text: str) -> Action:
    """The one action in a model reply: any tool-call form :mod:`a01gym.training.toolcalls`
    reads (our ``{"tool": ...}`` object, ``{"name", "arguments"}``, tags or code fences).

    Raises:
        ValueError: naming what is wrong, to send back to the model.
    """
    name, arguments = toolcalls.parse_tool_call(text)
    return session.tool_action(name, arguments)


def _reply_action(message: Any) -> Action:
    """The action of a chat completion message: its first structured tool call if the server
    parsed one, else the call written in its content (``transformers serve`` leaves
    ``tool_calls`` empty and returns a small model's call as fenced JSON in ``content``)."""
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is not None and function.name:
            return parse_action_text(
                json.dumps({"name": function.name, "arguments": function.arguments or "{}"})
            )
    return parse_action_text(message.content or "")


class OpenAIAgent:
    """Any OpenAI-compatible chat endpoint; one JSON action per turn."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.2,
        max_retries: int = 3,
        max_observation_chars: int = 8000,
        max_tokens: int | None = None,
        max_turns: int | None = None,
    ) -> None:
        import openai

        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "unused")
        self.base_url = str(self.client.base_url)
        self.model = model
        self.temperature = temperature
        self.max_retries = max_retries
        self.max_observation_chars = max_observation_chars
        self.max_tokens = max_tokens  # per reply; a small real model may otherwise not stop
        self.max_turns = max_turns  # actions before the agent submits on its own
        self.turns = 0
        self.messages: list[dict[str, str]] = []

    async def aclose(self) -> None:
        """Close the client's connections: an eval makes one agent per episode, and each
        left open keeps its sockets to the endpoint until garbage collection."""
        await self.client.close()

    def _observation_text(self, observation: Observation) -> str:
        text = str(observation.get("output", ""))
        if len(text) > self.max_observation_chars:
            text = text[: self.max_observation_chars] + "\n… (truncated)"
        return text + f"\n\n[{observation.get('steps_left')} steps left]"

    async def check_endpoint(self, timeout_s: float = 10.0) -> None:
        """Fail fast, before any episode, when the endpoint cannot be reached or refuses the
        key. An endpoint without ``/models`` is fine; one that lists models must list ours.

        Raises:
            UnreachableError: naming the endpoint and what to check.
        """
        import openai

        client = self.client.with_options(timeout=timeout_s, max_retries=0)
        try:
            served = [m.id async for m in client.models.list()]
        except openai.NotFoundError:
            return
        except openai.InternalServerError as exc:
            # It answered, but cannot list (``transformers serve`` 5.x: HTTP 500 on /models
            # when it serves a local directory): the first completion tells the rest.
            logger.warning("%s cannot list its models (%s); going on", self.base_url, exc)
            return
        except openai.AuthenticationError as exc:
            raise UnreachableError(
                self.base_url, f"the key was refused ({exc.status_code})", hint=_KEY_HINT
            ) from exc
        except openai.APIError as exc:
            raise UnreachableError(self.base_url, str(exc), hint=_ENDPOINT_HINT) from exc
        if served and self.model not in served:
            raise UnreachableError(
                self.base_url,
                f"model {self.model!r} is not served there",
                hint=f"pick one of {', '.join(sorted(served)[:10])}",
            )

    async def _complete(self) -> Any:
        import openai

        try:
            return await self.client.chat.completions.create(
                model=self.model,
                messages=self.messages,
                temperature=self.temperature,
                **({"max_tokens": self.max_tokens} if self.max_tokens else {}),
            )
        except (openai.APIConnectionError, openai.AuthenticationError) as exc:
            raise UnreachableError(self.base_url, str(exc), hint=_ENDPOINT_HINT) from exc

    async def start(self, observation: Observation) -> None:
        tools = "\n".join(
            f"- {name}" for name in (observation.get("result") or {}).get("tools", [])
        )
        self.messages = [
            {"role": "system", "content": _SYSTEM_PROMPT.format(tools=tools)},
            {"role": "user", "content": str(observation.get("output", ""))},
        ]

    async def act(self, observation: Observation) -> Action:
        if self.max_turns is not None and self.turns >= self.max_turns:
            return {"tool": "submit"}
        self.turns += 1
        if len(self.messages) > 2 or self.messages[-1]["role"] == "assistant":
            self.messages.append({"role": "user", "content": self._observation_text(observation)})
        for _ in range(self.max_retries):
            response = await self._complete()
            message = response.choices[0].message
            reply = message.content or ""
            self.messages.append({"role": "assistant", "content": reply})
            try:
                return _reply_action(message)
            except ValueError as exc:
                logger.info("unparsable model reply: %s", exc)
                self.messages.append(
                    {
                        "role": "user",
                        "content": f"Error: {exc}. Reply with exactly one JSON object such as "
                        '{"tool": "list_files"}.',
                    }
                )
        logger.warning("model gave no parsable action after %d tries; submitting", self.max_retries)
        return {"tool": "submit"}
