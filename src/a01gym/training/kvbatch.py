"""Multi-turn generation for a batch of episodes on one key/value cache kept across turns.

Why: on CPU both halves of a turn were paying for something they did not need.

* **Prefill**: re-running each episode's whole context every turn (a 2.3k-token prompt, then
  more with every tool output) is quadratic in turns; keeping the cache, a turn feeds only what
  was added since the rollout's last reply (the tool output and chat markup around it). The
  prompt's part that every row shares (system turn and tool schemas; the whole prompt within a
  GRPO group) runs once, and its cache is repeated for the rows.
* **Decode**: a decode step of a small model on CPU reads every weight once whatever the batch
  (SmolLM2-135M in float32: ~110-145 ms a token at batch 1 on our 2-core machines, ``python
  /tmp`` probe in the learning issue's notes), so the rows decode together in one step.

``transformers``' ``generate`` does either, not both: per-row caches of different lengths cannot
be batched through it. :class:`KVBatch` keeps one batched cache whose slots the rows fill at
their own pace: a row's new tokens are left-padded to the chunk's width, padding and any token
that no longer belongs to the row (a reply cut by the token budget) are masked out of attention
(mask 0), and each row's positions count only its own tokens, so what a row attends to, and at
which rotary positions, is exactly its own sequence. ``bench/generation.py`` measures it against
re-prefilling, same model and episodes, same run; ``tests/training/test_kvbatch.py``
checks that greedy replies equal ``generate`` on each row alone.

The cache is preallocated (transformers' ``StaticCache``, grown by :data:`GROW` slots when a
turn needs more), not ``DynamicCache``: a dynamic cache concatenates every row's whole cache on
every decode step (~100 MB a row at 2.3k tokens for SmolLM2), so a step's cost grew with the
batch; a static one writes the new slot in place and attention reads the rest. Measured on
SmolLM2-135M, 2.3k-token rows, one core and one thread, same process (``/tmp`` probe of the
learning issue, 2026-11-28): 2,013 against 570 ms a decode step at 12 rows, 171 against 116 ms
at one row, logits equal within 4e-5. Models whose layers are not all plain full attention
(sliding windows, linear attention) keep the dynamic cache.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["GROW", "KVBatch"]

GROW = 512  # slots added to a static cache each time a turn outgrows it


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _all_full_attention(model: Any) -> bool:
    """Whether every layer of ``model`` caches plain full attention (a static cache fits)."""
    from transformers import StaticCache
    from transformers.cache_utils import StaticLayer

    layers = StaticCache(config=model.config, max_cache_len=1).layers
    return all(type(layer) is StaticLayer for layer in layers)


@dataclasses.dataclass
class _Row:
    key: Any  # the rollout the row belongs to
    fed: list[int] = dataclasses.field(default_factory=list)  # tokens in the cache, in order
    slots: list[int] = dataclasses.field(default_factory=list)  # their cache slots


class KVBatch:
    """The cache of the rows of one batch of rollouts (``keys``: the rollouts, in order; a
    later turn may pass fewer of them, in the same order, when some have finished).

    Args:
        model: A causal LM in eval mode.
        pad_id: A token to fill masked slots with.
        eos_id: The token that ends a reply.
    """

    def __init__(self, model: Any, keys: list[Any], *, pad_id: int, eos_id: int) -> None:
        self.model = model
        self.rows = [_Row(key) for key in keys]
        self.pad_id = pad_id
        self.eos_id = eos_id
        self.cache: Any = None
        self.capacity = 0  # slots the static cache holds (0: not allocated, or dynamic)
        self.static = _all_full_attention(model)
        self.mask: Any = None  # (rows, slots used) long: 1 where the slot is the row's token
        self.prefilled = 0
        self.generated = 0

    def _keep(self, keys: list[Any]) -> None:
        import torch

        wanted = {id(key) for key in keys}
        keep = [i for i, row in enumerate(self.rows) if id(row.key) in wanted]
        if len(keep) == len(self.rows):
            return
        self.rows = [self.rows[i] for i in keep]
        if self.cache is not None:
            if self.static:
                for layer in self.cache.layers:
                    layer.keys, layer.values = layer.keys[keep], layer.values[keep]
            else:
                self.cache.batch_select_indices(torch.tensor(keep))
            self.mask = self.mask[keep]

    def _repeat(self, rows: int) -> None:
        """The batch-1 cache of the shared prefix, repeated for ``rows`` rows."""
        if not self.static:
            self.cache.batch_repeat_interleave(rows)
            return
        for layer in self.cache.layers:
            layer.keys = layer.keys.repeat_interleave(rows, dim=0)
            layer.values = layer.values.repeat_interleave(rows, dim=0)

    def _grow(self, needed: int) -> None:
        """A static cache with room for ``needed`` slots (and :data:`GROW` more), holding the
        slots used so far."""
        from transformers import StaticCache

        used = 0 if self.mask is None else self.mask.shape[1]
        capacity = needed + GROW
        cache = StaticCache(config=self.model.config, max_cache_len=capacity)
        if used:
            for fresh, layer in zip(cache.layers, self.cache.layers, strict=True):
                fresh.lazy_initialization(layer.keys, layer.values)
                fresh.keys[:, :, :used] = layer.keys[:, :, :used]
                fresh.values[:, :, :used] = layer.values[:, :, :used]
                fresh.cumulative_length.fill_(used)
        self.cache, self.capacity = cache, capacity

    def _forward(self, ids: Any, chunk_mask: Any, positions: Any) -> Any:
        import torch

        device = self.model.device
        ids, chunk_mask, positions = ids.to(device), chunk_mask.to(device), positions.to(device)
        used = 0 if self.mask is None else self.mask.shape[1]
        mask = chunk_mask if self.mask is None else torch.cat([self.mask, chunk_mask], dim=1)
        extra: dict[str, Any] = {"attention_mask": mask}
        if self.static:
            width = ids.shape[1]
            if used + width > self.capacity:
                self._grow(used + width)
            # attention covers every slot of the cache; the ones not yet written are masked out
            extra["attention_mask"] = torch.nn.functional.pad(
                mask, (0, self.capacity - used - width)
            )
        output = self.model(
            input_ids=ids,
            position_ids=positions,
            past_key_values=self.cache,
            use_cache=True,
            **extra,
        )
        self.cache = output.past_key_values
        self.mask = mask
        return output.logits[:, -1, :]

    def _shared_prefix(self, sequences: list[list[int]]) -> None:
        """Run the prefix every row shares once, and repeat its cache for the rows."""
        import torch

        first = sequences[0]
        shared = min(len(s) for s in sequences) - 1
        for sequence in sequences[1:]:
            shared = min(shared, _common_prefix(first, sequence))
        if shared <= 0:
            return
        ids = torch.tensor([first[:shared]])
        self.mask = None
        self._forward(ids, torch.ones_like(ids), torch.arange(shared).unsqueeze(0))
        self.prefilled += shared
        if len(self.rows) > 1:
            self._repeat(len(self.rows))
        self.mask = torch.ones(len(self.rows), shared, dtype=torch.long, device=self.model.device)
        for row in self.rows:
            row.fed, row.slots = list(first[:shared]), list(range(shared))

    def _prefill(self, sequences: list[list[int]]) -> Any:
        """Feed every row what its cache lacks (at least one token); returns last logits."""
        import torch

        chunks = []
        for i, (row, sequence) in enumerate(zip(self.rows, sequences, strict=True)):
            keep = min(_common_prefix(row.fed, sequence), len(sequence) - 1)
            if keep < len(row.fed):  # tokens the row no longer has: out of attention
                self.mask[i, row.slots[keep:]] = 0
                del row.fed[keep:], row.slots[keep:]
            chunks.append(sequence[keep:])
        width = max(len(chunk) for chunk in chunks)
        start = 0 if self.mask is None else self.mask.shape[1]
        ids, chunk_mask, positions = [], [], []
        for row, chunk in zip(self.rows, chunks, strict=True):
            pad = width - len(chunk)
            ids.append([self.pad_id] * pad + chunk)
            chunk_mask.append([0] * pad + [1] * len(chunk))
            base = len(row.fed)
            positions.append([0] * pad + list(range(base, base + len(chunk))))
            row.fed += chunk
            row.slots += range(start + pad, start + width)
            self.prefilled += len(chunk)
        return self._forward(torch.tensor(ids), torch.tensor(chunk_mask), torch.tensor(positions))

    def _choose(self, logits: Any, temperature: float) -> list[int]:
        import torch

        if temperature <= 0:
            return logits.argmax(dim=-1).tolist()
        probabilities = torch.softmax(logits.float() / temperature, dim=-1)
        return torch.multinomial(probabilities, 1).squeeze(1).tolist()

    def turn(
        self,
        keys: list[Any],
        sequences: list[list[int]],
        limits: list[int],
        *,
        temperature: float,
    ) -> list[list[int]]:
        """One reply per row: ``sequences`` are the rows' whole token lists now, ``limits``
        their new-token caps. A reply ends with the end token or at its cap."""
        import torch

        self._keep(keys)
        if self.cache is None:
            self._shared_prefix(sequences)
        logits = self._prefill(sequences)
        replies: list[list[int]] = [[] for _ in self.rows]
        open_rows = [limit > 0 for limit in limits]
        while True:
            chosen = self._choose(logits, temperature)
            for i, token in enumerate(chosen):
                if open_rows[i]:
                    replies[i].append(token)
                    if token == self.eos_id or len(replies[i]) >= limits[i]:
                        open_rows[i] = False
            if not any(open_rows):
                break
            # Every row steps together; a closed row's slot is padding, out of attention.
            slot = self.mask.shape[1]
            ids, step_mask, positions = [], [], []
            for i, row in enumerate(self.rows):
                if open_rows[i]:
                    ids.append(chosen[i])
                    step_mask.append(1)
                    positions.append(len(row.fed))
                    row.fed.append(chosen[i])
                    row.slots.append(slot)
                else:
                    ids.append(self.pad_id)
                    step_mask.append(0)
                    positions.append(0)
            logits = self._forward(
                torch.tensor(ids).unsqueeze(1),
                torch.tensor(step_mask).unsqueeze(1),
                torch.tensor(positions).unsqueeze(1),
            )
        self.generated += sum(len(reply) for reply in replies)
        return replies
