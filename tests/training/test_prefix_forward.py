"""The prefix-sharing GRPO forward gives TRL's log-probabilities, entropies and LoRA gradients.

The reference is TRL's own ``GRPOTrainer._get_per_token_logps_and_entropies`` on the same
LoRA-wrapped model with TRL's fused LM head (called unbound: it only needs the trainer's
accelerator), on a batch shaped as TRL builds it: left-padded prompts, right-padded completions,
GRPO groups of equal prompts that share a system prefix, and rows in shuffled order.
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from accelerate import Accelerator  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from trl import GRPOTrainer  # noqa: E402
from trl.trainer.utils import add_fused_lm_head  # noqa: E402

from a01gym.training import prefixforward  # noqa: E402

# peft asks transformers the deprecated way whether checkpointing is on (peft 0.21.2)
pytestmark = pytest.mark.filterwarnings(
    "ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"
)
PAD = 0
SYSTEM = [5, 6, 7, 8, 9, 10, 11]


TEMPERATURE = 0.7


def _model(temperature: float = TEMPERATURE) -> object:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=PAD,
    )
    model = Qwen2ForCausalLM(config)
    add_fused_lm_head(model, temperature=temperature, outputs=("log_probs", "entropy"))
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
        init_lora_weights=False,  # non-zero B, so the adapter shapes the outputs and gradients
    )
    peft_model = get_peft_model(model, lora)
    peft_model.train()
    return peft_model


def _batch(prompts: list[list[int]], completions: list[list[int]]) -> tuple[object, object, int]:
    """TRL's layout: prompts padded on the left, completions on the right."""
    width_p = max(map(len, prompts))
    width_c = max(map(len, completions))
    ids, mask = [], []
    for prompt, completion in zip(prompts, completions, strict=True):
        left, right = width_p - len(prompt), width_c - len(completion)
        ids.append([PAD] * left + prompt + completion + [PAD] * right)
        mask.append([0] * left + [1] * (len(prompt) + len(completion)) + [0] * right)
    return torch.tensor(ids), torch.tensor(mask), width_c


def _reference(model: object, ids: object, mask: object, keep: int) -> tuple[object, object]:
    trainer = types.SimpleNamespace(accelerator=Accelerator(cpu=True))
    logps, entropies, _ = GRPOTrainer._get_per_token_logps_and_entropies(
        trainer, model, ids, mask, keep, compute_entropy=True
    )
    return logps, entropies


def _loss_and_grads(model: object, logps: object, entropies: object, weights: object) -> dict:
    model.zero_grad()
    loss = -(logps * weights).sum() + 0.1 * (entropies * weights).sum()
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _compare(
    prompts: list[list[int]], completions: list[list[int]], dense_limit: int = 1 << 24
) -> None:
    model = _model()
    ids, mask, keep = _batch(prompts, completions)
    weights = mask[:, -keep:].float()
    expected = _reference(model, ids, mask, keep)
    expected_grads = _loss_and_grads(model, *expected, weights)
    result = prefixforward.shared_prefix_logps(
        model, ids, mask, keep, entropy=True, temperature=TEMPERATURE, dense_limit=dense_limit
    )
    assert result is not None
    grads = _loss_and_grads(model, *result, weights)
    for got, want in zip(result, expected, strict=True):
        torch.testing.assert_close(got * weights, want * weights, atol=1e-5, rtol=1e-5)
    assert expected_grads and set(grads) == set(expected_grads)
    assert any(g.abs().sum() > 0 for g in grads.values())
    for name, want in expected_grads.items():
        torch.testing.assert_close(grads[name], want, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("dense_limit", [0, 1 << 24], ids=["fused-head", "dense-logits"])
def test_groups_with_a_shared_system_prefix_match_trl(dense_limit: int) -> None:
    a, b = [*SYSTEM, 20, 21, 22, 23], [*SYSTEM, 30, 31]  # different lengths: left padding
    prompts = [a, b, a, b, b, a]  # shuffled, as TRL shuffles a generation batch
    completions = [[40, 41, 42], [43, 44], [45], [46, 47, 48, 49], [50, 51], [52, 53, 54, 55]]
    _compare(prompts, completions, dense_limit)


def test_one_group_and_prompts_without_a_common_prefix_match_trl() -> None:
    _compare([SYSTEM] * 3, [[40, 41], [42, 43, 44], [45]])
    _compare([[12, 13, 14], [15, 16], [17]], [[40, 41], [42], [43, 44, 45]])


def test_a_batch_not_in_trls_layout_is_left_to_trl() -> None:
    model = _model()
    ids = torch.tensor([[5, 6, PAD, 40, 41], [5, 6, 7, 42, 43]])
    mask = torch.tensor([[1, 1, 0, 1, 1], [1, 1, 1, 1, 1]])  # a right-padded prompt
    assert (
        prefixforward.shared_prefix_logps(model, ids, mask, 2, entropy=True, temperature=1.0)
        is None
    )


def test_the_trainer_class_is_trls_with_the_shared_forward() -> None:
    cls = prefixforward.grpo_trainer_class()
    assert issubclass(cls, GRPOTrainer) and cls is prefixforward.grpo_trainer_class()
    assert "_get_per_token_logps_and_entropies" in vars(cls)
