"""Factory job specs: weak train cells are ordered, held-out families and domains never are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_feedback_weights import ANALYSIS

from a01gym.errors import ConfigError
from a01gym.factory import author, compiler, domains
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.factory.config import FactoryConfig, SplitConfig
from a01gym.feedback import jobs, weights


def _spec(**fields: object) -> jobs.FactoryJobSpec:
    return jobs.plan_job(ANALYSIS, weights.curriculum(ANALYSIS), **fields)  # type: ignore[arg-type]


def test_only_too_hard_train_cells_are_ordered() -> None:
    spec = _spec(per_cell=3, cache="/scenarios")
    assert [(o.family, o.difficulty, o.count) for o in spec.orders] == [("F06", "easy", 3)]
    assert spec.orders[0].reason == "0/4 resolved, below the band 20%-80%; mostly never_found"
    assert spec.cache == "/scenarios"
    assert spec.seed == _spec().seed  # the same logs order the same drafts


@pytest.mark.parametrize("name", ["job.yaml", "job.json"])
def test_a_spec_round_trips_through_its_file(tmp_path: Path, name: str) -> None:
    spec = _spec()
    jobs.write_job_spec(tmp_path / name, spec)
    assert jobs.load_job_spec(tmp_path / name) == spec


def test_a_bad_spec_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("seed: 1\norders:\n  - {family: F06, difficulty: extreme, count: 2}\n")
    with pytest.raises(ConfigError, match=r"orders\.0\.difficulty"):
        jobs.load_job_spec(path)
    with pytest.raises(ConfigError, match="cannot read"):
        jobs.load_job_spec(tmp_path / "missing.yaml")


def test_drafts_stay_in_train_domains() -> None:
    held = {"hr_records", "lab"}
    train = set(domains.DOMAINS) - held
    spec = _spec(per_cell=len(train))  # one draft per train domain, round robin
    requests = jobs.draft_requests(spec, held, {"F09", "F17"})
    assert len(requests) == len(train) and [r.index for r in requests] == list(range(len(train)))
    assert {r.domain for r in requests} == train
    assert len({r.seed for r in requests}) == len(train)


def test_an_order_for_a_held_out_family_is_refused() -> None:
    spec = jobs.FactoryJobSpec.model_validate(
        {"seed": 1, "orders": [{"family": "F09", "difficulty": "easy", "count": 1}]}
    )
    with pytest.raises(ConfigError, match="F09 is held out") as caught:
        jobs.draft_requests(spec, set(), {"F09"})
    assert caught.value.field == "orders.0.family"


def test_the_cache_adds_what_it_files_only_under_eval(tmp_path: Path) -> None:
    """A cache built with another split config: F04 is eval only there, notes eval only."""
    cache = ScenarioCache(tmp_path / "cache")
    config = FactoryConfig(count=8, families=["F01", "F04"], domains=["notes", "shop"])
    with cache.writer():
        for request in author.plan(config):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            eval_row = request.family == "F04" or request.domain == "notes"
            cache.add(
                bundle,
                split="eval" if eval_row else "train",
                validation={},
                provenance=Provenance(author="template", config_hash="x"),
            )
    spec = jobs.FactoryJobSpec(seed=1, split=SplitConfig(eval_domains=[], eval_families=[]))
    assert jobs.held_out(spec, cache) == ({"notes"}, {"F04"})


def test_the_documented_job_spec_loads(tmp_path: Path) -> None:
    text = (Path(__file__).parents[3] / "docs" / "feedback.md").read_text()
    (example,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL) if "orders:" in b]
    path = tmp_path / "job.yaml"
    path.write_text(example)
    spec = jobs.load_job_spec(path)
    assert [(o.family, o.difficulty, o.count) for o in spec.orders] == [("F06", "easy", 4)]
    assert not set(o.family for o in spec.orders) & set(spec.split.eval_families)
