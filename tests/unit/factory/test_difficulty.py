"""The difficulty score: measured on the compiled scenario, so a knob that does not move the
bug's fix adds nothing, and a draft asked for as ``easy`` is labelled ``easy``."""

from __future__ import annotations

import json

import pytest

from a01gym.factory import author, compiler, config, difficulty
from a01gym.factory.spec import ScenarioSpec


def _draft(family: str, band: str, seed: int = 3) -> ScenarioSpec:
    request = author.DraftRequest(index=0, seed=seed, family=family, domain="notes", band=band)
    return author.TemplateAuthor().draft(request)


def _features(spec: ScenarioSpec) -> difficulty.Features:
    labels = compiler.compile_bundle(spec).hidden.labels
    features = difficulty.Features(**json.loads(labels["difficulty_features"]))
    assert labels["difficulty_score"] == f"{difficulty.score(features):.3f}"
    assert labels["difficulty"] == difficulty.band(difficulty.score(features))
    return features


def test_the_score_grows_with_each_feature() -> None:
    base = difficulty.Features(
        sites=1, files=1, distance=0, indirection=False, decoys=0, hint_level=4
    )
    assert difficulty.score(base) == 0.0
    for change in (
        {"sites": 2},
        {"files": 2},
        {"distance": 1},
        {"indirection": True},
        {"decoys": 1},
        {"hint_level": 3},
    ):
        assert difficulty.score(base._replace(**change)) > difficulty.score(base), change
    assert difficulty.score(base._replace(distance=2)) > difficulty.score(base._replace(distance=1))
    most = difficulty.Features(
        sites=9, files=9, distance=2, indirection=True, decoys=9, hint_level=0
    )
    assert difficulty.score(most) == 1.0
    assert [difficulty.band(v) for v in (0.29, 0.3, 0.549, 0.55)] == [
        "easy",
        "medium",
        "medium",
        "hard",
    ]


def test_distance_is_where_the_fix_lands_not_the_knob() -> None:
    # F01's record check follows the knob into the service layer's loaders or the SQL, both in
    # the repository module (the loaders were a module of their own, 1, until 2026-12-06)
    f01 = _draft("F01", "easy")
    for knob, expected in (("route", 0), ("service", 2), ("repository", 2)):
        spec = f01.model_copy(update={"knobs": f01.knobs.model_copy(update={"distance": knob})})
        assert _features(spec).distance == expected, knob
    # F17's debug route is fixed in its router whatever the knob says
    f17 = _draft("F17", "easy")
    far = f17.model_copy(update={"knobs": f17.knobs.model_copy(update={"distance": "repository"})})
    assert _features(far) == _features(f17)
    # F07's list filter is in the repository even at route distance
    assert _features(_draft("F07", "easy")).distance == 2


def test_indirection_counts_only_where_it_moves_the_fix() -> None:
    def styled(spec: ScenarioSpec, style: str) -> ScenarioSpec:
        return spec.model_copy(
            update={"knobs": spec.knobs.model_copy(update={"indirection": style})}
        )

    # an admin route without its guard: the style is the fix (not the audit log's, whose
    # defaulted parameter before the caller keeps Depends where others take the alias)
    f04 = _f04(inline=False, site="admin.disable")
    assert not _features(styled(f04, "dependency")).indirection
    plain = f04.layout.model_copy(update={"dependency_aliases": 0.0})
    assert _features(styled(f04.model_copy(update={"layout": plain}), "decorator")).indirection
    # ...unless the handler takes its caller by alias: an AdminUser under either style
    aliased = f04.layout.model_copy(update={"dependency_aliases": 1.0})
    assert not _features(
        styled(f04.model_copy(update={"layout": aliased}), "decorator")
    ).indirection
    f01 = _draft("F01", "easy")  # a record read: admin guards elsewhere change, its fix does not
    assert not _features(styled(f01, "decorator")).indirection
    # an admin handler drawn to check the role in its body: the same fix under either style
    f04_inline = _f04(inline=True)
    plain = f04_inline.layout.model_copy(update={"dependency_aliases": 0.0})
    f04_inline = f04_inline.model_copy(update={"layout": plain})
    assert not _features(styled(f04_inline, "decorator")).indirection


def _f04(inline: bool, site: str | None = None) -> ScenarioSpec:
    """The first easy F04 draft (broken at ``site``, when given) whose broken handler, when
    secure, checks the role in its body (``inline``) or declares it (``factory/routes_admin.py``
    draws which, per site)."""
    for seed in range(3, 80):
        spec = _draft("F04", "easy", seed)
        if site is not None and spec.bug.sites != [site]:
            continue
        bundle = compiler.compile_bundle(spec)
        line = "    if not user.is_admin:"
        added = sum(
            (text or "").count(line) - bundle.workspace[path].decode().count(line)
            for path, text in bundle.hidden.reference_fix.files.items()
        )
        if (added > 0) == inline:
            return spec
    raise AssertionError(f"no easy F04 draft with inline={inline} at {site}")


@pytest.mark.parametrize("seed", [28, 29])
def test_drafts_asked_for_as_easy_are_labelled_easy(seed: int) -> None:
    requests = author.plan(config.FactoryConfig(count=84, seed=seed))
    easy = [r for r in requests if r.band == "easy"]
    assert len(easy) >= 10
    for request in easy:
        bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
        assert bundle.hidden.labels["difficulty"] == "easy", (request, bundle.hidden.labels)
