"""The plan and the template author: deterministic, covering the catalog."""

from __future__ import annotations

import collections

from a01gym.factory import author, config, domains, families
from a01gym.factory.compiler import spec_digest


def test_same_seed_gives_the_same_specs() -> None:
    cfg = config.FactoryConfig(count=30, seed=11)
    first = [spec_digest(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]
    second = [spec_digest(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]
    assert first == second
    assert len(set(first)) == len(first)


def test_another_seed_gives_other_specs() -> None:
    a = [author.TemplateAuthor().draft(r) for r in author.plan(config.FactoryConfig(count=5))]
    b = [
        author.TemplateAuthor().draft(r) for r in author.plan(config.FactoryConfig(count=5, seed=1))
    ]
    assert {spec_digest(s) for s in a}.isdisjoint(spec_digest(s) for s in b)


def test_plan_covers_every_family_and_domain() -> None:
    requests = author.plan(config.FactoryConfig(count=60))
    assert {r.family for r in requests} == set(families.FAMILIES)
    assert {r.domain for r in requests} == set(domains.DOMAINS)
    assert len(domains.DOMAINS) >= 8
    assert len(families.FAMILIES) >= 12


def test_bands_follow_weights() -> None:
    cfg = config.FactoryConfig(count=200, difficulty={"easy": 1.0, "hard": 0.0, "medium": 0.0})
    assert {r.band for r in author.plan(cfg)} == {"easy"}


def test_template_author_satisfies_the_protocol() -> None:
    assert isinstance(author.TemplateAuthor(), author.Author)


def test_hard_specs_have_more_sites_and_fewer_hints() -> None:
    cfg = config.FactoryConfig(count=48, difficulty={"easy": 1, "medium": 0, "hard": 1})
    by_band = collections.defaultdict(list)
    for request in author.plan(cfg):
        by_band[request.band].append(author.TemplateAuthor().draft(request))
    assert max(s.knobs.hint_level for s in by_band["hard"]) <= 1
    assert min(s.knobs.hint_level for s in by_band["easy"]) >= 2
    assert all(len(s.bug.sites) == 1 for s in by_band["easy"])
    assert any(len(s.bug.sites) > 1 for s in by_band["hard"])


def test_trap_selection_keeps_fix_one_sibling() -> None:
    import random

    traps = [
        "deny_all",
        "delete_route",
        "status_only",
        "hardcode",
        "admin_break",
        "fix_one_sibling",
    ]
    chosen = author.select_traps(traps, random.Random(3), limit=3)
    assert "fix_one_sibling" in chosen
    assert len(chosen) == 3
