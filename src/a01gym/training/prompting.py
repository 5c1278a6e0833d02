"""What a model is shown: the system prompt, the tool schemas and the chat layout of an episode.

One module so that every path renders episodes identically: GRPO rollouts
(:mod:`a01gym.training.rollout`), SFT data exported from logs (:mod:`a01gym.training.trajectories`)
and model agents in eval. A warm-started model only transfers if it sees byte-identical prompts.

An episode as chat messages::

    system     SYSTEM_PROMPT
    user       the reset observation's output (task, policy, files, actors)
    assistant  one tool call            ← trained (env_mask 1)
    tool       the rendered observation ← masked (env_mask 0)
    …          until the ``submit`` call, which ends the episode
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from a01gym.training import toolenv

__all__ = ["SYSTEM_PROMPT", "episode_messages", "tool_schemas"]

SYSTEM_PROMPT = (
    "You fix broken access control (OWASP A01) in a small FastAPI app. Call one tool per turn: "
    "read the code, reproduce the bug with http_request as different actors, fix it with "
    "edit_file, check with run_tests, then submit. Block every unauthorised access without "
    "breaking legitimate use."
)


@functools.cache
def tool_schemas() -> tuple[dict[str, Any], ...]:
    """JSON schemas of :class:`~a01gym.training.toolenv.A01ToolEnv`'s tools, in TRL's order.

    TRL lists an environment's methods with ``inspect.getmembers`` (alphabetical) and builds each
    schema with ``transformers.utils.get_json_schema``; we do the same so prompts match.
    """
    from transformers.utils import get_json_schema

    methods = inspect.getmembers(toolenv.A01ToolEnv, predicate=inspect.isfunction)
    return tuple(
        get_json_schema(method)
        for name, method in methods
        if name not in ("reset", "get_reward") and not name.startswith("_")
    )


def episode_messages(task: str) -> list[dict[str, Any]]:
    """The opening messages of an episode whose reset observation said ``task``."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task},
    ]
