"""Structural diversity figures: file layouts and reference-fix shapes, and ``factory stats``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from a01gym.cli.factory import app
from a01gym.factory import author, compiler, config, diversity, domains
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import TestKind
from a01gym.scenario.manifest import Patch


def test_abstraction_keeps_keywords_and_punctuation_only() -> None:
    line = "if note is None or not policy.can_read(user, note):  # 'why' 42"
    assert diversity._abstract(line) == "if N is None or not N . N ( N , N ) :"
    assert diversity._abstract('raise HTTPException(404, "gone")') == "raise N ( 0 , S )"


def test_renaming_the_domain_keeps_the_fix_shape_and_the_layout(spec_for: Any) -> None:
    spec = spec_for("F01")
    other = next(d for d in domains.DOMAINS.values() if d.id != spec.domain.id)
    first = compiler.compile_bundle(spec)
    renamed = compiler.compile_bundle(spec.model_copy(update={"domain": other}))
    assert first.workspace != renamed.workspace
    assert diversity.fix_shape(first) == diversity.fix_shape(renamed)
    assert diversity.file_layout(first) == diversity.file_layout(renamed)


def test_a_fix_of_another_form_is_another_shape(spec_for: Any) -> None:
    bundle = compiler.compile_bundle(spec_for("F01"))
    [(path, fixed)] = list(bundle.hidden.reference_fix.files.items())[:1]
    assert fixed is not None
    assert path  # every fix touches at least one file
    elsewhere = Patch(files={path: fixed + "\n\nEXTRA_GUARD = check(1, 'x')\n"})
    changed = dataclasses.replace(
        bundle, hidden=bundle.hidden.model_copy(update={"reference_fix": elsewhere})
    )
    assert diversity.fix_shape(changed) != diversity.fix_shape(bundle)


def _bundles(count: int) -> list[Bundle]:
    cfg = config.FactoryConfig(count=count, seed=42)
    return [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]


def test_measure_counts_per_family() -> None:
    bundles = _bundles(26)
    report = diversity.measure(bundles)
    assert report.scenarios == 26
    assert sum(f.scenarios for f in report.families.values()) == 26
    assert report.file_layouts == len({tuple(sorted(b.workspace)) for b in bundles})
    for family, row in report.families.items():
        mine = [b for b in bundles if b.hidden.labels["family"] == family]
        assert row.fix_shapes == len({diversity.fix_shape(b) for b in mine})
        assert 1 <= row.fix_file_sets <= row.scenarios
        assert set(row.top_fix_files) <= set().union(*(b.workspace for b in mine))
        exploits = [sum(t.kind is TestKind.EXPLOIT for t in b.hidden.tests) for b in mine]
        assert (row.exploits_min, row.exploits_max) == (min(exploits), max(exploits))
        guards = [sum(t.kind is TestKind.GUARD for t in b.hidden.tests) for b in mine]
        assert row.guards_min == min(guards) > 0
    assert report.fix_shapes_min == min(f.fix_shapes for f in report.families.values())
    drawn = [b.hidden.labels["data_access"] for b in bundles]
    assert report.styles == {s: drawn.count(s) for s in ("sqlalchemy", "sqlite3")}
    assert all(n > 0 for n in report.styles.values())
    assert diversity.measure(reversed(bundles)) == report  # the order of a cache is no matter


def test_cli_stats_reports_the_cache(tmp_path: Path, cache_of: Any) -> None:
    bundles = _bundles(6)
    cache = cache_of(tmp_path / "cache", bundles)
    result = CliRunner().invoke(app, ["stats", str(cache.root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == diversity.measure(bundles).model_dump()
    table = CliRunner().invoke(app, ["stats", str(cache.root)])
    assert table.exit_code == 0 and "file layouts" in table.output
    missing = CliRunner().invoke(app, ["stats", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "no scenario cache" in missing.output
