"""Who chooses a rollout's next turn: the :class:`Policy` protocol and the model that does.

:class:`~a01gym.training.rollout.RolloutEngine` plays episodes and asks a policy, once a turn,
for every active rollout's next reply as tokens; :class:`ModelPolicy` is a causal LM doing that
in one batch (keeping the batch's key/value cache across turns, :mod:`a01gym.training.kvbatch`),
and tests and benchmarks plug in scripted ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from a01gym.training import kvbatch

if TYPE_CHECKING:
    from a01gym.training.rollout import Rollout

__all__ = ["ModelPolicy", "Policy"]


class Policy(Protocol):
    """Chooses each active rollout's next turn as tokens (``rooms``: tokens each may still use)."""

    def reply(self, active: list[Rollout], rooms: list[int]) -> list[list[int]]: ...


class ModelPolicy:
    """A causal LM choosing each active rollout's next turn.

    With ``kv_cache`` (the default), the batch keeps its key/value cache across turns
    (:mod:`a01gym.training.kvbatch`): a turn prefills only what was added since each rollout's
    last reply, the shared prompt prefix runs once, and the rows decode together. Without it,
    every turn re-prefills every rollout's whole context in one left-padded ``generate``, as this
    path did before. ``bench/generation.py`` measures both on the same model and episodes.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        kv_cache: bool = True,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.kv_cache = kv_cache
        self.prefilled_tokens = 0
        self.generated_tokens = 0

    def _sampling(self) -> dict[str, Any]:
        if self.temperature <= 0:
            return {"do_sample": False}
        return {"do_sample": True, "temperature": self.temperature, "top_k": 0}

    def _special_ids(self) -> tuple[int, int]:
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id
        return eos, eos if pad is None else pad

    def reply(self, active: list[Rollout], rooms: list[int]) -> list[list[int]]:
        import torch

        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                if self.kv_cache:
                    return self._reply_cached(active, rooms)
                return self._reply_batched(active, rooms)
        finally:
            if was_training:
                self.model.train()

    def _cut(self, tokens: list[int]) -> list[int]:
        eos, pad = self._special_ids()
        tokens = tokens[: tokens.index(eos) + 1] if eos in tokens else tokens
        return [t for t in tokens if t != pad or t == eos]

    def _reply_cached(self, active: list[Rollout], rooms: list[int]) -> list[list[int]]:
        """One turn for every rollout on the batch's kept cache (:mod:`kvbatch`)."""
        eos, pad = self._special_ids()
        batch = active[0].kv
        if batch is None or any(r.kv is not batch for r in active):
            batch = kvbatch.KVBatch(self.model, list(active), pad_id=pad, eos_id=eos)
            for rollout in active:
                rollout.kv = batch
        before = batch.prefilled, batch.generated
        replies = batch.turn(
            list(active),
            [r.prompt_ids + r.completion_ids for r in active],
            [max(1, min(self.max_new_tokens, room)) for room in rooms],
            temperature=self.temperature,
        )
        self.prefilled_tokens += batch.prefilled - before[0]
        self.generated_tokens += batch.generated - before[1]
        return [self._cut(reply) for reply in replies]

    def _reply_batched(self, active: list[Rollout], rooms: list[int]) -> list[list[int]]:
        """One turn for every rollout in one left-padded ``generate`` (whole context each time)."""
        import torch

        eos, pad = self._special_ids()
        sequences = [r.prompt_ids + r.completion_ids for r in active]
        width = max(len(s) for s in sequences)
        self.prefilled_tokens += sum(len(s) for s in sequences)
        device = self.model.device
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in sequences], device=device)
        attention = torch.tensor(
            [[0] * (width - len(s)) + [1] * len(s) for s in sequences], device=device
        )
        output = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            max_new_tokens=max(1, min(self.max_new_tokens, max(rooms))),
            eos_token_id=eos,
            pad_token_id=pad,
            **self._sampling(),
        )
        replies = [self._cut(row) for row in output[:, width:].tolist()]
        self.generated_tokens += sum(len(r) for r in replies)
        return replies
