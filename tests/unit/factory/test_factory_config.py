"""Factory config loading: YAML and JSON, and errors that name the offending field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a01gym.errors import ConfigError
from a01gym.factory.config import FactoryConfig, load_config

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "factory.yaml"


def test_example_config_loads() -> None:
    config = load_config(EXAMPLE)
    assert config.author.kind == "template"
    assert len(config.domains) >= 8 and len(config.families) >= 12


def test_json_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"count": 3, "seed": 9}))
    config = load_config(path, count=5)
    assert (config.count, config.seed) == (5, 9)


def test_bad_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("gates:\n  workers: 0\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.field == "gates.workers"


def test_unknown_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("split:\n  eval_domain: [notes]\n")
    with pytest.raises(ConfigError, match=r"split\.eval_domain"):
        load_config(path)


def test_unknown_family_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("families: [F01, F42]\n")
    with pytest.raises(ConfigError, match=r"'families'.*F42"):
        load_config(path)


def test_unparsable_yaml_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("count: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml")


def test_digest_ignores_the_api_key() -> None:
    a = FactoryConfig.model_validate({"author": {"llm": {"api_key": "secret-1"}}})
    b = FactoryConfig.model_validate({"author": {"llm": {"api_key": "secret-2"}}})
    assert a.digest() == b.digest()
