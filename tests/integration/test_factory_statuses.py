"""Apps whose functions refuse by status number (``HTTPException(403, ...)``;
``factory/statuses.py``) pass every gate in real sandboxes, in both data-access styles: the
number is the same response as FastAPI's constant, so guards and exploits still see 401, 403
and 404 where the policy says so, the reference fix written with numbers closes the bug, and
every trap still fails. F02 at the service distance (a service function's refusal), F04 (the
admin dependency's refusal) and F18 (a form-post guard's)."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _numbered(family: str, distance: str | None = None) -> ScenarioSpec:
    """The first draft of ``family`` (at ``distance``, when given) with every function that
    refuses spelling the status as a number."""
    cfg = config.FactoryConfig(count=40, families=[family], seed=5)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if distance in (None, spec.knobs.distance):
            layout = spec.layout.model_copy(update={"status_numbers": 1.0})
            return spec.model_copy(update={"layout": layout})
    raise AssertionError(f"no {family} draft at distance {distance}")


async def test_numbered_refusals_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    for family, distance in (("F02", "service"), ("F04", None), ("F18", None)):
        spec = _numbered(family, distance)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            code = "".join(t.decode() for p, t in bundle.workspace.items() if p.endswith(".py"))
            assert "HTTPException(403, " in code and "HTTPException(status." not in code
            fixed = "".join((t or "") for t in bundle.hidden.reference_fix.files.values())
            assert "HTTPException(status." not in fixed
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
