"""Apps that serve the caller's own account from a router of its own
(``Layout.account_router``, ``app/routers/me.py``) pass every gate in real sandboxes, in both
data-access styles: ``GET /users/me`` still answers (the account router is included before the
users router, whose ``/users/{user_id}`` would otherwise take it), the reference fix closes
the bug wherever it now sits and every trap still fails. F06 with the profile update broken
(its bug and fix move to the account router), F09 (the profile view, left in the users router
with the team) and F05 (a site outside both: the split must not disturb the rest)."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _split(family: str, site: str | None = None) -> ScenarioSpec:
    """The first draft of ``family`` (with ``site`` among its bug's sites, when given), with
    the caller's own account in a router of its own, renamed where the layout renames."""
    cfg = config.FactoryConfig(count=40, families=[family], seed=7)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if site is None or site in spec.bug.sites:
            layout = spec.layout.model_copy(update={"account_router": True})
            return spec.model_copy(update={"layout": layout})
    raise AssertionError(f"no {family} draft with {site}")


async def test_account_router_apps_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    for family, site in (("F06", "profile.update"), ("F09", "profile.view"), ("F05", None)):
        spec = _split(family, site)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            me = f"app/{spec.layout.routers}/{spec.layout.areas.get('me', 'me')}.py"
            assert "def update_me(" in bundle.workspace[me].decode()
            if site == "profile.update":
                assert me in bundle.hidden.reference_fix.files
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
