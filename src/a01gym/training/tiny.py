"""A tiny tokenizer and Qwen2-shaped model built locally, for CPU smoke runs and tests.

Model weights cannot be downloaded on every machine we run on (CI has no hub access), yet the
training path must run end to end on a real model. :func:`build_tiny` trains a byte-level BPE on
in-domain text (tool schemas, the system prompt, and whatever corpus the caller passes: task texts
and app code from the scenario cache) and pairs it with a randomly initialised Qwen2 of a few
hundred thousand parameters.

Two details matter (both found the hard way, see ``research/training-recipe.md``):

* the BPE uses exactly Qwen2's normaliser and pre-tokeniser, because ``AutoTokenizer`` rebuilds
  them from the model type on load and would otherwise tokenise differently from the tokenizer
  we trained;
* the chat template is TRL's shipped ``qwen2_5.jinja``, read from the installed ``trl`` package,
  because TRL recognises templates by exact text to enable tool calling and response parsing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from a01gym.training import prompting

__all__ = ["TinySpec", "build_tiny"]

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")


class TinySpec:
    """Sizes of the tiny model (defaults: ~0.5 M parameters, fast on one CPU core)."""

    def __init__(
        self,
        *,
        vocab_size: int = 2048,
        hidden_size: int = 64,
        intermediate_size: int = 192,
        layers: int = 2,
        heads: int = 4,
        kv_heads: int = 2,
        max_positions: int = 8192,
        seed: int = 0,
    ) -> None:
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.layers = layers
        self.heads = heads
        self.kv_heads = kv_heads
        self.max_positions = max_positions
        self.seed = seed


def _base_corpus() -> list[str]:
    schemas = list(prompting.tool_schemas())
    texts = [prompting.SYSTEM_PROMPT, json.dumps(schemas), json.dumps(schemas, indent=2)]
    for schema in schemas:
        name = schema["function"]["name"]
        texts.append(f'<tool_call>\n{{"name": "{name}", "arguments": {{}}}}\n</tool_call>')
    return texts


def build_tiny(out: Path, corpus: Iterable[str] = (), spec: TinySpec | None = None) -> Path:
    """Build and save a tokenizer and model under ``out``; returns ``out``.

    Args:
        out: Directory for ``save_pretrained`` output (loadable offline with ``Auto*``).
        corpus: In-domain text for the BPE (more text, shorter token sequences).
        spec: Model sizes.
    """
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from transformers.models.qwen2 import tokenization_qwen2

    spec = spec or TinySpec()
    texts = [*_base_corpus(), *corpus]
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(tokenization_qwen2.PRETOKENIZE_REGEX), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tokenizer.add_tokens(list(TOOL_TOKENS))
    tokenizer.chat_template = prompting.chat_template()

    torch.manual_seed(spec.seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out
