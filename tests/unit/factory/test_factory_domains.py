"""The built-in domains: enough of them, each distinct, each rendering every family, and the
split holding out whole domains and whole families."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from a01gym.factory import author, compiler, config, domains, families, split


def test_at_least_sixteen_distinct_domains() -> None:
    catalog = list(domains.DOMAINS.values())
    assert len(catalog) >= 16
    for field in ("id", "app_name", "description"):
        values = [getattr(d, field) for d in catalog]
        assert len(set(values)) == len(values), field
    entities = [d.entity.plural for d in catalog]
    assert len(set(entities)) == len(entities)
    tenants = [name for d in catalog for name in d.tenant_names]
    assert len(set(tenants)) == len(tenants)


@pytest.mark.timeout(900)  # 16 x 21 bundles: 243 s under a CI run's load (2026-12-07)
def test_every_domain_renders_every_family() -> None:
    for domain_id in sorted(domains.DOMAINS):
        cfg = config.FactoryConfig(count=len(families.FAMILIES), domains=[domain_id], seed=3)
        for request in author.plan(cfg):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            assert bundle.hidden.labels["domain"] == domain_id
            entity = domains.DOMAINS[domain_id].entity.plural
            assert any(entity in text.decode() for text in bundle.workspace.values())
            for path, text in bundle.workspace.items():
                if path.endswith(".py"):
                    ast.parse(text, path)  # parsed only; generated code never runs here


def test_default_plan_covers_every_domain() -> None:
    requests = author.plan(config.FactoryConfig(count=120))
    assert {r.domain for r in requests} == set(domains.DOMAINS)


def test_split_holds_out_whole_domains_and_families_over_all_domains() -> None:
    cfg = config.FactoryConfig(count=260, seed=42)
    assert len(cfg.split.eval_domains) >= 3
    rows = [
        (r.domain, r.family, split.assign_split(r.domain, r.family, cfg.split))
        for r in author.plan(cfg)
    ]
    for domain_id in domains.DOMAINS:
        kinds = {s for d, _, s in rows if d == domain_id}
        if domain_id in cfg.split.eval_domains:
            assert kinds == {"eval"}, domain_id
        else:
            assert "train" in kinds, domain_id
    for family in cfg.split.eval_families:
        assert {s for _, f, s in rows if f == family} == {"eval"}
    assert {d for d, _, s in rows if s == "train"}.isdisjoint(cfg.split.eval_domains)


def test_example_config_lists_every_domain() -> None:
    example = config.load_config(Path(__file__).parents[3] / "examples" / "factory.yaml")
    assert sorted(example.domains) == sorted(domains.DOMAINS)
