"""Warm start: TRL ``SFTTrainer`` on exported trajectories, before GRPO.

GRPO only learns from reward differences inside a group; a model that never emits a valid tool
call gets the same (penalised) reward on every rollout and no gradient at all. Users therefore
run SFT then RL: ``a01gym export-trajectories`` turns episode logs (any agent, typically the
scripted solver) into a chat dataset with tool calls, and :func:`warm_start` fine-tunes on it with
the loss on assistant turns only, then saves a plain model directory GRPO starts from (a LoRA
warm start is merged into the weights so the GRPO adapter sits on top of it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from a01gym.training import config as train_config
from a01gym.training import models, prompting

__all__ = ["warm_start"]

logger = logging.getLogger(__name__)


def _load_dataset(path: Path) -> Any:
    from datasets import load_from_disk

    dataset = load_from_disk(str(path))
    keep = [c for c in dataset.column_names if c in ("messages", "tools")]
    return dataset.select_columns(keep)


def warm_start(
    model_path: str, dataset_path: Path, out: Path, settings: train_config.SftSettings, *, seed: int
) -> Path:
    """Fine-tune ``model_path`` on ``dataset_path``; returns the directory of the tuned model."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    model_path = models.resolve_model(model_path, field="model")
    tokenizer = prompting.prepare_tokenizer(AutoTokenizer.from_pretrained(model_path))
    model = AutoModelForCausalLM.from_pretrained(model_path)
    cpu = not torch.cuda.is_available()
    args = SFTConfig(
        output_dir=str(out / "checkpoints"),
        num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.batch_size,
        max_length=settings.max_length,
        assistant_only_loss=True,
        logging_steps=5,
        save_strategy="no",
        report_to="none",
        seed=seed,
        disable_tqdm=True,
        activation_checkpointing=False,
        use_cpu=cpu,
        bf16=False,
    )
    peft_config = None
    if not settings.full:
        peft_config = LoraConfig(r=16, lora_alpha=32, task_type="CAUSAL_LM")
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=_load_dataset(dataset_path),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    result = trainer.train()
    logger.info("SFT warm start: loss %.4f", result.training_loss)
    tuned = trainer.model
    if peft_config is not None:
        tuned = tuned.merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    tuned.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "sft_loss.txt").write_text(f"{result.training_loss}\n")
    return out
