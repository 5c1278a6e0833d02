"""Multi-turn rollouts for GRPO and eval: batched generation, environment steps in parallel.

Why not TRL's ``environment_factory`` loop for our own trainer: TRL 1.16 generates each turn for
the whole batch at once but then executes tool calls one sample after another, so a batch of 64
rollouts waits for 64 ``submit`` gradings in series (each is a fresh-sandbox hidden-test run).
Here every turn is one batched ``generate`` followed by one ``asyncio.gather`` of all the
rollouts' environment steps on the shared client loop, so a turn costs the slowest step, not the
sum of them (``bench/rollouts.py`` measures both paths). We plug into TRL as ``rollout_func``
returning an ``env_mask`` (1 = model token, trained; 0 = tool output, masked), so loss, KL,
logging and LoRA stay TRL's.

A rollout ends at ``submit``, at ``max_turns``, or when its tokens reach ``max_completion_tokens``;
an unfinished episode is submitted as it stands, so the reward is always the environment's
terminal reward. A reply without a parsable tool call is sent to the gateway as an invalid
action (it is counted and penalised there), never a crash.

Who chooses each turn is a :class:`~a01gym.training.policies.Policy` (a model, or a scripted
agent in tests): :mod:`a01gym.training.policies`.

``rollout_func`` only receives prompts, so the dataset's prompt carries the reset arguments as
one JSON line (:func:`row_prompt`); the model never sees it, because the real prompt is built
from the reset observation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from a01gym.training import prompting, session, toolcalls

if TYPE_CHECKING:
    from a01gym.training.policies import Policy

__all__ = [
    "Rollout",
    "RolloutBatch",
    "RolloutEngine",
    "row_from_prompt",
    "row_prompt",
]

_ROW_PREFIX = "a01gym-episode "


def row_prompt(row: dict[str, Any]) -> list[dict[str, str]]:
    """The dataset prompt that carries a row's reset arguments to :func:`row_from_prompt`."""
    return [{"role": "user", "content": _ROW_PREFIX + json.dumps(row, sort_keys=True)}]


def row_from_prompt(prompt: Any) -> dict[str, Any]:
    """The reset arguments a :func:`row_prompt` carries.

    Raises:
        ValueError: when the prompt was not made by :func:`row_prompt`.
    """
    text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
    if not text.startswith(_ROW_PREFIX):
        raise ValueError("the dataset prompt must come from a01gym.training.rollout.row_prompt")
    return json.loads(text[len(_ROW_PREFIX) :])


@dataclasses.dataclass
class Rollout:
    """One episode as tokens (for the loss) and as messages (for logs and reports)."""

    row: dict[str, Any]
    session: session.EpisodeSession
    prompt_ids: list[int] = dataclasses.field(default_factory=list)
    completion_ids: list[int] = dataclasses.field(default_factory=list)
    env_mask: list[int] = dataclasses.field(default_factory=list)
    messages: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    turns: int = 0
    unparsable: int = 0
    kv: Any = dataclasses.field(default=None, repr=False)
    """The :class:`~a01gym.training.kvbatch.KVBatch` holding this episode's key/value cache."""

    @property
    def finished(self) -> bool:
        return self.session.done

    def drop_trailing_tool_tokens(self) -> None:
        """Cut the tool output after the model's last token from the tokens (not the messages).

        No model token follows it, so it conditions nothing the loss trains (its mask is 0), yet
        the training forward would pay for it: an episode stopped at ``max_turns`` or by the
        token budget ends with one whole observation (86 of ~600 tokens on the benchmark).
        """
        if 1 in self.env_mask:
            end = len(self.env_mask) - self.env_mask[::-1].index(1)
            del self.completion_ids[end:], self.env_mask[end:]

    def record(self) -> dict[str, Any]:
        """What the run logs keep of this rollout (no hidden test definitions: the breakdown
        is what the agent sees at the terminal step)."""
        breakdown = self.session.breakdown or {}
        labels = breakdown.get("labels") or {}
        return {
            "episode_id": self.session.episode_id,
            "seed": self.row.get("seed"),
            "family": labels.get("family", self.row.get("family")),
            "difficulty": labels.get("difficulty", self.row.get("difficulty")),
            "scenario": self.session.scenario,
            "reward": float(self.session.reward or 0.0),
            "security": float(breakdown.get("security", 0.0)),
            "regression": float(breakdown.get("regression", 0.0)),
            "resolved": bool(breakdown.get("resolved", False)),
            "invalid_actions": int(breakdown.get("invalid_actions", self.session.invalid_actions)),
            "actions": self.session.actions,
            "turns": self.turns,
            "unparsable": self.unparsable,
            "failure": self.session.failure,
            "model_tokens": sum(self.env_mask),
            "expert_allowed": self.session.expert_allowed,
            "expert_calls": int(self.session.shaping.get("expert_calls", 0)),
            "shaping": float(self.session.shaping.get("total", 0.0)),
            "messages": self.messages,
        }


@dataclasses.dataclass
class RolloutBatch:
    rollouts: list[Rollout]
    generation_s: float
    env_s: float
    wall_s: float


class RolloutEngine:
    """Plays episodes with a causal LM over gateway sessions (one per rollout slot).

    Args:
        tokenizer: A chat tokenizer whose template supports tools (e.g. from ``build_tiny``).
        base_url: The gateway.
        max_turns: Tool calls per episode before it is submitted as it stands.
        max_completion_tokens: Model plus tool tokens per episode (TRL's ``max_completion_length``).
        max_output_chars: Tool output kept per observation.
    """

    def __init__(
        self,
        tokenizer: Any,
        base_url: str,
        *,
        max_turns: int = 8,
        max_completion_tokens: int = 2048,
        max_output_chars: int = 1200,
    ) -> None:
        self.tokenizer = tokenizer
        self.base_url = base_url
        self.max_turns = max_turns
        self.max_completion_tokens = max_completion_tokens
        self.max_output_chars = max_output_chars
        self._sessions: list[session.EpisodeSession] = []

    # -- sessions --------------------------------------------------------------------------------
    def _session_pool(self, n: int) -> list[session.EpisodeSession]:
        while len(self._sessions) < n:
            self._sessions.append(
                session.EpisodeSession(self.base_url, max_output_chars=self.max_output_chars)
            )
        return self._sessions[:n]

    def close(self) -> None:
        """Close every gateway session this engine opened."""

        async def close_all() -> None:
            await asyncio.gather(*(s.close() for s in self._sessions))

        session.run_sync(close_all())
        self._sessions.clear()

    @staticmethod
    def _gather(coros: Sequence[Any]) -> list[Any]:
        async def run() -> list[Any]:
            return list(await asyncio.gather(*coros))

        return session.run_sync(run())

    # -- chat and tokens ---------------------------------------------------------------------------
    def _render(
        self,
        messages: list[dict[str, Any]],
        *,
        generation_prompt: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            tools=tools,
            tokenize=False,
            add_generation_prompt=generation_prompt,
        )

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _tool_suffix(self, name: str, content: str) -> list[int]:
        """Tokens between the end of a model turn and the next turn's first token."""
        call = {"type": "function", "function": {"name": name, "arguments": {}}}
        dummy = [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        # Rendered without the tool schemas: they only change the system turn, and rendering
        # them twice per step would cost more than the step itself.
        before = self._render(dummy, generation_prompt=False)
        after = self._render(
            [*dummy, {"role": "tool", "name": name, "content": content}], generation_prompt=True
        )
        if not after.startswith(before):
            raise RuntimeError("the chat template is not prefix-preserving; it cannot do tools")
        # The model's turn ends at its end-of-turn token; the template's newline after it is
        # part of what follows.
        end = before.rstrip("\n")
        return self._encode(before[len(end) :] + after[len(before) :])

    # -- the loop ---------------------------------------------------------------------------------
    def play(
        self, policy: Policy, rows: Sequence[dict[str, Any]], *, parallel: bool = True
    ) -> RolloutBatch:
        """Play one episode per row (rows with the same seed share a scenario: a GRPO group).

        ``parallel=False`` steps the environments one rollout after another, as TRL's
        environment_factory loop does (``bench/rollouts.py`` compares the two).
        """
        started = time.perf_counter()
        sessions = self._session_pool(len(rows))
        env_s = generation_s = 0.0

        t0 = time.perf_counter()
        tasks = self._gather(
            [_settled(s.reset(**row)) for s, row in zip(sessions, rows, strict=True)]
        )
        env_s += time.perf_counter() - t0
        rollouts = []
        for row, s, task in zip(rows, sessions, tasks, strict=True):
            if isinstance(task, BaseException):
                s.fail(f"reset failed: {type(task).__name__}: {task}")
                task = ""
            messages = prompting.episode_messages(task)
            rollout = Rollout(row=dict(row), session=s, messages=messages)
            tools = prompting.episode_tools(expert=s.expert_allowed)
            rollout.prompt_ids = self._encode(
                self._render(messages, generation_prompt=True, tools=tools)
            )
            if rollout.finished:  # TRL needs a non-empty completion: one masked end token
                rollout.completion_ids, rollout.env_mask = [self.tokenizer.eos_token_id], [0]
            rollouts.append(rollout)

        for _ in range(self.max_turns):
            active = [r for r in rollouts if not r.finished and self._room(r) > 0]
            if not active:
                break
            t0 = time.perf_counter()
            replies = self._generate(policy, active)
            generation_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            if parallel:
                outputs = self._gather([self._act(r, text) for r, text in replies])
            else:
                outputs = [self._gather([self._act(r, text)])[0] for r, text in replies]
            env_s += time.perf_counter() - t0
            for (rollout, _), (name, output) in zip(replies, outputs, strict=True):
                if rollout.finished:
                    continue
                suffix = self._tool_suffix(name, output)
                rollout.completion_ids += suffix
                rollout.env_mask += [0] * len(suffix)
                rollout.messages.append({"role": "tool", "name": name, "content": output})
        for rollout in rollouts:
            rollout.drop_trailing_tool_tokens()
            rollout.kv = None  # the batch's key/value cache: hundreds of MB, no longer needed

        t0 = time.perf_counter()
        self._gather([r.session.finish() for r in rollouts])
        env_s += time.perf_counter() - t0
        return RolloutBatch(rollouts, generation_s, env_s, time.perf_counter() - started)

    def _room(self, rollout: Rollout) -> int:
        return self.max_completion_tokens - len(rollout.completion_ids)

    def _generate(self, policy: Policy, active: list[Rollout]) -> list[tuple[Rollout, str]]:
        """One model turn for every active rollout; appends its tokens (mask 1)."""
        replies = []
        rooms = [self._room(r) for r in active]
        for rollout, tokens in zip(active, policy.reply(active, rooms), strict=True):
            tokens = tokens[: self._room(rollout)]
            rollout.completion_ids += tokens
            rollout.env_mask += [1] * len(tokens)
            rollout.turns += 1
            replies.append((rollout, self.tokenizer.decode(tokens, skip_special_tokens=False)))
        return replies

    async def _act(self, rollout: Rollout, reply: str) -> tuple[str, str]:
        """Send a reply's tool call to the environment; returns (tool name, rendered output)."""
        try:
            name, arguments = toolcalls.parse_tool_call(reply)
        except ValueError as exc:
            rollout.unparsable += 1
            rollout.messages.append({"role": "assistant", "content": reply})
            output = await rollout.session.invalid_reply(reply, str(exc))
            return "invalid_reply", output
        rollout.messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": name, "arguments": arguments}}
                ],
            }
        )
        output = await rollout.session.step(session.tool_action(name, arguments))
        return name, output


async def _settled(coro: Any) -> Any:
    """``coro``'s result, or the exception it raised (one failed reset must not sink a batch)."""
    try:
        return await coro
    except Exception as exc:
        return exc
