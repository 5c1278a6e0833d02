"""F11 with every redirect broken, whose bug is the ``or`` for ``and`` in the host rule of
``app/redirects.py`` (both redirects still call the check), passes every gate in real sandboxes
in both data-access styles: every exploit (an https link, a scheme-relative link, a look-alike
host) lands off-site in the vulnerable app, the one-line fix closes them all, and every trap
still fails."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.scenario.bundle import Bundle

from . import gating


async def test_the_slipped_host_rule_passes_every_gate_in_both_styles() -> None:
    cfg = config.FactoryConfig(count=80, families=["F11"], seed=7)
    spec = next(
        s
        for s in (author.TemplateAuthor().draft(r) for r in author.plan(cfg))
        if set(s.bug.sites) >= {"redirect.continue", "redirect.signout"}
    )
    bundles: list[Bundle] = []
    for name in ("sqlite3", "sqlalchemy"):
        bundle = compiler.compile_bundle(styles.restyled(spec, name))
        check = bundle.workspace["app/redirects.py"].decode()
        assert 'scheme in ("", "https") or parts.hostname' in check
        assert set(bundle.hidden.reference_fix.files) == {"app/redirects.py"}
        bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
