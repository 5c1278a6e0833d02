"""GRPO's training forward with each shared prompt prefix computed once (same gradients, less work).

TRL scores a batch by running every row's full prompt + completion through the model. In a GRPO
batch the rows are groups of ``num_generations`` completions of one prompt, and every prompt
starts with the same system turn and tool schemas: on the rollout benchmark 76 % of each row is
prompt (1,904 of 2,504 tokens) and most of that is shared by all rows. Here the batch's common
prompt prefix runs once, each group's rest of the prompt once, and only the completions run per
row, on the prompt's key/value cache repeated across the group. Autograd flows through the
repeated cache, so the log-probabilities, entropies and gradients are TRL's (up to float
summation order: ``tests/training/test_prefix_forward.py`` compares them), at about a quarter of
TRL's training forward/backward time on CPU (2.3 s -> 0.5 s per bench step). The LM head runs
on completion positions only (on CPU, TRL's fused head scores every prompt position too),
through TRL's fused head, or from the materialised logits when they are small (a tiny model's
vocabulary), which is faster on CPU.

The trainer falls back to TRL's own forward for anything this does not cover: multimodal inputs,
MoE auxiliary losses, caches that are not plain full-attention layers (sliding windows, linear
attention), and prompts that are not left-padded.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["DENSE_LOGITS_LIMIT", "grpo_trainer_class", "shared_prefix_logps"]

DENSE_LOGITS_LIMIT = 1 << 24
"""Logits (rows x tokens x vocabulary) a group may materialise (64 MB in float32): a tiny model's
groups fit, a real vocabulary's go through TRL's fused head."""


def _common_prefix(prompts: list[list[int]]) -> int:
    """Tokens every prompt starts with, leaving each prompt at least its last token."""
    limit = min(len(p) for p in prompts) - 1
    first = prompts[0]
    for index in range(limit):
        if any(p[index] != first[index] for p in prompts[1:]):
            return index
    return max(limit, 0)


def _plain_cache(model: Any) -> bool:
    """Whether the model's cache is one full-attention key/value layer per layer (splittable)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    config = model.config if hasattr(model, "config") else model.get_base_model().config
    return all(type(layer) is DynamicLayer for layer in DynamicCache(config=config).layers)


def shared_prefix_logps(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    logits_to_keep: int,
    *,
    entropy: bool,
    temperature: float,
    dense_limit: int = DENSE_LOGITS_LIMIT,
) -> tuple[Any, Any] | None:
    """Per-token log-probabilities (and entropies) of the last ``logits_to_keep`` columns.

    ``input_ids`` are TRL's left-padded prompts followed by right-padded completions; the model
    must carry TRL's fused LM head, made with the same ``temperature``. A group whose logits
    have at most ``dense_limit`` elements is scored from them directly (faster than the fused
    head's tiles on CPU for a small vocabulary). Returns None when the batch is not in that shape.
    """
    import torch
    from transformers import DynamicCache
    from trl.trainer.utils import selective_log_softmax_and_entropy

    prompt_width = input_ids.size(1) - logits_to_keep
    prompt_mask = attention_mask[:, :prompt_width]
    lengths = prompt_mask.sum(dim=1).tolist()
    prompts: list[list[int]] = []
    for row, length in enumerate(lengths):
        if length == 0 or int(prompt_mask[row, prompt_width - length :].sum()) != length:
            return None  # not left-padded
        prompts.append(input_ids[row, prompt_width - length : prompt_width].tolist())
    groups: dict[tuple[int, ...], list[int]] = {}
    for row, prompt in enumerate(prompts):
        groups.setdefault(tuple(prompt), []).append(row)

    shared = _common_prefix([list(p) for p in groups])
    prefix_kv: list[tuple[Any, Any]] = []
    if shared:
        prefix = model(
            input_ids=input_ids[:1, prompt_width - lengths[0] : prompt_width - lengths[0] + shared],
            use_cache=True,
            logits_to_keep=1,
        ).past_key_values
        prefix_kv = [(layer.keys, layer.values) for layer in prefix.layers]

    completions = input_ids[:, prompt_width:]
    completion_mask = attention_mask[:, prompt_width:]
    parts: list[tuple[list[int], Any, Any]] = []
    for prompt, rows in groups.items():
        cache = DynamicCache(ddp_cache_data=prefix_kv) if prefix_kv else DynamicCache()
        rest = torch.tensor([prompt[shared:-1]], device=input_ids.device)
        if rest.size(1):
            model(input_ids=rest, past_key_values=cache, use_cache=True, logits_to_keep=1)
        cache.batch_repeat_interleave(len(rows))
        index = torch.tensor(rows, device=input_ids.device)
        last = torch.full((len(rows), 1), prompt[-1], device=input_ids.device)
        tokens = torch.cat([last, completions[index]], dim=1)
        labels = tokens.masked_fill(
            torch.cat([torch.zeros_like(last), completion_mask[index]], dim=1) == 0, -100
        )
        if tokens.numel() * model.config.vocab_size <= dense_limit:
            logits = model(input_ids=tokens, past_key_values=cache).logits[:, :-1]
            logps, entropies = selective_log_softmax_and_entropy(
                logits, tokens[:, 1:], temperature=temperature
            )
            scored = labels[:, 1:] != -100
            parts.append((rows, logps * scored, entropies * scored))
        else:
            out = model(input_ids=tokens, past_key_values=cache, labels=labels, fused_lm_head=True)
            parts.append((rows, out.log_probs, out.entropy))
    # Scatter once at the end: in-place writes per group would break autograd's version checks.
    order = [row for rows, _, _ in parts for row in rows]
    inverse = torch.empty(len(order), dtype=torch.long, device=input_ids.device)
    inverse[torch.tensor(order, device=input_ids.device)] = torch.arange(
        len(order), device=input_ids.device
    )
    logps = torch.cat([p[1] for p in parts])[inverse]
    entropies = torch.cat([p[2] for p in parts])[inverse] if entropy else None
    return logps, entropies


@functools.cache
def grpo_trainer_class() -> type:
    """TRL's ``GRPOTrainer`` with the shared-prefix forward (built on first use: trl is heavy)."""
    from trl import GRPOTrainer

    class PrefixSharingGRPOTrainer(GRPOTrainer):
        """TRL's GRPOTrainer whose policy forward shares prompt prefixes (see module docstring)."""

        def _get_per_token_logps_and_entropies(  # type: ignore[override]
            self,
            model: Any,
            input_ids: Any,
            attention_mask: Any,
            logits_to_keep: int,
            batch_size: int | None = None,
            compute_entropy: bool = False,
            compute_aux_loss: bool = False,
            **multimodal: Any,
        ) -> tuple[Any, Any, Any]:
            plain = not compute_aux_loss and all(v is None for v in multimodal.values())
            if plain and _plain_cache(model):
                with self.accelerator.autocast():
                    result = shared_prefix_logps(
                        model,
                        input_ids,
                        attention_mask,
                        logits_to_keep,
                        entropy=compute_entropy,
                        temperature=self.temperature,
                    )
                if result is not None:
                    return result[0], result[1], None
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
                compute_aux_loss=compute_aux_loss,
                **multimodal,
            )

    return PrefixSharingGRPOTrainer
