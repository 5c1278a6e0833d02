"""Apps whose handlers take their caller by dependency alias (``user: security.SignedIn``,
``user: security.AdminUser``; ``factory/aliases.py``) pass every gate in real sandboxes, in
both data-access styles: FastAPI resolves the ``Annotated`` aliases, so an anonymous caller
still gets 401 and a regular user 403 (the guards and exploits say so), the reference fix
written in the alias closes the bug, and every trap still fails; also where ``AdminUser``
replaces the ``admin_only`` wrapper (the admin guard's decorator indirection)."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _aliased(family: str, indirection: str) -> ScenarioSpec:
    """The first draft of ``family`` whose admin routes are guarded by ``indirection``, with
    every handler that can take an alias taking it."""
    cfg = config.FactoryConfig(count=40, families=[family], seed=5)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if spec.knobs.indirection == indirection:
            layout = spec.layout.model_copy(update={"dependency_aliases": 1.0})
            return spec.model_copy(update={"layout": layout})
    raise AssertionError(f"no {family} draft with the {indirection} indirection")


async def test_aliased_handlers_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    # a route without authentication; an admin route without its dependency, or its wrapper
    for family, indirection in (("F03", "dependency"), ("F04", "dependency"), ("F04", "decorator")):
        spec = _aliased(family, indirection)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            code = "".join(t.decode() for p, t in bundle.workspace.items() if p.endswith(".py"))
            assert ".SignedIn," in code and ".AdminUser," in code
            # the fix restores the check in the handler's own spelling
            added = {
                line
                for path, text in bundle.hidden.reference_fix.files.items()
                for line in set((text or "").splitlines())
                - set(bundle.workspace[path].decode().splitlines())
            }
            assert not any(".current_user)" in line for line in added), added
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
