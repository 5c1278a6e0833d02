"""F08's filtering style is drawn per site: the export and the digest of one app may filter
in different places (the repository's scoped query, the repository's Python filter, or the
report handler), as the checks of other sites are drawn apart. With one style for both, a
secure reports router filtered in every handler or in none, and the handler a bug left without
``policy.can_read`` beside two that call it was the bug (docs/families.md). A report filters in
its handler least often (``STYLE_WEIGHTS``): where both did, the print view (F01's site) was the
one handler of three without ``can_read``."""

from __future__ import annotations

import re

from a01gym.factory import author, compiler, config, giveaways
from a01gym.factory.families import f08_export_filter
from a01gym.factory.spec import Layout, ScenarioSpec


def _specs(count: int = 60) -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=count, families=["F08"], seed=11)
    return [
        author.TemplateAuthor().draft(r).model_copy(update={"layout": Layout()})
        for r in author.plan(cfg)
    ]


def _handler(router: str, name: str) -> str:
    """The text of handler ``name`` in ``router``."""
    start = router.index(f"def {name}(")
    end = router.find("\n@router.", start)
    return router[start : end if end >= 0 else None]


def test_the_export_and_the_digest_draw_their_style_apart() -> None:
    pairs = [
        (f08_export_filter.style(s, "record.export"), f08_export_filter.style(s, "record.digest"))
        for s in _specs()
    ]
    assert any(a == b for a, b in pairs) and any(a != b for a, b in pairs), pairs
    assert {a for a, _ in pairs} == {b for _, b in pairs} == set(f08_export_filter.STYLES)


def test_a_report_filters_in_its_handler_least_often() -> None:
    """Over 600 drawn reports, the handler style near its weight (one in five, never one in
    three), and both reports of an app in their handlers in few apps."""
    specs = _specs(300)
    drawn = [f08_export_filter.style(s, site) for s in specs for site in f08_export_filter.METHODS]
    share = drawn.count("handler_filter") / len(drawn)
    assert 0.15 < share < 0.26, share
    assert all(drawn.count(style) / len(drawn) > 0.33 for style in ("sql_scope", "python_filter"))
    both = sum(
        all(
            f08_export_filter.style(s, site) == "handler_filter"
            for site in f08_export_filter.METHODS
        )
        for s in specs
    )
    assert both / len(specs) < 0.08, both


def test_a_secure_router_may_filter_one_report_in_its_handler_and_not_the_other() -> None:
    spec = next(
        s
        for s in _specs()
        if f08_export_filter.style(s, "record.export") == "handler_filter"
        and f08_export_filter.style(s, "record.digest") != "handler_filter"
        and "record.export" in s.bug.sites
        and "record.digest" not in s.bug.sites
    )
    bundle = compiler.compile_bundle(spec)
    fixed = bundle.hidden.reference_fix.files
    router = fixed["app/routers/reports.py"]
    ent = spec.domain.entity
    assert "policy.can_read(user, record)" in _handler(router, f"export_{ent.plural}_csv")
    assert "can_read" not in _handler(router, f"{ent.plural}_digest")
    # the digest's repository method filters instead
    repository = bundle.workspace["app/repository.py"].decode()
    digest_rows = repository[repository.index("def digest_rows(") :].split("\n\n", 1)[0]
    assert re.search(r"read_scope|can_read", digest_rows), digest_rows
    # the vulnerable export, unfiltered like the secure digest, is not the one odd handler
    vulnerable = giveaways.python_files(bundle)["app/routers/reports.py"]
    scores = giveaways._asymmetry_scores({"app/routers/reports.py": vulnerable})
    assert scores.get("app/routers/reports.py", (0.0,))[0] < 1.0
