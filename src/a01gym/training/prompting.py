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

from a01gym.env import briefing
from a01gym.training import toolenv

__all__ = [
    "SYSTEM_PROMPT",
    "chat_template",
    "episode_messages",
    "episode_tools",
    "prepare_tokenizer",
    "tool_schemas",
]

SYSTEM_PROMPT = (
    "You fix broken access control (OWASP A01) in a small FastAPI app. Call one tool per turn: "
    "read the code, reproduce the bug with http_request as different actors, fix it with "
    "edit_file, check with run_tests, then submit. Block every unauthorised access without "
    "breaking legitimate use."
)


@functools.cache
def tool_schemas() -> tuple[dict[str, Any], ...]:
    """JSON schemas of every tool (:class:`~a01gym.training.toolenv.A01ExpertToolEnv`'s), in
    TRL's order.

    TRL lists an environment's methods with ``inspect.getmembers`` (alphabetical) and builds each
    schema with ``transformers.utils.get_json_schema``; we do the same so prompts match.
    """
    from transformers.utils import get_json_schema

    methods = inspect.getmembers(toolenv.A01ExpertToolEnv, predicate=inspect.isfunction)
    return tuple(
        get_json_schema(method)
        for name, method in methods
        if name not in ("reset", "get_reward") and not name.startswith("_")
    )


def episode_tools(*, expert: bool) -> list[dict[str, Any]]:
    """The tool schemas shown in one episode: ``ask_expert`` only where the episode offers it.

    Seen on Qwen2.5-Coder-0.5B zero-shot: offered ``ask_expert`` (first in TRL's alphabetical
    order) in a solo episode, it called it every turn and got ``expert_off`` every time.
    """
    return [s for s in tool_schemas() if expert or s["function"]["name"] != "ask_expert"]


def episode_messages(task: str) -> list[dict[str, Any]]:
    """The opening messages of an episode whose reset observation said ``task`` (the tools
    come as schemas, so the task's own section on the wire's JSON actions is left out)."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": briefing.without_wire_tools(task)},
    ]


def chat_template() -> str:
    """The chat layout every model is trained and evaluated with: TRL's shipped
    ``qwen2_5.jinja`` (tools in the system turn, calls in ``<tool_call>`` tags, results in
    ``<tool_response>``), read from the installed ``trl``.

    Why one layout for every model: SmolLM2-135M-Instruct's own template silently drops
    ``tools`` (the model would never see a tool schema), and a warm start only transfers when SFT,
    GRPO and eval render byte-identical prompts. Why TRL's exact text: TRL recognises templates
    by text, to parse tool calls (``environment_factory``) and to swap in its training variant
    with ``{% generation %}`` markers (``assistant_only_loss``). Qwen2.5 and SmolLM2 both speak
    ChatML, so the layout is one they know.
    """
    from importlib import resources

    return (resources.files("trl") / "chat_templates" / "qwen2_5.jinja").read_text()


def prepare_tokenizer(tokenizer: Any) -> Any:
    """Give a ChatML tokenizer :func:`chat_template`, with the end of a turn as its end token
    (generation stops there). Other tokenizers keep their template, which must render tools.
    """
    vocab = tokenizer.get_vocab()
    if "<|im_start|>" not in vocab or "<|im_end|>" not in vocab:
        return tokenizer
    tokenizer.chat_template = chat_template()
    tokenizer.eos_token = "<|im_end|>"
    if tokenizer.pad_token is None or tokenizer.pad_token == tokenizer.eos_token:
        tokenizer.pad_token = "<|endoftext|>" if "<|endoftext|>" in vocab else tokenizer.eos_token
    return tokenizer
