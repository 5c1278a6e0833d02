"""One episode's bookkeeping and the shapes ``reset`` and ``step`` answer with.

:class:`ResetParams` is what ``reset`` accepts, :class:`StepOutcome` is one reply (observation
plus OpenEnv's envelope ``reward`` and ``done``), and :class:`Episode` is the mutable state the
environment (:mod:`a01gym.env.environment`), grading (:mod:`a01gym.env.grading`) and sandbox
recovery (:mod:`a01gym.env.recovery`) share while an episode runs.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from a01gym.env import models
from a01gym.env.appstart import AppStart
from a01gym.env.logger import AGENT_PATTERN, EPISODE_ID_PATTERN, EpisodeLog
from a01gym.sandbox import edits
from a01gym.sandbox.host.backend import Sandbox
from a01gym.scenario.bundle import Bundle, safe_relative_path

__all__ = ["Episode", "ExpertCall", "ResetParams", "StepOutcome", "note_ignored"]

_MAX_IGNORED = 20


class ResetParams(BaseModel):
    """Keyword arguments ``reset`` uses.

    Others are ignored, as OpenEnv's server ignores what ``reset`` does not take, but
    :meth:`parse` names them and :func:`note_ignored` puts them in the reset observation, so a
    typo (``famly=``) stays visible instead of silently sampling from every family.
    """

    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(None, ge=0, le=2**63 - 1)
    episode_id: str | None = Field(None, pattern=EPISODE_ID_PATTERN.pattern)
    agent: str | None = Field(
        None,
        pattern=AGENT_PATTERN.pattern,
        description="Who plays (e.g. 'noop', 'human'); kept in the episode's artifacts.",
    )
    scenario: str | None = Field(None, min_length=8, max_length=128)
    split: str | None = Field(None, pattern=r"^[a-z0-9_-]{1,32}$")
    family: str | None = Field(None, max_length=64)
    difficulty: str | None = Field(None, max_length=32)
    expert: bool | None = Field(
        None,
        description="Offer ask_expert in this episode; null follows the gateway's "
        "expert.enabled setting. True needs an expert endpoint configured.",
    )

    @classmethod
    def parse(cls, kwargs: dict[str, Any]) -> tuple[ResetParams, list[str]]:
        """The known arguments, validated, and the sorted names of the ignored ones.

        Raises:
            ValidationError: for a known argument with a bad value.
        """
        known = {k: v for k, v in kwargs.items() if k in cls.model_fields}
        ignored = sorted(str(k)[:64] for k in kwargs if k not in cls.model_fields)
        return cls.model_validate(known), ignored[:_MAX_IGNORED]


@dataclasses.dataclass(frozen=True)
class StepOutcome:
    """One reply: the observation plus the envelope's ``reward`` and ``done``.

    Frozen, so its wire payload is built once however many readers it has (the episode log,
    the gateway's reply and its metrics); readers must not change the payload.
    """

    observation: models.A01Observation
    reward: float | None = None
    done: bool = False

    @functools.cached_property
    def _payload(self) -> dict[str, Any]:
        return {
            "observation": self.observation.model_dump(mode="json", by_alias=True),
            "reward": self.reward,
            "done": self.done,
        }

    def wire(self) -> dict[str, Any]:
        """OpenEnv's ``{"observation", "reward", "done"}`` payload (built on first use)."""
        return self._payload


def note_ignored(outcome: StepOutcome, ignored: list[str]) -> StepOutcome:
    """``outcome`` with the ignored reset arguments named: a first line in ``output`` and
    ``ignored_args`` in ``result``."""
    if not ignored:
        return outcome
    observation = outcome.observation
    line = (
        f"Note: reset ignored unknown arguments {', '.join(ignored)}; "
        f"it takes {', '.join(ResetParams.model_fields)}."
    )
    result = observation.result
    if isinstance(result, dict):
        result = {**result, "ignored_args": ignored}
    observation = observation.model_copy(
        update={"output": f"{line}\n\n{observation.output}", "result": result}
    )
    return dataclasses.replace(outcome, observation=observation)


@dataclasses.dataclass(frozen=True)
class ExpertCall:
    """When the agent asked the expert, and what came before: what reward shaping reads."""

    step: int
    explored_steps: int
    after_error: bool
    steps_since_change: int
    answered: bool


@dataclasses.dataclass
class Episode:
    """A running episode: its scenario, sandbox, counters, file overlay and history.

    ``overlay`` is the agent's diff, the one record of it: every file the agent wrote or
    edited, with its content now. It is kept here, from the actions themselves, because the
    agent's tools are the only writers of a workspace (the app sees it read-only), so grading,
    the logs and a replacement sandbox all read it without asking the sandbox.
    """

    episode_id: str
    bundle: Bundle
    split: str
    seed: int
    sandbox: Sandbox | None
    log: EpisodeLog | None
    briefing: str = ""
    expert_calls_allowed: int = 0
    phase: models.Phase = models.Phase.EXPLORE
    step_count: int = 0
    invalid_actions: int = 0
    overlay: dict[str, str] = dataclasses.field(default_factory=dict)
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    transcript: list[tuple[Any, str]] = dataclasses.field(default_factory=list)
    expert_calls: list[ExpertCall] = dataclasses.field(default_factory=list)
    last_change_step: int = 0
    done: bool = False
    reward: float | None = None
    recovered: bool = False
    app_start: AppStart | None = None  # the app still starting; None once it serves

    def file(self, path: str) -> bytes | None:
        """The workspace file at ``path`` as the sandbox holds it now (None: no such file):
        the bundle's, or the agent's version from the overlay."""
        path = safe_relative_path(path)
        if path in self.overlay:
            content = self.overlay[path]
            return None if content is None else content.encode()
        return self.bundle.workspace.get(path)

    def remember(self, action: BaseModel) -> None:
        """Record a write or edit the sandbox accepted: for an edit, the same single
        replacement the supervisor made, on the content this episode already knows."""
        if not isinstance(action, models.WriteFile | models.EditFile):
            return
        path = safe_relative_path(action.path)
        if isinstance(action, models.WriteFile):
            self.overlay[path] = action.content
            return
        known = self.overlay.get(path)
        text = known if known is not None else self.bundle.workspace[path].decode()
        self.overlay[path] = edits.replace_once(
            text, action.old, action.new, action.line, path=path
        )

    @property
    def max_steps(self) -> int:
        return self.bundle.manifest.budget.max_steps

    @property
    def steps_left(self) -> int:
        return max(0, self.max_steps - self.step_count)

    @property
    def expert_enabled(self) -> bool:
        return self.expert_calls_allowed > 0

    @property
    def expert_calls_left(self) -> int:
        """Questions left: only answered ones use the budget."""
        answered = sum(call.answered for call in self.expert_calls)
        return max(0, self.expert_calls_allowed - answered)

    def log_step(self, raw: Any, reply: StepOutcome, started: float) -> None:
        """Append one step (the action as sent, the observation as answered) to the log."""
        if self.log is not None:
            self.log.step(
                index=self.step_count,
                action=raw,
                observation=reply.wire()["observation"],
                ms=(time.perf_counter() - started) * 1000,
            )

    async def stop_app_start(self) -> None:
        """Cancel the background app start, if one still runs."""
        start, self.app_start = self.app_start, None
        if start is not None:
            await start.cancel()
