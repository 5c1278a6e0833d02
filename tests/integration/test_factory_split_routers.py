"""Apps whose own account and sessions sit in routers of their own pass every gate in real
sandboxes, in both data-access styles.

* The caller's own account is ``app/routers/me.py`` in every app: ``GET /users/me`` still
  answers (the account router is included before the users router, whose ``/users/{user_id}``
  would otherwise take it). F06 with the profile update broken (its bug and fix are in the
  account router) and F05 (a site outside both), each with the caller's activity
  (``Layout.account_activity``, whose hidden regression reads it), and F09 (the profile view, in
  the users router with the team) without.
* The caller's sessions in a router of their own (``Layout.sessions_router``,
  ``app/routers/devices.py``) or beside the own account: F11 with each redirect broken (its bug
  and fix stay in the sign-in router, holding the redirects alone), once each way.

In each the reference fix closes the bug wherever it now sits and every trap still fails."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _split(family: str, site: str | None, **layout: bool) -> ScenarioSpec:
    """The first draft of ``family`` (with ``site`` among its bug's sites, when given), with
    the ``layout`` flags set, renamed where the layout renames."""
    cfg = config.FactoryConfig(count=40, families=[family], seed=7)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if site is None or site in spec.bug.sites:
            return spec.model_copy(update={"layout": spec.layout.model_copy(update=layout)})
    raise AssertionError(f"no {family} draft with {site}")


def _module(spec: ScenarioSpec, area: str) -> str:
    return f"app/{spec.layout.routers}/{spec.layout.areas.get(area, area)}.py"


async def test_own_account_router_apps_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    cases = (("F06", "profile.update", True), ("F09", "profile.view", False), ("F05", None, True))
    for family, site, activity in cases:
        spec = _split(family, site, account_activity=activity)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            me = _module(spec, "me")
            assert "def update_me(" in bundle.workspace[me].decode()
            if site == "profile.update":
                assert me in bundle.hidden.reference_fix.files
            # the caller's activity, where drawn, answers in every gate run and world
            tests = {t.id for t in bundle.hidden.tests}
            assert ("regression.own_activity" in tests) == activity
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)


async def test_sessions_apart_or_beside_the_own_account_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    for site, apart in (("redirect.continue", True), ("redirect.signout", False)):
        spec = _split("F11", site, sessions_router=apart)
        sessions = _module(spec, "devices" if apart else "me")
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            assert "def list_sessions(" in bundle.workspace[sessions].decode()
            fixed = set(bundle.hidden.reference_fix.files)
            assert sessions not in fixed
            assert fixed & {_module(spec, "signin"), "app/redirects.py"}
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
