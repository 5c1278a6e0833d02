"""F04 apps whose broken admin handler checks the role in its body when secure
(``if not user.is_admin: raise ...``, drawn per site beside declared guards;
``factory/routes_admin.py``) pass every gate in real sandboxes, in both data-access styles and
under both per-handler guards (the ``dependency`` and ``decorator`` indirections): the
reference fix restores the check in that form, a regular user gets 403 again, and every trap,
the self-exemption among them, still fails."""

from __future__ import annotations

import collections

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _added(bundle: Bundle) -> collections.Counter[str]:
    """The lines the reference fix adds, stripped, with how many times each."""
    added: collections.Counter[str] = collections.Counter()
    for path, text in bundle.hidden.reference_fix.files.items():
        before = bundle.workspace[path].decode().splitlines()
        added += collections.Counter(map(str.strip, (text or "").splitlines()))
        added -= collections.Counter(map(str.strip, before))
    return added


def _inline_bug(indirection: str) -> ScenarioSpec:
    """The first F04 draft under ``indirection`` whose broken handler is drawn inline."""
    cfg = config.FactoryConfig(count=60, families=["F04"], seed=13)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        knobs = spec.knobs.model_copy(update={"indirection": indirection})
        spec = spec.model_copy(update={"knobs": knobs})
        if _added(compiler.compile_bundle(spec))["if not user.is_admin:"]:
            return spec
    raise AssertionError(f"no F04 draft under {indirection} with its broken handler inline")


async def test_inline_admin_checks_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    for indirection in ("dependency", "decorator"):
        spec = _inline_bug(indirection)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            assert _added(bundle)["if not user.is_admin:"] >= 1
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
