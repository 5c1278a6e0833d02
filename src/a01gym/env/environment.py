"""One episode at a time: reset → tool steps → terminal grading, on a warm sandbox.

:class:`A01Environment` is what the gateway holds per session. ``reset`` asks the
:class:`~a01gym.env.sampler.CurriculumSampler` for a scenario, takes an empty warm sandbox
from the shared :class:`~a01gym.env.runtime.EnvRuntime`'s backend and answers with
:mod:`a01gym.env.briefing`'s first observation, which needs nothing from the sandbox: the
workspace uploads, the app starts and the agent's (visible) world is seeded in the background
(:mod:`a01gym.env.appstart`), and the first tool that needs them waits.
Each ``step`` validates one action and dispatches it: workspace and app tools to
:mod:`a01gym.env.tools` in the sandbox, ``ask_expert`` to :mod:`a01gym.env.experttool` on this
side, ``submit`` (or the budget running out) to :mod:`a01gym.env.terminal`, which grades.
Until the terminal step no observation carries a reward; after it every step is refused.

If the episode's sandbox dies, :mod:`a01gym.env.recovery` replaces it once, replaying the
agent's file changes (kept here as an overlay); if that fails too the episode ends and whatever
the agent changed is graded. The episode's data types live in :mod:`a01gym.env.episode`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from typing import Any

from pydantic import BaseModel

from a01gym.env import (
    actions,
    appstart,
    briefing,
    experttool,
    models,
    recovery,
    terminal,
    tools,
    warm,
)
from a01gym.env.episode import Episode, ResetParams, StepOutcome, note_ignored
from a01gym.env.runtime import EnvRuntime
from a01gym.errors import ConfigError, EpisodeError, SandboxCapacityError, SandboxError

__all__ = ["A01Environment", "EnvRuntime", "ResetParams", "StepOutcome", "note_ignored"]

logger = logging.getLogger(__name__)


class A01Environment:
    """One session's environment. Calls are serialised on :attr:`lock`, the session's one
    lock: the gateway waits on it (a resume) and reads it (the reaper), never takes it around
    a call, so all methods are async-safe."""

    def __init__(self, runtime: EnvRuntime) -> None:
        self.runtime = runtime
        self.lock = asyncio.Lock()
        self._episode: Episode | None = None
        self._closed = False

    # -- public API --------------------------------------------------------------------------
    @property
    def episode_id(self) -> str | None:
        return self._episode.episode_id if self._episode else None

    async def reset(self, **kwargs: Any) -> StepOutcome:
        """Start a new episode (ending any current one ungraded).

        Unknown keyword arguments are ignored and named in the observation (OpenEnv's server
        ignores them too; see :class:`ResetParams`).

        Raises:
            ValidationError: for a known keyword argument with a bad value.
            ScenarioError: when no scenario matches the filters.
            SandboxError: when no sandbox could be prepared.
            ConfigError: when the reset asks for the expert and none is configured.
        """
        params, ignored = ResetParams.parse(kwargs)
        async with self.lock:
            if self._closed:
                raise EpisodeError("this environment is closed")
            # The new episode need not wait for the old sandbox's teardown, unless the backend
            # is full: then its acquire would wait for that slot, inside its own deadline.
            stats = self.runtime.backend.stats()
            full = stats.capacity is not None and not stats.idle
            full = full and stats.in_use + stats.starting >= (stats.capacity or 0)
            await self._abandon(wait=full)
            return note_ignored(await self._reset(params), ignored)

    async def step(self, data: Any) -> StepOutcome:
        """Run one action (any JSON value; invalid ones become error observations)."""
        async with self.lock:
            action, failure = actions.parse_action(data)
            return await self._step(data, action, failure)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[StepOutcome, dict[str, str] | None]:
        """Run a tool by MCP name; the second value is an MCP-level error, if any."""
        async with self.lock:
            record = {"tool": name, **(arguments or {})}
            if name not in models.TOOL_NAMES:
                failure = tools.ToolOutcome.fail(
                    models.ErrorCode.UNKNOWN_TOOL, f"unknown tool {name[:64]!r}"
                )
                outcome = await self._step(record, None, failure)
                return outcome, {
                    "error_type": "tool_not_found",
                    "message": f"Unknown tool: {name!r}",
                }
            if arguments is not None and not isinstance(arguments, dict):
                arguments = {"": arguments}
            if "tool" in (arguments or {}):
                action, failure = (
                    None,
                    tools.ToolOutcome.fail(
                        models.ErrorCode.INVALID_ACTION, "'tool' is not an argument"
                    ),
                )
            else:
                action, failure = actions.parse_action(record)
            outcome = await self._step(record, action, failure)
            if failure is not None and self._episode is not None:
                return outcome, {"error_type": "invalid_args", "message": failure.output}
            return outcome, None

    def state(self) -> models.EpisodeState:
        episode = self._episode
        if episode is None:
            return models.EpisodeState()
        return models.EpisodeState(
            episode_id=episode.episode_id,
            step_count=episode.step_count,
            scenario=episode.bundle.manifest.content_hash,
            split=episode.split,
            seed=episode.seed,
            phase=episode.phase,
            steps_left=episode.steps_left,
            max_steps=episode.max_steps,
            done=episode.done,
            invalid_actions=episode.invalid_actions,
            files_changed=sorted(episode.overlay),
            reward=episode.reward,
        )

    async def close(self) -> None:
        """End any running episode ungraded and release its sandbox. Idempotent."""
        async with self.lock:
            self._closed = True
            await self._abandon()

    # -- reset -------------------------------------------------------------------------------
    def _expert_calls(self, params: ResetParams) -> int:
        """Questions this episode may ask: 0 unless the reset (or the settings) offer it."""
        settings = self.runtime.expert_settings
        wanted = settings.enabled if params.expert is None else params.expert
        if not wanted:
            return 0
        if self.runtime.expert is None:
            raise ConfigError(
                "expert",
                "reset asked for the expert, but this gateway has no expert endpoint",
                hint="set A01GYM_EXPERT__BASE_URL and A01GYM_EXPERT__MODEL on the gateway, "
                "or reset with expert=false",
            )
        return settings.max_calls

    async def _reset(self, params: ResetParams) -> StepOutcome:
        started = time.perf_counter()
        expert_calls = self._expert_calls(params)
        seed = params.seed if params.seed is not None else secrets.randbelow(2**31)
        split = params.split or self.runtime.default_split
        sampler = self.runtime.sampler
        entry = sampler.pick(
            seed,
            split=split,
            family=params.family,
            difficulty=params.difficulty,
            scenario=params.scenario,
        )
        bundle = sampler.load(entry.hash)
        digest = bundle.manifest.content_hash
        spares = self.runtime.spares
        sandbox = spares.take(digest) if spares is not None else None
        if spares is not None:
            # Wanted on arrival, so a burst counts as one however long its resets take.
            spares.want(bundle, warm.Kind.EPISODE)
            spares.want(bundle, warm.Kind.GRADING)  # ready by the time this episode ends
            if sandbox is None:
                spares.make_room()
        app_start = None
        if sandbox is None:  # prepared meanwhile; the first tool that needs it waits
            sandbox = await self.runtime.backend.acquire()
            app_start = appstart.AppStart(sandbox, bundle)
        episode_id = params.episode_id or uuid.uuid4().hex
        section = experttool.briefing_note(expert_calls) if expert_calls else ""
        text, result = briefing.render(bundle, expert_section=section)
        result["expert_calls"] = expert_calls
        episode = Episode(
            episode_id=episode_id,
            bundle=bundle,
            split=entry.split,
            seed=seed,
            sandbox=sandbox,
            log=self.runtime.logger.open(episode_id, scenario=digest, agent=params.agent),
            briefing=text,
            expert_calls_allowed=expert_calls,
            app_start=app_start,
        )
        self._episode = episode
        outcome = StepOutcome(
            models.A01Observation(
                output=text,
                result=result,
                phase=episode.phase,
                steps_left=episode.steps_left,
                metadata={"task": text},
            )
        )
        if episode.log is not None:
            episode.log.reset(
                seed=seed,
                split=entry.split,
                briefing=text,
                ms=(time.perf_counter() - started) * 1000,
                observation=outcome.wire()["observation"],
            )
        logger.info(
            "episode %s started on scenario %s (expert questions: %d)",
            episode_id,
            digest[:12],
            expert_calls,
        )
        return outcome

    # -- steps -------------------------------------------------------------------------------
    def _reply(
        self,
        episode: Episode | None,
        outcome: tools.ToolOutcome,
        tool: str | None,
        *,
        done: bool = False,
    ) -> StepOutcome:
        observation = models.A01Observation(
            tool=tool,
            output=outcome.output,
            result=outcome.result,
            error=outcome.error,
            phase=episode.phase if episode else models.Phase.EXPLORE,
            steps_left=episode.steps_left if episode else 0,
        )
        return StepOutcome(observation, None, done)

    async def _step(
        self, raw: Any, action: BaseModel | None, failure: tools.ToolOutcome | None
    ) -> StepOutcome:
        episode = self._episode
        tool = getattr(action, "tool", None)
        if episode is None:
            return self._reply(
                None,
                tools.ToolOutcome.fail(
                    models.ErrorCode.NO_EPISODE, "no episode is running; send reset first"
                ),
                tool,
            )
        if episode.done:
            return self._reply(
                episode,
                tools.ToolOutcome.fail(
                    models.ErrorCode.EPISODE_DONE,
                    "the episode is over; send reset to start another",
                ),
                tool,
                done=True,
            )
        started = time.perf_counter()
        episode.step_count += 1
        if failure is not None or action is None:
            outcome = failure or tools.ToolOutcome.fail(
                models.ErrorCode.INVALID_ACTION, "no action"
            )
        elif isinstance(action, models.Submit):
            return await terminal.finish(
                self.runtime, episode, raw, tools.ToolOutcome("submitted"), started
            )
        elif isinstance(action, models.AskExpert):
            outcome = await experttool.ask_expert(self.runtime, episode, action)
        else:
            try:
                outcome = await self._run(episode, action)
            except recovery.EndEpisode as exc:
                failure = tools.ToolOutcome.fail(
                    models.ErrorCode.SANDBOX_LOST, f"{exc}; the episode ends and is graded as is"
                )
                return await terminal.finish(self.runtime, episode, raw, failure, started)
        if outcome.error is not None and outcome.error.code in tools.INVALID_CODES:
            episode.invalid_actions += 1
        self._advance_phase(episode, action, outcome)
        episode.history.append(
            {
                "step": episode.step_count,
                "tool": tool,
                "error": outcome.error and outcome.error.code,
            }
        )
        if episode.expert_enabled:  # what the expert is shown of the episode so far
            episode.transcript.append((raw, outcome.output))
        if episode.steps_left == 0:
            outcome.output += "\n\nThe step budget is used up; the episode is being graded."
            return await terminal.finish(self.runtime, episode, raw, outcome, started)
        reply = self._reply(episode, outcome, tool)
        episode.log_step(raw, reply, started)
        return reply

    def _advance_phase(
        self, episode: Episode, action: BaseModel | None, outcome: tools.ToolOutcome
    ) -> None:
        if outcome.changed_files:
            episode.phase = models.Phase.PATCH
            episode.last_change_step = episode.step_count
        elif isinstance(action, models.RunTests | models.HttpRequest) and episode.phase in (
            models.Phase.PATCH,
            models.Phase.VERIFY,
        ):
            episode.phase = models.Phase.VERIFY

    async def _run(self, episode: Episode, action: BaseModel) -> tools.ToolOutcome:
        ctx = tools.ToolContext(
            bundle=episode.bundle,
            max_write_bytes=episode.bundle.manifest.budget.max_write_bytes,
            files=episode.file,
            max_read_bytes=self.runtime.max_read_bytes,
        )
        if episode.sandbox is None:
            return tools.ToolOutcome.fail(models.ErrorCode.SANDBOX_LOST, "no sandbox")
        try:
            start = episode.app_start
            if start is not None and appstart.needs_app(action):
                waited = await start.wait()
                if start.finished:
                    episode.app_start = None
                if waited is not None:
                    return waited
            elif start is not None and appstart.needs_workspace(action):
                await start.uploaded()
            outcome = await tools.execute(action, episode.sandbox.client, ctx)
            if outcome.changed_files:
                episode.remember(action)
            return outcome
        except SandboxCapacityError as exc:  # no turn to restart the app in time: not lost
            episode.remember(action)
            return tools.ToolOutcome.fail(
                models.ErrorCode.APP_TIMEOUT,
                f"the file was changed, but the app could not restart: {exc}. It still runs "
                "the previous code; write the file again to restart it",
            )
        except SandboxError as exc:
            logger.warning("episode %s: sandbox failed: %s", episode.episode_id, exc)
            return await recovery.replace_sandbox(self.runtime, episode, exc)

    # -- teardown ----------------------------------------------------------------------------
    async def _abandon(self, *, wait: bool = True) -> None:
        """End the current episode ungraded; its sandbox is released now, or with ``wait``
        False in the background (``runtime.close`` still waits for it)."""
        episode, self._episode = self._episode, None
        if episode is None:
            return
        await episode.stop_app_start()
        if episode.log is not None:  # first: nothing below may be cut short before it
            episode.log.close()
            episode.log = None
        if episode.sandbox is not None:
            sandbox, episode.sandbox = episode.sandbox, None
            if wait:
                await self.runtime.releases.release(sandbox)
            else:
                await self.runtime.release_later(sandbox)
