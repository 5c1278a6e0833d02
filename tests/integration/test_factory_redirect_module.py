"""F11 whose redirect check lives in ``app/redirects.py`` (the ``module`` structure), with every
redirect broken, passes every gate in real sandboxes in both data-access styles.

The vulnerable app of such a scenario used to keep the module, so ``landing_target`` was a
security helper nothing called, the giveaway ``unused_helper`` names; the app now writes the
module only where a redirect calls it, and the reference fix adds it. This checks that a fix
which creates a file closes the bug, and every trap still fails."""

from __future__ import annotations

from a01gym.factory import author, checkforms, compiler, config, styles
from a01gym.factory.families import f11_open_redirect
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _module_draft_with_every_redirect_broken() -> ScenarioSpec:
    cfg = config.FactoryConfig(count=80, families=["F11"], seed=7)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        structure = checkforms.draw(spec, "redirect", f11_open_redirect.STRUCTURES)
        if structure == "module" and set(spec.bug.sites) >= {
            "redirect.continue",
            "redirect.signout",
        }:
            return spec
    raise AssertionError("no F11 draft of the module structure with both redirects broken")


async def test_a_fix_that_adds_the_redirect_module_passes_every_gate_in_both_styles() -> None:
    spec = _module_draft_with_every_redirect_broken()
    bundles: list[Bundle] = []
    for name in ("sqlite3", "sqlalchemy"):
        bundle = compiler.compile_bundle(styles.restyled(spec, name))
        code = {p: t.decode() for p, t in bundle.workspace.items() if p.endswith(".py")}
        assert not any("def landing_target(" in text for text in code.values())
        added = [
            path
            for path, text in bundle.hidden.reference_fix.files.items()
            if path not in bundle.workspace and "def landing_target(" in str(text)
        ]
        assert len(added) == 1, sorted(bundle.hidden.reference_fix.files)
        bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
