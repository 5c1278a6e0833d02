"""Batched multi-turn generation on a kept cache gives each row what ``generate`` gives it alone.

A small randomly initialised Qwen2 model is enough here (plumbing: attention masks, positions
and cache slots, not what the model says); the real models run the same path in
``test_real_models.py`` and ``bench/generation.py``.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def model():
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.5,  # sharp logits: a wrongly attended token changes the argmax
    )
    return Qwen2ForCausalLM(config).eval()


def _alone(model, sequence: list[int], limit: int) -> list[int]:
    import torch

    output = model.generate(
        torch.tensor([sequence]),
        max_new_tokens=limit,
        do_sample=False,
        eos_token_id=2,
        pad_token_id=0,
    )
    reply = output[0, len(sequence) :].tolist()
    return reply[: reply.index(2) + 1] if 2 in reply else reply


@pytest.mark.parametrize(
    ("static", "grow"),
    [(True, 512), (True, 5), (False, 512)],
    ids=["static", "static-growing-every-turn", "dynamic"],
)
def test_greedy_turns_match_each_row_generated_alone(model, monkeypatch, static, grow) -> None:
    """The preallocated cache (also when it must grow, keeping the slots it holds) and the
    dynamic one it falls back to for other attention layouts give the same replies."""
    import torch

    from a01gym.training import kvbatch

    monkeypatch.setattr(kvbatch, "GROW", grow)
    monkeypatch.setattr(kvbatch, "_all_full_attention", lambda model: static)
    generator = torch.Generator().manual_seed(1)

    def tokens(n: int) -> list[int]:
        return torch.randint(3, 64, (n,), generator=generator).tolist()

    shared = tokens(50)
    sequences = [shared + tokens(n) for n in (3, 20, 9)]
    rows = [object(), object(), object()]
    batch = kvbatch.KVBatch(model, rows, pad_id=0, eos_id=2)
    limits = [6, 9, 4]
    with torch.no_grad():
        for turn in range(3):
            keep = [0, 1, 2] if turn < 2 else [0, 2]  # row 1 finished its episode
            replies = batch.turn(
                [rows[i] for i in keep],
                [sequences[i] for i in keep],
                [limits[i] for i in keep],
                temperature=0.0,
            )
            for i, reply in zip(keep, replies, strict=True):
                assert reply == _alone(model, sequences[i], limits[i]), (turn, i)
            # Row 1's reply is cut short (a token budget) before its tool output: the cut tokens
            # are in the cache and must drop out of its attention.
            kept = {0: len(replies[0]), 1: 2, 2: len(replies[-1])}
            for i, reply in zip(keep, replies, strict=True):
                sequences[i] = sequences[i] + reply[: kept[i]] + tokens(7 + 5 * i)
    # the shared prefix ran once, not per row
    assert batch.prefilled < sum(len(s) for s in sequences)
    assert batch.static is static
    if static:
        assert batch.capacity >= batch.mask.shape[1]


def test_sampled_turns_stay_within_limits_and_stop_at_the_end_token(model) -> None:
    import torch

    from a01gym.training import kvbatch

    torch.manual_seed(3)
    rows = [object(), object()]
    batch = kvbatch.KVBatch(model, rows, pad_id=0, eos_id=2)
    with torch.no_grad():
        replies = batch.turn(rows, [[5, 6, 7], [8, 9]], [5, 12], temperature=1.0)
    for reply, limit in zip(replies, [5, 12], strict=True):
        assert 1 <= len(reply) <= limit
        assert 2 not in reply[:-1]
    assert batch.generated == sum(len(r) for r in replies)
