"""The training config: the example file validates, typos name the nearest key, bad combos fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from a01gym.errors import ConfigError
from a01gym.training import config

EXAMPLE = Path(__file__).parents[2] / "examples" / "train.yaml"


def test_the_example_config_validates() -> None:
    cfg = config.load_config(EXAMPLE)
    assert cfg.data.families == ["F01", "F02", "F03"]
    assert cfg.grpo["num_generations"] == 8


def test_a_misspelt_key_names_the_nearest_valid_one(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text("rollout:\n  max_turn: 4\n")
    with pytest.raises(ConfigError, match=r"did you mean 'rollout\.max_turns'"):
        config.load_config(path)


def test_vllm_generation_needs_the_trl_rollout_path() -> None:
    with pytest.raises(ConfigError, match=r"rollout\.path: trl"):
        config.load_config(None, generation="vllm-colocate")
    cfg = config.load_config(None, **{"generation": "vllm-colocate", "rollout.path": "trl"})
    assert cfg.generation == config.GenerationBackend.VLLM_COLOCATE


def test_overrides_apply_dotted_keys() -> None:
    cfg = config.load_config(EXAMPLE, **{"data.seeds": 8, "gateway.url": "http://x:1"})
    assert cfg.data.seeds == 8
    assert cfg.gateway.url == "http://x:1"


def test_exponent_floats_are_numbers_not_strings(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text("grpo:\n  learning_rate: 1e-5\n  beta: .04\n  max_steps: 10\n")
    cfg = config.load_config(path)
    assert cfg.grpo == {"learning_rate": 1e-5, "beta": 0.04, "max_steps": 10}
