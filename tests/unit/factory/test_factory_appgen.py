"""The app generator: every rendering parses, routes match decorators, knobs show in code.

Generated code is only parsed (``ast``), never imported or executed here; behaviour is checked
in real sandboxes by ``tests/integration/test_factory_gates.py``.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

import pytest

from a01gym.factory import appgen, checkforms, mutator
from a01gym.factory.compiler import LEAK_WORDS
from a01gym.factory.families import f14_path_mismatch
from a01gym.factory.spec import DECOY_KINDS, Knobs

_ROUTE_DECORATORS = {"get", "post", "put", "patch", "delete", "api_route"}


def _route_decorators(source: str) -> int:
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr in _ROUTE_DECORATORS
                ):
                    methods = [k.value for k in deco.keywords if k.arg == "methods"]
                    count += len(methods[0].elts) if methods else 1  # type: ignore[attr-defined]
    return count


def _renderings(spec: Any) -> list[appgen.RenderedApp]:
    mutation = mutator.mutate(spec)
    return [mutation.fixed, mutation.vulnerable, *mutation.traps.values()]


def test_every_rendering_of_every_family_parses(family_id: str, spec_for: Any) -> None:
    for index in range(4):
        for app in _renderings(spec_for(family_id, index)):
            for path, text in app.files.items():
                ast.parse(text, filename=path)


def test_route_decorators_are_attached_to_functions(family_id: str, spec_for: Any) -> None:
    """A missing blank line once glued a decorator to the previous expression (``)@router``)."""
    spec = spec_for(family_id, 1)
    for app in _renderings(spec):
        for path, text in app.files.items():
            assert ")@" not in text, path
        routers = [t for p, t in app.files.items() if p.startswith("app/routers/")]
        decorated = sum(_route_decorators(t) for t in routers)
        aliases = tuple(f14_path_mismatch.LEGACY_PREFIXES.values())
        canonical = [r for r in app.routes if not r.split(" ", 1)[1].startswith(aliases)]
        assert decorated == len(canonical), path


def test_app_code_never_names_its_bug(family_id: str, spec_for: Any) -> None:
    for index in range(3):
        for app in _renderings(spec_for(family_id, index)):
            for path, text in app.files.items():
                assert not LEAK_WORDS.search(text), (path, LEAK_WORDS.search(text))


def test_reference_fix_touches_only_what_the_family_needs(spec_for: Any) -> None:
    spec = spec_for("F10")
    mutation = mutator.mutate(spec)
    changed = {p for p, t in mutation.fixed.files.items() if mutation.vulnerable.files[p] != t}
    assert changed == {"app/routers/files.py"}


def test_distance_knob_moves_the_check(spec_for: Any) -> None:
    base = spec_for("F01")
    files = {}
    for distance in ("route", "service", "repository"):
        spec = base.model_copy(
            update={"knobs": base.knobs.model_copy(update={"distance": distance})}
        )
        files[distance] = appgen.render_app(spec, appgen.Variant()).files
    assert "policy.can_read(user, " in files["route"]["app/routers/records.py"]
    # the service layer's loaders live in the repository module: a module of their own was
    # a file only service-distance apps had, where the fix always landed (nearest_diff)
    assert not any("app/services.py" in f for f in files.values())
    assert "= repository.document_for_read(" in files["service"]["app/routers/records.py"]
    assert "def document_for_read(" in files["service"]["app/repository.py"]
    assert "policy.can_read(user, document)" in files["service"]["app/repository.py"]
    assert "def document_for_read(" not in files["route"]["app/repository.py"]
    assert "get_for_read(user, " in files["repository"]["app/routers/records.py"]
    assert "def get_for_read" in files["repository"]["app/repository.py"]


@pytest.mark.parametrize(
    ("indirection", "marker"),
    [
        ("dependency", "Depends(security.require_admin)"),
        ("router", "dependencies=[Depends(security.require_admin)]"),
        ("decorator", "@security.admin_only"),
    ],
)
def test_indirection_knob_changes_admin_guards(
    indirection: str, marker: str, spec_for: Any
) -> None:
    spec = spec_for("F04")
    spec = spec.model_copy(update={"knobs": Knobs(indirection=indirection, hint_level=1)})
    fixed = appgen.render_app(spec, appgen.Variant()).files["app/routers/admin.py"]
    vulnerable = appgen.render_app(
        spec, appgen.Variant(modes=dict.fromkeys(spec.bug.sites, "vuln"))
    ).files["app/routers/admin.py"]
    assert marker in fixed
    assert fixed != vulnerable


_ALIAS = {  # how each F14 guard form spells the /api/v1/admin mount
    "prefixes": ("app/security.py", '"/api/v1/admin"'),
    "segments": ("app/security.py", '("api", "v1", "admin")'),
    "config": ("app/config.py", '"/api/v1/admin"'),
}


@pytest.mark.parametrize("form", f14_path_mismatch.GUARDS)
def test_middleware_indirection_guards_by_path_prefix(spec_for: Any, form: str) -> None:
    spec = next(
        s
        for s in (spec_for("F14", index) for index in range(30))
        if checkforms.draw(s, "guard.paths", f14_path_mismatch.GUARDS) == form
        and "guard.v1" in s.bug.sites
    )
    path, alias = _ALIAS[form]
    fixed = appgen.render_app(spec, appgen.Variant()).files
    assert "async def admin_guard" in fixed["app/main.py"]
    assert alias in fixed[path]
    vulnerable = appgen.render_app(
        spec, appgen.Variant(modes=dict.fromkeys(spec.bug.sites, "vuln"))
    ).files
    assert alias not in vulnerable[path]
    assert 'prefix="/api/v1/admin"' in vulnerable[f"app/{spec.layout.routers}/__init__.py"]


@pytest.mark.parametrize(
    ("decoy", "marker"),
    [
        ("sort_column", "SORT_ORDERS"),
        ("request_id", "X-Request-Id"),
        ("basename_preview", "Path(name).name"),
        ("public_stats", "/public/stats"),
    ],
)
def test_decoys_are_visible_in_code(decoy: str, marker: str, spec_for: Any) -> None:
    spec = spec_for("F01").model_copy(update={"decoys": [decoy]})
    app = appgen.render_app(spec, appgen.Variant())
    assert any(marker in text for text in app.files.values())
    assert set(DECOY_KINDS) >= {decoy}


def test_routes_are_stable_between_fix_and_bug(family_id: str, spec_for: Any) -> None:
    for index in range(3):
        mutation = mutator.mutate(spec_for(family_id, index))
        assert mutation.fixed.routes == mutation.vulnerable.routes


def test_delete_route_trap_removes_routes(spec_for: Any) -> None:
    spec = spec_for("F01")
    spec = spec.model_copy(update={"traps": ["delete_route"]})
    mutation = mutator.mutate(spec)
    assert set(mutation.traps["delete_route"].routes) < set(mutation.fixed.routes)


def test_knob_combinations_render(spec_for: Any) -> None:
    spec = spec_for("F02", 2)
    for distance, indirection in itertools.product(
        ("route", "service", "repository"), ("dependency", "router", "decorator")
    ):
        knobs = Knobs(distance=distance, indirection=indirection, hint_level=0)
        for app in _renderings(spec.model_copy(update={"knobs": knobs})):
            for text in app.files.values():
                ast.parse(text)
