"""F18 with both form routes broken, whose bug is a slip in ``csrf_protect`` (both routes still
call it), passes every gate in real sandboxes, one app per slip, and the ``and``-for-``or``
slip in both data-access styles: every exploit (a foreign post without the header, with a
guessed token, without the ``csrf_token`` cookie) changes the victim's data in the vulnerable
app, the fix (one rule line, or an early return dropped) closes them all, and every trap still
fails."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.families import f18_csrf
from a01gym.scenario.bundle import Bundle

from . import gating


async def test_each_csrf_slip_passes_every_gate() -> None:
    cfg = config.FactoryConfig(count=80, families=["F18"], seed=7)
    found: dict[str, Bundle] = {}
    specs = {}
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if set(spec.bug.sites) < {"csrf.archive", "csrf.email"}:
            continue
        bundle = compiler.compile_bundle(spec)
        (path,) = bundle.hidden.reference_fix.files
        text = bundle.workspace[path].decode()
        for name, (early, rule) in f18_csrf.SLIPS.items():
            if (early and early.split("\n")[0] in text) or (not early and rule in text):
                found.setdefault(name, bundle)
                specs.setdefault(name, spec)
        if len(found) == len(f18_csrf.SLIPS):
            break
    assert set(found) == set(f18_csrf.SLIPS), sorted(found)
    spec = specs["or_for_and"]
    other = "sqlalchemy" if spec.knobs.data_access == "sqlite3" else "sqlite3"
    restyled = compiler.compile_bundle(styles.restyled(spec, other))
    await gating.assert_each_passes_every_gate([*found.values(), restyled])
