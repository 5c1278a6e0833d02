"""``a01gym factory`` commands that need no sandbox: config errors, list, show, validate."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from a01gym.cli.factory import app
from a01gym.factory import author, compiler, config
from a01gym.factory.cache import Provenance, ScenarioCache

runner = CliRunner()


def _cache(tmp_path: Path, count: int = 3) -> tuple[Path, list[str]]:
    cache = ScenarioCache(tmp_path / "cache")
    hashes = []
    with cache.writer():
        for request in author.plan(config.FactoryConfig(count=count)):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            cache.add(
                bundle,
                split="train",
                validation={"runs": []},
                provenance=Provenance(author="template", config_hash="x"),
            )
            hashes.append(bundle.manifest.content_hash)
    return cache.root, hashes


def test_build_with_a_bad_config_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("count: 3\ngates:\n  workers: -1\n")
    result = runner.invoke(app, ["build", "--config", str(path), "--out", str(tmp_path / "c")])
    assert result.exit_code == 1
    assert "gates.workers" in result.output


def test_build_with_a_bad_author_override_is_a_usage_error_naming_the_choices(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("count: 1\n")
    result = runner.invoke(
        app, ["build", "-c", str(path), "-o", str(tmp_path / "c"), "--author", "oracle"]
    )
    assert result.exit_code == 2
    message = " ".join(result.output.replace("│", " ").split())  # unwrapped from its box
    assert "'oracle' is not one of 'template', 'llm'" in message
    assert not (tmp_path / "c").exists()


def test_list_and_show(tmp_path: Path) -> None:
    root, hashes = _cache(tmp_path)
    result = runner.invoke(app, ["list", str(root), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert sorted(r["hash"] for r in rows) == sorted(hashes)
    table = runner.invoke(app, ["list", str(root), "--split", "train"])
    assert table.exit_code == 0, table.output
    assert hashes[0][:12] in table.output
    assert runner.invoke(app, ["show", str(root), hashes[0][:10]]).exit_code == 0
    shown = runner.invoke(app, ["show", str(root), hashes[0][:10], "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["entry"]["hash"] == hashes[0]


def test_show_unknown_hash_fails_cleanly(tmp_path: Path) -> None:
    root, _ = _cache(tmp_path, count=1)
    result = runner.invoke(app, ["show", str(root), "abcdef123"])
    assert result.exit_code == 1
    assert "no scenario" in result.output


def test_validate_detects_a_tampered_bundle(tmp_path: Path) -> None:
    root, hashes = _cache(tmp_path, count=2)
    ok = runner.invoke(app, ["validate", str(root), "--no-gates"])
    assert ok.exit_code == 0, ok.output
    target = root / "v1" / hashes[0] / "workspace" / "app" / "main.py"  # in every layout
    target.write_text(target.read_text() + "\n# edited\n")
    bad = runner.invoke(app, ["validate", str(root), "--no-gates", "--json"])
    assert bad.exit_code == 1
    assert hashes[0] in json.loads(bad.stdout.split("\n}\n")[0] + "\n}")["problems"]


def test_show_lists_the_recorded_hack_probe(tmp_path: Path) -> None:
    cache = ScenarioCache(tmp_path / "cache")
    bundle = compiler.compile_bundle(
        author.TemplateAuthor().draft(author.plan(config.FactoryConfig(count=1))[0])
    )
    probes = [
        {"hack": "deny_all", "ran": True, "score": 0.0, "note": ""},
        {"hack": "stall", "ran": False, "score": 0.0, "note": "not applicable: no reason"},
    ]
    with cache.writer():
        cache.add(
            bundle,
            split="train",
            validation={"runs": [], "probes": probes},
            provenance=Provenance(author="template", config_hash="x"),
        )
    result = runner.invoke(app, ["show", str(cache.root), bundle.manifest.content_hash[:10]])
    assert result.exit_code == 0, result.output
    assert "hack deny_all" in result.output and "score=0.000" in result.output
    assert "not applicable: no reason" in result.output
