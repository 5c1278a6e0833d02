"""What your own TRL script needs around :class:`~a01gym.training.toolenv.A01ToolEnv`.

``docs/training.md`` ("The environment in your own TRL script") builds a ``GRPOTrainer`` from
these, and ``tests/training/test_trl_snippet.py`` runs that snippet as printed. Each piece
exists because the plain TRL version failed a new user:

* :func:`grpo_config`: ``GRPOConfig`` refuses a CPU-only machine by default (``ValueError: Your
  setup doesn't support bf16/gpu``); this sets ``use_cpu`` and ``bf16`` from the machine, as
  ``a01gym train`` does;
* :func:`dataset`: rows whose prompt is our system prompt and an empty user turn, to which TRL
  appends the task ``reset`` returns, so the model sees exactly what ``a01gym train``, SFT data
  and eval show it (:func:`~a01gym.training.prompting.episode_messages`): a model warm-started by
  us transfers only with the same prompt;
* :func:`tokenizer`: the model's tokenizer with our chat layout
  (:func:`~a01gym.training.prompting.prepare_tokenizer`), for a hub id, directory or GGUF file;
* :func:`learning_signal`: a callback that warns, in the log and as a metric, when a step's
  groups all had zero reward variance (GRPO learns nothing from them) or no rollout called a
  tool (the model does not write calls in a form TRL parses). With a model that never calls a
  tool every reward is 0, the loss is 0, and without it nothing says why.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from a01gym.training import models, prompting

__all__ = ["dataset", "grpo_config", "learning_signal", "machine_defaults", "tokenizer"]

logger = logging.getLogger(__name__)


def machine_defaults() -> dict[str, Any]:
    """``GRPOConfig`` settings that follow the machine: CPU without bf16 where there is no GPU."""
    import torch

    return {} if torch.cuda.is_available() else {"use_cpu": True, "bf16": False}


def grpo_config(**settings: Any) -> Any:
    """A ``GRPOConfig`` that runs on this machine (``settings`` override everything)."""
    from trl import GRPOConfig

    defaults = {"logging_steps": 1, "report_to": "none", **machine_defaults()}
    return GRPOConfig(**{**defaults, **settings})


def dataset(seeds: Iterable[int], *, split: str = "train", **reset: Any) -> Any:
    """A ``datasets.Dataset`` of episodes (one row per seed; ``reset`` adds e.g. ``family``)."""
    from datasets import Dataset

    prompt = [
        {"role": "system", "content": prompting.SYSTEM_PROMPT},
        {"role": "user", "content": ""},  # TRL appends the task that reset() returns
    ]
    return Dataset.from_list(
        [{"prompt": prompt, "seed": seed, "split": split, **reset} for seed in seeds]
    )


def tokenizer(model: str) -> Any:
    """The tokenizer of ``model`` (hub id, directory or GGUF file) with our chat layout."""
    from transformers import AutoTokenizer

    return prompting.prepare_tokenizer(AutoTokenizer.from_pretrained(models.resolve_model(model)))


def _warn_zero_variance(logs: dict[str, Any], step: int) -> None:
    logs["a01gym/zero_variance_step"] = 1.0
    logger.warning(
        "step %s: every GRPO group had zero reward variance (reward %s), so this step cannot "
        "change the policy; raise the temperature or num_generations, or warm-start the model "
        "(a01gym export-trajectories, then SFT)",
        step,
        logs.get("reward"),
    )


def _warn_no_tools(logs: dict[str, Any], step: int) -> None:
    logs["a01gym/no_tool_calls_step"] = 1.0
    logger.warning(
        "step %s: no rollout called a tool; the model does not write tool calls TRL can parse "
        "(check the chat template: a01gym.training.trlkit.tokenizer), or needs a warm start",
        step,
    )


def learning_signal() -> Any:
    """A ``TrainerCallback`` that warns when a logged step carries no learning signal, and logs
    it as metrics: ``a01gym/zero_variance_step`` (every group's rewards were equal) and
    ``a01gym/no_tool_calls_step`` (no rollout called a tool). Its ``warnings`` counts both."""
    from transformers import TrainerCallback

    class LearningSignal(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.warnings = {"zero_variance": 0, "no_tool_calls": 0}

        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            if not logs:
                return
            if logs.get("frac_reward_zero_std") == 1.0:
                self.warnings["zero_variance"] += 1
                _warn_zero_variance(logs, state.global_step)
            if logs.get("tools/call_frequency") == 0:
                self.warnings["no_tool_calls"] += 1
                _warn_no_tools(logs, state.global_step)

    return LearningSignal()
