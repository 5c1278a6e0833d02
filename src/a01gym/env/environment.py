"""One episode at a time: reset → tool steps → terminal grading, on a warm sandbox.

:class:`A01Environment` is what the gateway holds per session. ``reset`` asks the
:class:`~a01gym.env.sampler.CurriculumSampler` for a scenario, loads its workspace into a
sandbox from the shared :class:`EnvRuntime`'s backend, starts the app, seeds the agent's
(visible) world and answers with :mod:`a01gym.env.briefing`'s first observation. Each
``step`` validates one action and runs it through :mod:`a01gym.env.tools`. The terminal step
(``submit``, or the budget running out) takes the episode's changed files, overlays them on
the pristine workspace, has :func:`a01gym.sandbox.verification.verify` grade them on a
*fresh* sandbox with a re-randomised world, and turns the report into a reward with
:mod:`a01gym.env.reward`. Until then no observation carries a reward; after it every step is
refused.

If the episode's sandbox dies, the environment replaces it once, replaying the agent's file
changes (kept here as an overlay), and tells the agent; if that fails too the episode ends
and whatever the agent changed is graded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import logging
import secrets
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from a01gym import config
from a01gym.env import briefing, models, reward, tools, warm
from a01gym.env.logger import (
    AGENT_PATTERN,
    EPISODE_ID_PATTERN,
    EpisodeLog,
    RunLogger,
    verification_document,
)
from a01gym.env.sampler import CurriculumSampler
from a01gym.env.warm import WarmSpares
from a01gym.errors import EpisodeError, SandboxCapacityError, SandboxError
from a01gym.sandbox import protocol, verification
from a01gym.sandbox.backend import BackgroundReleases, Sandbox, SandboxBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.manifest import Patch

__all__ = ["A01Environment", "EnvRuntime", "ResetParams", "StepOutcome", "note_ignored"]

logger = logging.getLogger(__name__)


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

    @classmethod
    def parse(cls, kwargs: dict[str, Any]) -> tuple[ResetParams, list[str]]:
        """The known arguments, validated, and the sorted names of the ignored ones.

        Raises:
            ValidationError: for a known argument with a bad value.
        """
        known = {k: v for k, v in kwargs.items() if k in cls.model_fields}
        ignored = sorted(str(k)[:64] for k in kwargs if k not in cls.model_fields)
        return cls.model_validate(known), ignored[:_MAX_IGNORED]


_MAX_IGNORED = 20


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


@dataclasses.dataclass
class StepOutcome:
    """One reply: the observation plus the envelope's ``reward`` and ``done``."""

    observation: models.A01Observation
    reward: float | None = None
    done: bool = False

    def wire(self) -> dict[str, Any]:
        """OpenEnv's ``{"observation", "reward", "done"}`` payload."""
        return {
            "observation": self.observation.model_dump(mode="json", by_alias=True),
            "reward": self.reward,
            "done": self.done,
        }


@dataclasses.dataclass
class EnvRuntime:
    """What every session shares: sandboxes, scenarios, logs and cached route baselines."""

    backend: SandboxBackend
    sampler: CurriculumSampler
    logger: RunLogger = dataclasses.field(default_factory=lambda: RunLogger(None))
    default_split: str = "train"
    routes: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    spares: WarmSpares | None = None
    grading: config.GradingSettings = dataclasses.field(
        default_factory=lambda: config.get_settings().grading
    )
    releases: BackgroundReleases = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.releases = BackgroundReleases(self.backend)

    async def release_later(self, sandbox: Sandbox) -> None:
        """Release ``sandbox`` in the background: a terminal step need not wait for the
        teardown of sandboxes it is done with. :meth:`close` waits for them."""
        self.releases.release_later(sandbox)

    async def close(self) -> None:
        """Finish background releases and release the warm spares (the backend is closed by
        whoever started it)."""
        await self.releases.drain()
        if self.spares is not None:
            await self.spares.close()


@dataclasses.dataclass
class _Episode:
    episode_id: str
    bundle: Bundle
    split: str
    seed: int
    sandbox: Sandbox | None
    log: EpisodeLog | None
    phase: models.Phase = models.Phase.EXPLORE
    step_count: int = 0
    invalid_actions: int = 0
    overlay: dict[str, str] = dataclasses.field(default_factory=dict)
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    done: bool = False
    reward: float | None = None
    recovered: bool = False

    @property
    def max_steps(self) -> int:
        return self.bundle.manifest.budget.max_steps

    @property
    def steps_left(self) -> int:
        return max(0, self.max_steps - self.step_count)


def _routes(body: str) -> frozenset[str] | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
        return None
    return frozenset(
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        if isinstance(item, dict)
        for method in item
    )


async def _fetch_routes(sandbox: Sandbox) -> frozenset[str] | None:
    try:
        response = await sandbox.client.request(
            protocol.ProxyRequest(method="GET", path="/openapi.json", timeout_s=5.0)
        )
    except Exception as exc:  # best effort: no routes means no removed-route check
        logger.debug("route listing failed: %s", exc)
        return None
    return _routes(response.body) if response.status == 200 else None


def _fresh_seed(avoid: int) -> int:
    while (seed := secrets.randbelow(2**31 - 1) + 1) == avoid:
        pass
    return seed


def _is_cache(path: str) -> bool:
    return "__pycache__/" in path or path.endswith((".pyc", ".pyo"))


class A01Environment:
    """One session's environment. Calls are serialised; all methods are async-safe."""

    def __init__(self, runtime: EnvRuntime) -> None:
        self.runtime = runtime
        self._episode: _Episode | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    # -- public API --------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._lock.locked()

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
        """
        params, ignored = ResetParams.parse(kwargs)
        async with self._lock:
            if self._closed:
                raise EpisodeError("this environment is closed")
            await self._abandon()
            return note_ignored(await self._reset(params), ignored)

    async def step(self, data: Any) -> StepOutcome:
        """Run one action (any JSON value; invalid ones become error observations)."""
        async with self._lock:
            action, failure = tools.parse_action(data)
            return await self._step(data, action, failure)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[StepOutcome, dict[str, str] | None]:
        """Run a tool by MCP name; the second value is an MCP-level error, if any."""
        async with self._lock:
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
                action, failure = tools.parse_action(record)
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
        async with self._lock:
            self._closed = True
            await self._abandon()

    # -- reset -------------------------------------------------------------------------------
    async def _reset(self, params: ResetParams) -> StepOutcome:
        started = time.perf_counter()
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
        if sandbox is None:
            sandbox = await warm.prepare(self.runtime.backend, bundle)
        if digest not in self.runtime.routes:
            routes = await _fetch_routes(sandbox)
            if routes is not None:
                self.runtime.routes[digest] = routes
        episode_id = params.episode_id or uuid.uuid4().hex
        text, result = briefing.render(bundle)
        episode = _Episode(
            episode_id=episode_id,
            bundle=bundle,
            split=entry.split,
            seed=seed,
            sandbox=sandbox,
            log=self.runtime.logger.open(episode_id, scenario=digest, agent=params.agent),
        )
        self._episode = episode
        observation = models.A01Observation(
            output=text,
            result=result,
            phase=episode.phase,
            steps_left=episode.steps_left,
            metadata={"task": text},
        )
        if episode.log is not None:
            episode.log.reset(
                seed=seed,
                split=entry.split,
                briefing=text,
                ms=(time.perf_counter() - started) * 1000,
                observation=StepOutcome(observation).wire()["observation"],
            )
        logger.info(
            "episode %s started on scenario %s", episode_id, bundle.manifest.content_hash[:12]
        )
        return StepOutcome(observation)

    # -- steps -------------------------------------------------------------------------------
    def _reply(
        self,
        episode: _Episode | None,
        outcome: tools.ToolOutcome,
        tool: str | None,
        *,
        done: bool = False,
    ) -> StepOutcome:
        phase = episode.phase if episode else models.Phase.EXPLORE
        steps_left = episode.steps_left if episode else 0
        observation = models.A01Observation(
            tool=tool,
            output=outcome.output,
            result=outcome.result,
            error=outcome.error,
            phase=phase,
            steps_left=steps_left,
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
            return await self._terminal(episode, raw, tools.ToolOutcome("submitted"), started)
        else:
            try:
                outcome = await self._run(episode, action)
            except _EndEpisode as exc:
                failure = tools.ToolOutcome.fail(
                    models.ErrorCode.SANDBOX_LOST, f"{exc}; the episode ends and is graded as is"
                )
                return await self._terminal(episode, raw, failure, started)
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
        if episode.steps_left == 0:
            outcome.output += "\n\nThe step budget is used up; the episode is being graded."
            return await self._terminal(episode, raw, outcome, started)
        reply = self._reply(episode, outcome, tool)
        self._log_step(episode, raw, reply, started)
        return reply

    def _advance_phase(
        self, episode: _Episode, action: BaseModel | None, outcome: tools.ToolOutcome
    ) -> None:
        if outcome.changed_files:
            episode.phase = models.Phase.PATCH
        elif isinstance(action, models.RunTests | models.HttpRequest) and episode.phase in (
            models.Phase.PATCH,
            models.Phase.VERIFY,
        ):
            episode.phase = models.Phase.VERIFY

    async def _run(self, episode: _Episode, action: BaseModel) -> tools.ToolOutcome:
        ctx = tools.ToolContext(
            bundle=episode.bundle, max_write_bytes=episode.bundle.manifest.budget.max_write_bytes
        )
        if episode.sandbox is None:
            return tools.ToolOutcome.fail(models.ErrorCode.SANDBOX_LOST, "no sandbox")
        try:
            outcome = await tools.execute(action, episode.sandbox.client, ctx)
            if outcome.changed_files:
                await self._remember(episode, action)
            return outcome
        except SandboxCapacityError as exc:  # no turn to restart the app in time: not lost
            await self._remember(episode, action)
            return tools.ToolOutcome.fail(
                models.ErrorCode.APP_TIMEOUT,
                f"the file was changed, but the app could not restart: {exc}. It still runs "
                "the previous code; write the file again to restart it",
            )
        except SandboxError as exc:
            logger.warning("episode %s: sandbox failed: %s", episode.episode_id, exc)
            return await self._recover(episode, exc)

    async def _remember(self, episode: _Episode, action: BaseModel) -> None:
        assert episode.sandbox is not None
        if isinstance(action, models.WriteFile):
            episode.overlay[action.path] = action.content
        elif isinstance(action, models.EditFile):
            episode.overlay[action.path] = await episode.sandbox.client.read_file(action.path)

    async def _recover(self, episode: _Episode, exc: SandboxError) -> tools.ToolOutcome:
        old, episode.sandbox = episode.sandbox, None
        if old is not None:
            await self.runtime.releases.release(old)
        if episode.recovered:
            raise _EndEpisode(f"the sandbox failed again ({exc})")
        episode.recovered = True
        try:
            sandbox = await self.runtime.backend.acquire()
        except SandboxError as again:
            raise _EndEpisode(
                f"the sandbox failed and no replacement was available ({again})"
            ) from again
        try:
            files = episode.bundle.patched_workspace(Patch(files=dict(episode.overlay)))
            app = await sandbox.client.load_workspace(
                files, entrypoint=episode.bundle.manifest.entrypoint, start=True
            )
            if app.state is protocol.AppState.RUNNING:
                await tools.seed_visible_world(sandbox.client, episode.bundle)
        except SandboxError as again:
            await self.runtime.releases.release(sandbox)
            raise _EndEpisode(f"the replacement sandbox failed too ({again})") from again
        episode.sandbox = sandbox
        return tools.ToolOutcome.fail(
            models.ErrorCode.SANDBOX_LOST,
            "the sandbox stopped responding and was replaced; your file changes were kept and "
            "the database was re-seeded. Retry the action.",
        )

    # -- terminal ----------------------------------------------------------------------------
    async def _terminal(
        self, episode: _Episode, raw: Any, outcome: tools.ToolOutcome, started: float
    ) -> StepOutcome:
        episode.done = True
        episode.phase = models.Phase.DONE
        manifest, hidden = episode.bundle.manifest, episode.bundle.hidden
        grading = self.runtime.grading
        deadline = asyncio.get_running_loop().time() + grading.deadline_s
        changes: dict[str, str | None] = dict(episode.overlay)
        routes: asyncio.Task[list[str]] | None = None
        sandbox, episode.sandbox = episode.sandbox, None
        if sandbox is not None:
            try:
                async with asyncio.timeout_at(deadline):
                    changes.update(await sandbox.client.changes())
            except (SandboxError, TimeoutError) as exc:
                # The overlay still holds every file the agent wrote through its tools.
                logger.warning("episode %s: could not read changes: %r", episode.episode_id, exc)
            # Removed routes are looked up on the episode's sandbox while grading runs.
            baseline = self.runtime.routes.get(manifest.content_hash) if changes else None
            routes = asyncio.create_task(self._removed_routes(sandbox, baseline, deadline))
        changes = {p: c for p, c in changes.items() if not _is_cache(p)}
        files = episode.bundle.patched_workspace(Patch(files=changes))
        report: verification.Verification | None = None
        spares = self.runtime.spares
        try:
            report = await verification.verify(
                self.runtime.backend,
                episode.bundle,
                files,
                seed=_fresh_seed(manifest.visible_seed),
                release=self.runtime.release_later,
                started=spares.take(manifest.content_hash, warm.Kind.GRADING) if spares else None,
                deadline_s=max(deadline - asyncio.get_running_loop().time(), 0.001),
                request_timeout_s=grading.request_timeout_s,
            )
            breakdown = reward.breakdown(
                report,
                manifest.reward,
                hidden.labels,
                invalid_actions=episode.invalid_actions,
                steps_used=episode.step_count,
                removed_routes=await routes if routes is not None else (),
            )
        except SandboxError as exc:
            if routes is not None:
                await routes
            logger.error("episode %s: grading failed: %s", episode.episode_id, exc)
            breakdown = reward.failed_breakdown(
                manifest.reward,
                hidden.labels,
                invalid_actions=episode.invalid_actions,
                steps_used=episode.step_count,
                error=f"grading could not run: {exc}",
            )
        episode.reward = breakdown.reward
        verdict = "resolved" if breakdown.resolved else "not resolved"
        outcome.output += (
            f"\n\nEpisode over: {verdict}. reward {breakdown.reward:.3f} "
            f"(security {breakdown.security:.2f}, regression {breakdown.regression:.2f})"
        )
        observation = models.A01Observation(
            tool=raw.get("tool") if isinstance(raw, dict) else None,
            output=outcome.output,
            result=outcome.result,
            error=outcome.error,
            phase=episode.phase,
            steps_left=episode.steps_left,
            reward_breakdown=breakdown,
        )
        reply = StepOutcome(observation, breakdown.reward, True)
        self._log_step(episode, raw, reply, started)
        if episode.log is not None:
            diff = _diff(episode.bundle, changes)
            episode.log.finish(
                summary={
                    "split": episode.split,
                    "seed": episode.seed,
                    "steps": episode.step_count,
                    "reward": breakdown.reward,
                    "reward_breakdown": breakdown.model_dump(mode="json"),
                    "files_changed": sorted(changes),
                },
                diff=diff,
                verification=verification_document(report) if report is not None else None,
            )
            episode.log = None
        logger.info(
            "episode %s done: reward %.3f (%s)", episode.episode_id, breakdown.reward, verdict
        )
        return reply

    async def _removed_routes(
        self, sandbox: Sandbox, baseline: frozenset[str] | None, deadline: float
    ) -> list[str]:
        """Routes of ``baseline`` (the original app's) the episode's app no longer serves, by
        the grading deadline (best effort); then the episode's sandbox is released."""
        try:
            if baseline is None:
                return []
            async with asyncio.timeout_at(deadline):
                current = await _fetch_routes(sandbox)
            return sorted(baseline - current) if current is not None else []
        except TimeoutError:
            return []
        finally:
            await self.runtime.release_later(sandbox)

    def _log_step(self, episode: _Episode, raw: Any, reply: StepOutcome, started: float) -> None:
        if episode.log is not None:
            episode.log.step(
                index=episode.step_count,
                action=raw,
                observation=reply.wire()["observation"],
                ms=(time.perf_counter() - started) * 1000,
            )

    # -- teardown ----------------------------------------------------------------------------
    async def _abandon(self) -> None:
        episode, self._episode = self._episode, None
        if episode is None:
            return
        if episode.sandbox is not None:
            sandbox, episode.sandbox = episode.sandbox, None
            await self.runtime.releases.release(sandbox)
        if episode.log is not None:
            episode.log.close()
            episode.log = None


class _EndEpisode(Exception):
    """Raised inside a step when the episode cannot go on; the step grades it instead."""


def _diff(bundle: Bundle, changes: dict[str, str | None]) -> str:
    chunks: list[str] = []
    for path, content in sorted(changes.items()):
        before = bundle.workspace.get(path, b"").decode(errors="replace").splitlines(keepends=True)
        after = (content or "").splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(
                before,
                after,
                fromfile=f"a/{path}" if path in bundle.workspace else "/dev/null",
                tofile=f"b/{path}" if content is not None else "/dev/null",
            )
        )
    return "".join(chunks)
