"""The caller's own account and sessions, in routers no bug is fixed in:

* every app serves the caller's own account (``GET``/``PATCH /users/me``) from a router of its
  own, ``app/routers/me.py``, included before the users router (whose ``/users/{user_id}``
  would take ``/users/me``), so the users router (profiles and the team, where F09 is fixed)
  has one shape in every app;
* in a drawn half of the apps (``Layout.account_activity``) the own-account router also serves
  the caller's recent actions (``GET /users/me/activity``), variety in a module no bug is fixed
  in, with a hidden regression that the caller reads them;
* the caller's sessions (``/auth/session``, ``/auth/sessions``, ``/auth/signout-everywhere``)
  are served from a router of their own, ``app/routers/devices.py``, in a drawn half of the
  apps (``Layout.sessions_router``) and beside the own account in the rest, so the sign-in
  router (where F11 is fixed) keeps its two redirects in every app.

Each is renamed like any router, and leaves no module a handler short of its siblings' check
that the whole module did not lack before."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from a01gym.factory import author, compiler, config, giveaways, layoutdraw, styles
from a01gym.factory.spec import Layout, ScenarioSpec

_SESSIONS = ["read_session", "list_sessions", "sign_out_everywhere"]


def _draft(family: str, **layout: bool) -> ScenarioSpec:
    request = next(iter(author.plan(config.FactoryConfig(count=1, families=[family], seed=3))))
    spec = author.TemplateAuthor().draft(request)
    return spec.model_copy(update={"layout": spec.layout.model_copy(update=layout)})


def _module(spec: ScenarioSpec, area: str) -> str:
    return f"app/{spec.layout.routers}/{spec.layout.areas.get(area, area)}.py"


def _handlers(text: str) -> list[str]:
    return re.findall(r"^def (\w+)\(", text, re.M)


def _imports_only_what_it_uses(text: str) -> None:
    used = set(re.findall(r"\b(\w+)\b", text.split("\nrouter = ", 1)[1]))
    for names in re.findall(r"^from [\w.]+ import (.+)$|^import (\w+)$", text, re.M):
        for name in ", ".join(n for n in names if n).split(", "):
            assert name in used, (name, text)


def test_half_the_drafts_split_the_sessions_off_and_every_named_layout_names_me(
    drawn_layouts: list[Layout], assert_layout_share: Callable[[str, float], None]
) -> None:
    assert_layout_share("sessions_router", layoutdraw.SESSIONS_ROUTER_SHARE)
    assert_layout_share("account_activity", layoutdraw.ACCOUNT_ACTIVITY_SHARE)
    # the two draws are apart: every pair of the flags occurs
    assert len({(d.account_activity, d.sessions_router) for d in drawn_layouts}) == 4
    assert not any("devices" in d.areas for d in drawn_layouts if not d.sessions_router)
    spelled = {d.areas["devices"] for d in drawn_layouts if "devices" in d.areas}
    assert spelled == {"active_sessions", "session_list"}
    named = [d for d in drawn_layouts if not d.skeleton_names]
    assert {d.areas.get("me", "me") for d in named} == {"me", "myself", "self_service"}


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_every_app_serves_its_own_account_from_me_included_before_users(style: str) -> None:
    spec = styles.restyled(_draft("F09", sessions_router=True, account_activity=False), style)
    bundle = compiler.compile_bundle(spec)
    users, me = _module(spec, "users"), _module(spec, "me")
    own, others = bundle.workspace[me].decode(), bundle.workspace[users].decode()
    assert _handlers(own) == ["read_me", "update_me"]
    assert _handlers(others) == ["read_profile", "read_team"]
    assert '"/users/me"' not in others
    assert {"GET /users/me", "PATCH /users/me"} <= set(bundle.manifest.routes)
    main = bundle.workspace[f"app/{spec.layout.routers}/__init__.py"].decode()
    me_name, users_name = (path.rsplit("/", 1)[1].removesuffix(".py") for path in (me, users))
    assert main.index(f"include_router({me_name}.router)") < main.index(
        f"include_router({users_name}.router)"
    )
    # two handlers a module: neither has siblings enough to stand out from
    scores = giveaways._asymmetry_scores(giveaways.python_files(bundle))
    assert me not in scores and users not in scores


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_the_sessions_sit_beside_the_own_account_or_in_their_router_never_in_signin(
    style: str,
) -> None:
    beside_spec = styles.restyled(
        _draft("F11", sessions_router=False, account_activity=False), style
    )
    beside = compiler.compile_bundle(beside_spec)
    apart_spec = styles.restyled(_draft("F11", sessions_router=True, account_activity=False), style)
    apart = compiler.compile_bundle(apart_spec)
    assert apart.manifest.routes == beside.manifest.routes
    assert _module(beside_spec, "devices") not in beside.workspace
    me = beside.workspace[_module(beside_spec, "me")].decode()
    assert _handlers(me) == ["read_me", "update_me", *_SESSIONS]
    assert '@router.get("/auth/sessions")' in me
    devices = apart.workspace[_module(apart_spec, "devices")].decode()
    assert _handlers(devices) == _SESSIONS
    assert "/auth/" not in devices.split("\nrouter = ", 1)[1].split("\n", 1)[1]
    assert _handlers(apart.workspace[_module(apart_spec, "me")].decode()) == [
        "read_me",
        "update_me",
    ]
    # the sign-in router is the same module either way: its two redirects
    redirects = beside.workspace[_module(beside_spec, "signin")].decode()
    assert apart.workspace[_module(apart_spec, "signin")].decode() == redirects
    assert not set(_handlers(redirects)) & set(_SESSIONS)
    assert {"continue_after_sign_in", "sign_out"} & set(_handlers(redirects))
    for text in (redirects, me, devices):
        _imports_only_what_it_uses(text)
    main = apart.workspace[f"app/{apart_spec.layout.routers}/__init__.py"].decode()
    devices_name = _module(apart_spec, "devices").rsplit("/", 1)[1].removesuffix(".py")
    assert f"include_router({devices_name}.router)" in main
    # two handlers: the sign-in router has no siblings enough to stand out from
    assert _module(apart_spec, "signin") not in giveaways._asymmetry_scores(
        giveaways.python_files(apart)
    )


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_the_caller_s_activity_is_one_more_own_account_route_with_a_hidden_regression(
    style: str,
) -> None:
    plain_spec = styles.restyled(_draft("F05", account_activity=False), style)
    plain = compiler.compile_bundle(plain_spec)
    spec = styles.restyled(_draft("F05", account_activity=True), style)
    bundle = compiler.compile_bundle(spec)
    assert set(bundle.manifest.routes) - set(plain.manifest.routes) == {"GET /users/me/activity"}
    me = bundle.workspace[_module(spec, "me")].decode()
    assert _handlers(me) == [
        *_handlers(plain.workspace[_module(plain_spec, "me")].decode()),
        "read_my_activity",
    ]
    assert "WHERE actor_id = " in me  # the caller's own actions only
    _imports_only_what_it_uses(me)
    regression = {t.id: t for t in bundle.hidden.tests}["regression.own_activity"]
    assert [s.path for s in regression.steps] == ["/users/me/activity"]
    assert "regression.own_activity" not in {t.id for t in plain.hidden.tests}
    # the rest of the app is as it was
    assert {p for p, t in bundle.workspace.items() if plain.workspace.get(p) != t} == {
        _module(spec, "me")
    }
