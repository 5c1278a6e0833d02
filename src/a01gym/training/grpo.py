"""GRPO + LoRA over a gateway: dataset, trainer, metrics, and what lands in the run directory.

The reward is the environment's terminal reward (``security × regression`` minus penalties,
computed by the gateway's hidden verifier); security, regression, resolution, invalid actions,
episode length and per-family rates are logged beside it as metrics, never mixed into it. With
``expert.enabled``, an :class:`~a01gym.training.expertratio.ExpertRatio` lets a fading share of
each group ask the expert, the GRPO reward adds the gateway's expert shaping total (unless
``expert.shaping_in_reward`` is off), and the step log records solo vs assisted resolution, the
expert-call rate, the shaping and the ratio's phase.

Run directory::

    config.yaml      the resolved config        metrics.jsonl   one row per GRPO step
    adapter/         LoRA adapter + tokenizer   rollouts.jsonl  every rollout, with its chat
    adapter/README.md  model card              trackio/        Trackio's local store

Which rollout path, and why: see :mod:`a01gym.training.rollout` (``rollout.path: parallel``, the
default) and :mod:`a01gym.training.toolenv` (``rollout.path: trl``, TRL's environment_factory
loop, which is what vLLM generation uses).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml

from a01gym.training import config as train_config
from a01gym.training import models, policies, prefixforward, prompting, steplog, toolenv, trlkit
from a01gym.training import rollout as rollouts
from a01gym.training.expertratio import ExpertRatio

__all__ = [
    "build_dataset",
    "environment_reward",
    "group_sizes",
    "make_rollout_func",
    "train",
]

logger = logging.getLogger(__name__)


def build_dataset(cfg: train_config.TrainConfig) -> Any:
    """One row per episode seed; rows carry the reset arguments (see ``rollout.row_prompt``)."""
    from datasets import Dataset

    rows = []
    families = cfg.data.families or [None]
    for offset in range(cfg.data.seeds):
        row: dict[str, Any] = {
            "seed": cfg.data.seed_start + offset,
            "split": cfg.data.split,
            "agent": "grpo",
        }
        family = families[offset % len(families)]
        if family:
            row["family"] = family
        if cfg.data.difficulty:
            row["difficulty"] = cfg.data.difficulty
        if cfg.data.scenarios:
            row["scenario"] = cfg.data.scenarios[offset % len(cfg.data.scenarios)]
        # Our rollout_func builds the real prompt from the reset observation; TRL's own loop
        # appends reset()'s task to this prompt's last user message instead.
        prompt = (
            rollouts.row_prompt(row)
            if cfg.rollout.path == train_config.RolloutPath.PARALLEL
            else prompting.episode_messages("")
        )
        rows.append({"prompt": prompt, **row})
    return Dataset.from_list(rows)


def group_sizes(rows: list[dict[str, Any]]) -> list[int]:
    """Lengths of the runs of equal consecutive rows: TRL repeats each prompt
    ``num_generations`` times in a row, so these are the GRPO groups."""
    sizes: list[int] = []
    for index, row in enumerate(rows):
        if index and row == rows[index - 1]:
            sizes[-1] += 1
        else:
            sizes.append(1)
    return sizes


def environment_reward(**kwargs: Any) -> list[float]:
    """The environment's terminal reward, passed through unchanged; logs its components."""
    log_metric = kwargs["log_metric"]
    metrics = kwargs["a01gym_metrics"][0]
    for name, value in metrics.items():
        log_metric(name, value)
    return [float(r) for r in kwargs["env_reward"]]


def make_rollout_func(
    engine: rollouts.RolloutEngine,
    log: steplog.StepLog,
    settings: train_config.RolloutSettings,
    ratio: ExpertRatio | None = None,
    *,
    shaping_in_reward: bool = False,
) -> Any:
    """TRL ``rollout_func``: plays the batch in parallel and returns tokens, masks, rewards.

    With ``ratio``, each group's first rollouts may ask the expert (the rest are solo) and the
    outcomes move the ratio's phase; ``shaping_in_reward`` adds each episode's shaping total.
    """

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        rows = [rollouts.row_from_prompt(prompt) for prompt in prompts]
        flags = ratio.assign(group_sizes(rows)) if ratio is not None else [False] * len(rows)
        rows = [{**row, "expert": flag} for row, flag in zip(rows, flags, strict=True)]
        model = trainer.accelerator.unwrap_model(trainer.model)
        policy = policies.ModelPolicy(
            model,
            engine.tokenizer,
            max_new_tokens=settings.max_new_tokens,
            temperature=settings.temperature,
        )
        batch = engine.play(policy, rows)
        snapshot = None
        if ratio is not None:
            snapshot = ratio.snapshot()  # the phase these rollouts ran in
            ratio.observe(
                (r.session.expert_allowed, bool((r.session.breakdown or {}).get("resolved")))
                for r in batch.rollouts
            )
        row = log.add(batch, snapshot)
        flat = steplog.flat_metrics(row)
        rewards = [float(r.session.reward or 0.0) for r in batch.rollouts]
        if shaping_in_reward:
            shaping = [float(r.session.shaping.get("total", 0.0)) for r in batch.rollouts]
            rewards = [reward + extra for reward, extra in zip(rewards, shaping, strict=True)]
        return {
            "prompt_ids": [r.prompt_ids for r in batch.rollouts],
            "completion_ids": [r.completion_ids for r in batch.rollouts],
            "env_mask": [r.env_mask for r in batch.rollouts],
            "logprobs": None,
            "env_reward": rewards,
            "a01gym_metrics": [flat] * len(batch.rollouts),
        }

    return rollout_func


def _grpo_args(cfg: train_config.TrainConfig, out: Path) -> Any:
    from trl import GRPOConfig

    defaults: dict[str, Any] = {
        "output_dir": str(out / "checkpoints"),
        "per_device_train_batch_size": 4,
        "num_generations": 2,
        "max_steps": 2,
        "learning_rate": 1e-4,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "trackio",
        "project": cfg.trackio.project,
        "run_name": cfg.trackio.run_name or out.name,
        "seed": cfg.seed,
        "disable_tqdm": True,
        "activation_checkpointing": False,
        "max_completion_length": cfg.rollout.max_completion_tokens,
        "temperature": max(cfg.rollout.temperature, 1e-3),
    }
    defaults.update(trlkit.machine_defaults())
    if cfg.generation != train_config.GenerationBackend.TRANSFORMERS:
        defaults.update(use_vllm=True, vllm_mode=cfg.generation.value.removeprefix("vllm-"))
        if cfg.vllm_server_url:
            defaults["vllm_server_base_url"] = cfg.vllm_server_url
    if cfg.rollout.path == train_config.RolloutPath.TRL:
        defaults["max_tool_calling_iterations"] = cfg.rollout.max_turns
    return GRPOConfig(**{**defaults, **cfg.grpo})


def write_model_card(
    out: Path, cfg: train_config.TrainConfig, base: str, log: steplog.StepLog
) -> None:
    last = log.rows[-1] if log.rows else {}
    card = f"""---
library_name: peft
base_model: {base}
tags: [a01gym, grpo, lora, trl, access-control]
---
# a01gym GRPO LoRA adapter

Trained with `a01gym train` (TRL GRPO + peft LoRA) on the a01gym environment: an agent finds and
fixes broken access control (OWASP A01) in small FastAPI apps, rewarded only by the environment's
hidden verifier (security x regression, minus penalties).

- base model: `{base}`
- scenarios: split `{cfg.data.split}`, families {cfg.data.families or "all"}, \
difficulty {cfg.data.difficulty or "all"}, {cfg.data.seeds} seeds from {cfg.data.seed_start}
- LoRA: r={cfg.lora.r}, alpha={cfg.lora.alpha}, modules {", ".join(cfg.lora.target_modules)}
- GRPO steps logged: {len(log.rows)}; last step mean reward {last.get("reward_mean", "n/a")}

Evaluate it on the held-out split with
`a01gym eval --model {base} --adapter <this directory> --split eval`.
"""
    (out / "README.md").write_text(card, encoding="utf-8")


def train(cfg: train_config.TrainConfig, *, model_path: str, gateway_url: str) -> Path:
    """Run GRPO + LoRA and save the adapter; returns the run directory.

    ``TRACKIO_DIR`` must be set (by the caller) before ``trl`` is first imported: Trackio reads
    it at import time.
    """
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = cfg.output_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.resolved(), sort_keys=False))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    model_path = models.resolve_model(model_path, field="model")
    tokenizer = prompting.prepare_tokenizer(AutoTokenizer.from_pretrained(model_path))
    model = AutoModelForCausalLM.from_pretrained(model_path)
    args = _grpo_args(cfg, out)
    lora = LoraConfig(
        r=cfg.lora.r,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.lora.target_modules,
        task_type="CAUSAL_LM",
    )
    log = steplog.StepLog(out)
    ratio = ExpertRatio(cfg.expert) if cfg.expert.enabled else None
    shaping_in_reward = cfg.expert.enabled and cfg.expert.shaping_in_reward
    engine = None
    common: dict[str, Any] = {
        "model": model,
        "args": args,
        "train_dataset": build_dataset(cfg),
        "processing_class": tokenizer,
        "peft_config": lora,
        "callbacks": [steplog.step_end_callback(log), trlkit.learning_signal()],
    }
    if cfg.rollout.path == train_config.RolloutPath.PARALLEL:
        engine = rollouts.RolloutEngine(
            tokenizer,
            gateway_url,
            max_turns=cfg.rollout.max_turns,
            max_completion_tokens=cfg.rollout.max_completion_tokens,
            max_output_chars=cfg.rollout.max_output_chars,
        )
        trainer = prefixforward.grpo_trainer_class()(
            reward_funcs=[environment_reward],
            rollout_func=make_rollout_func(
                engine, log, cfg.rollout, ratio, shaping_in_reward=shaping_in_reward
            ),
            **common,
        )
    else:
        env_class = toolenv.A01ExpertToolEnv if ratio is not None else toolenv.A01ToolEnv
        env_class.configure(
            gateway_url,
            expert_ratio=ratio,
            group_size=int(args.num_generations),
            shaping_in_reward=shaping_in_reward,
            max_output_chars=cfg.rollout.max_output_chars,
        )
        trainer = prefixforward.grpo_trainer_class()(
            reward_funcs=None, environment_factory=env_class, **common
        )
    try:
        trainer.train()
    finally:
        log.close()
        if engine is not None:
            engine.close()
    adapter = out / "adapter"
    trainer.save_model(str(adapter))
    tokenizer.save_pretrained(adapter)
    write_model_card(adapter, cfg, model_path, log)
    return out
