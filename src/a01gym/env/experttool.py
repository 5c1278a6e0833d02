"""The ``ask_expert`` tool: the per-episode budget, the question, the answer as an observation.

An episode offers the expert only when its reset asked for it (or the gateway's
``expert.enabled`` says so). A question builds its prompt from what the agent may see
(:mod:`a01gym.env.expertprompt`) and sends it through the runtime's
:class:`~a01gym.env.expert.ExpertService`. Each answered question uses one of the episode's
``expert.max_calls``; a failed one (endpoint down, timeout, bad reply) does not, and comes back
as an ``expert_unavailable`` error observation saying so and what to do. None of these codes
count as invalid actions: whether to ask is the agent's choice, and the reward must not depend
on the expert being offered.

The observation's ``result`` carries the call's ``outcome``, ``seconds`` and token counts, which
the gateway turns into Prometheus metrics (``a01gym_expert_*``).
"""

from __future__ import annotations

from a01gym.env import expertprompt, models, tools
from a01gym.env.episode import Episode, ExpertCall
from a01gym.env.runtime import EnvRuntime

__all__ = ["ask_expert", "briefing_note"]


def briefing_note(calls: int) -> str:
    """The line the reset observation adds when the episode offers the expert."""
    return (
        f"## Expert\nThis episode offers ask_expert: up to {calls} questions to a stronger "
        "model that sees what you see (task, files, visible tests, your steps). Explore first; "
        'ask when you are stuck. {"tool":"ask_expert","question":"<what you need>"}'
    )


def _call(episode: Episode, answered: bool) -> ExpertCall:
    explored = sum(1 for h in episode.history if h["tool"] != "ask_expert")
    previous = episode.history[-1] if episode.history else None
    return ExpertCall(
        step=episode.step_count,
        explored_steps=explored,
        after_error=bool(previous and previous["error"]),
        steps_since_change=episode.step_count - 1 - episode.last_change_step,
        answered=answered,
    )


async def ask_expert(
    runtime: EnvRuntime, episode: Episode, action: models.AskExpert
) -> tools.ToolOutcome:
    """Answer one question, or say why not (never raises for the expert's failures)."""
    if not episode.expert_enabled or runtime.expert is None:
        return tools.ToolOutcome.fail(
            models.ErrorCode.EXPERT_OFF,
            "this episode does not offer the expert; solve it with the other tools",
            {"outcome": "off"},
        )
    if episode.expert_calls_left == 0:
        return tools.ToolOutcome.fail(
            models.ErrorCode.EXPERT_BUDGET,
            f"all {episode.expert_calls_allowed} expert questions of this episode are used; "
            "carry on with the other tools",
            {"outcome": "budget", "calls_left": 0},
        )
    messages = expertprompt.expert_messages(
        episode, action.question, max_chars=runtime.expert_settings.max_prompt_chars
    )
    reply = await runtime.expert.ask(messages)
    episode.expert_calls.append(_call(episode, reply.ok))
    result = {
        "outcome": reply.outcome.value,
        "seconds": round(reply.seconds, 4),
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "calls_left": episode.expert_calls_left,
    }
    if not reply.ok:
        return tools.ToolOutcome.fail(
            models.ErrorCode.EXPERT_UNAVAILABLE,
            f"{reply.message}. This question did not use up one of your "
            f"{episode.expert_calls_left} expert questions; carry on with the other tools, "
            "or ask again later",
            result,
        )
    left = episode.expert_calls_left
    return tools.ToolOutcome(
        f"Expert ({left} question{'s' if left != 1 else ''} left):\n{reply.answer}",
        {**result, "answer": reply.answer},
    )
