"""The terminal step: grade the episode, tell the agent its reward, close the episode's log.

``submit``, the step budget running out, or a second lost sandbox ends an episode
(:mod:`a01gym.env.environment` decides which); :func:`finish` is the one way it ends graded.
It has :mod:`a01gym.env.grading` score the agent's changes, appends the verdict to the last
observation, which alone carries the reward and its breakdown, and writes the episode's
summary, diff and verification report to its log (:mod:`a01gym.env.logger`).
"""

from __future__ import annotations

import logging
from typing import Any

from a01gym.env import grading, models, tools
from a01gym.env.episode import Episode, StepOutcome
from a01gym.env.logger import verification_document
from a01gym.env.runtime import EnvRuntime

__all__ = ["finish"]

logger = logging.getLogger(__name__)


async def finish(
    runtime: EnvRuntime, episode: Episode, raw: Any, outcome: tools.ToolOutcome, started: float
) -> StepOutcome:
    """End ``episode`` on this step: grade it, answer with the reward, close its log.

    ``outcome`` is what the last step did (``submitted``, the last tool's result when the step
    budget ran out, or the loss of the sandbox); the verdict is appended to its text.
    """
    episode.done = True
    episode.phase = models.Phase.DONE
    await episode.stop_app_start()
    graded = await grading.grade(runtime, episode)
    breakdown = graded.breakdown
    episode.reward = breakdown.reward
    verdict = "resolved" if breakdown.resolved else "not resolved"
    outcome.output += (
        f"\n\nEpisode over: {verdict}. reward {breakdown.reward:.3f} "
        f"(security {breakdown.security:.2f}, regression {breakdown.regression:.2f})"
    )
    if breakdown.shaping.expert_offered:
        outcome.output += (
            f"; expert shaping {breakdown.shaping.total:+.3f} (reported apart, "
            "not part of the reward)"
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
    episode.log_step(raw, reply, started)
    if episode.log is not None:
        episode.log.finish(
            summary={
                "split": episode.split,
                "seed": episode.seed,
                "steps": episode.step_count,
                "reward": breakdown.reward,
                "reward_breakdown": breakdown.model_dump(mode="json"),
                "shaping": breakdown.shaping.model_dump(mode="json"),
                "files_changed": sorted(graded.changes),
            },
            diff=grading.unified_diff(episode.bundle, graded.changes),
            verification=verification_document(graded.report)
            if graded.report is not None
            else None,
        )
        episode.log = None
    logger.info("episode %s done: reward %.3f (%s)", episode.episode_id, breakdown.reward, verdict)
    return reply
