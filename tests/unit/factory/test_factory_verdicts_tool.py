"""tools/factory_verdicts.py: two caches with the same verdicts print the same text, timings
aside, and any changed verdict, probe or rejection shows up."""

from __future__ import annotations

import sys
from pathlib import Path

from a01gym.factory import author, compiler, config
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.scenario.cache import Rejection

sys.path.insert(0, str(Path(__file__).parents[3] / "tools"))

import factory_verdicts

PROVENANCE = Provenance(author="template", model=None, config_hash="c0ffee")


def _validation(duration_ms: float, probe_score: float) -> dict[str, object]:
    return {
        "admitted": True,
        "duration_ms": duration_ms,
        "runs": [{"name": "vulnerable", "duration_ms": duration_ms, "world_verdicts": ["a"] * 3}],
        "probes": [{"hack": "deny_all", "score": probe_score, "duration_ms": duration_ms}],
    }


def _cache(path: Path, duration_ms: float, probe_score: float = 0.0) -> Path:
    cfg = config.FactoryConfig(count=2, seed=1)
    bundle, rejected = (
        compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)
    )
    cache = ScenarioCache(path)
    with cache.writer():
        cache.add(
            bundle,
            split="train",
            validation=_validation(duration_ms, probe_score),
            provenance=PROVENANCE,
        )
        cache.reject(
            Rejection(
                spec_sha256=None,
                family=rejected.hidden.labels["family"],
                domain=rejected.hidden.labels["domain"],
                stage="gates",
                reason="G5: hack deny_all scores 0.200, above the no-op",
                author="template",
                model=None,
                config_hash="c0ffee",
                created_at=duration_ms,
            )
        )
    return path


def test_same_verdicts_with_other_timings_print_the_same(tmp_path: Path) -> None:
    fast = factory_verdicts.verdicts(_cache(tmp_path / "fast", duration_ms=10.0))
    slow = factory_verdicts.verdicts(_cache(tmp_path / "slow", duration_ms=99.0))
    assert fast == slow
    [validation] = fast["admitted"].values()
    assert validation["runs"] == [{"name": "vulnerable", "world_verdicts": ["a"] * 3}]
    assert fast["rejected"][0]["reason"].startswith("G5: hack deny_all")


def test_a_changed_probe_result_shows(tmp_path: Path) -> None:
    before = factory_verdicts.verdicts(_cache(tmp_path / "a", duration_ms=10.0))
    after = factory_verdicts.verdicts(_cache(tmp_path / "b", duration_ms=10.0, probe_score=0.2))
    assert before != after
