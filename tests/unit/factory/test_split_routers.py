"""Routers split off in a drawn half of the drafts, so the router set and file count vary:

* the caller's own account (``Layout.account_router``), rendered as ``app/routers/me.py``,
  serving the routes the users router did, included before it (the users router's
  ``/users/{user_id}`` would take ``/users/me``);
* the caller's sessions (``Layout.sessions_router``), rendered as ``app/routers/devices.py``,
  serving the session routes the sign-in router did, which keeps its two redirects.

Each is renamed like any router, and leaves no module a handler short of its siblings' check
that the whole module did not lack before."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from a01gym.factory import author, compiler, config, giveaways, layoutdraw, styles
from a01gym.factory.spec import Layout, ScenarioSpec


def _draft(family: str, **layout: bool) -> ScenarioSpec:
    request = next(iter(author.plan(config.FactoryConfig(count=1, families=[family], seed=3))))
    spec = author.TemplateAuthor().draft(request)
    return spec.model_copy(update={"layout": spec.layout.model_copy(update=layout)})


def _module(spec: ScenarioSpec, area: str) -> str:
    return f"app/{spec.layout.routers}/{spec.layout.areas.get(area, area)}.py"


def _handlers(text: str) -> list[str]:
    return re.findall(r"^def (\w+)\(", text, re.M)


@pytest.mark.parametrize(
    ("field", "share", "area", "spellings"),
    [
        ("account_router", layoutdraw.ACCOUNT_ROUTER_SHARE, "me", {"myself", "self_service"}),
        (
            "sessions_router",
            layoutdraw.SESSIONS_ROUTER_SHARE,
            "devices",
            {"active_sessions", "session_list"},
        ),
    ],
)
def test_half_the_drafts_split_a_router_off_and_only_they_name_it(
    drawn_layouts: list[Layout],
    assert_layout_share: Callable[[str, float], None],
    field: str,
    share: float,
    area: str,
    spellings: set[str],
) -> None:
    assert_layout_share(field, share)
    assert not any(area in d.areas for d in drawn_layouts if not getattr(d, field))
    assert {d.areas[area] for d in drawn_layouts if area in d.areas} == spellings
    # the two draws are apart: every pair of the flags occurs
    pairs = {(d.account_router, d.sessions_router) for d in drawn_layouts}
    assert len(pairs) == 4


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_the_split_app_serves_the_same_routes_with_me_included_first(style: str) -> None:
    whole = compiler.compile_bundle(styles.restyled(_draft("F09", account_router=False), style))
    spec = styles.restyled(_draft("F09", account_router=True), style)
    split = compiler.compile_bundle(spec)
    users, me = _module(spec, "users"), _module(spec, "me")
    assert me not in whole.workspace
    assert split.manifest.routes == whole.manifest.routes
    own, others = split.workspace[me].decode(), split.workspace[users].decode()
    assert _handlers(own) == ["read_me", "update_me"]
    assert _handlers(others) == ["read_profile", "read_team"]
    assert '"/users/me"' not in others
    main = split.workspace["app/main.py"].decode()
    me_name, users_name = (path.rsplit("/", 1)[1].removesuffix(".py") for path in (me, users))
    assert main.index(f"include_router({me_name}.router)") < main.index(
        f"include_router({users_name}.router)"
    )
    # two handlers a module: neither has siblings enough to stand out from
    scores = giveaways._asymmetry_scores(giveaways.python_files(split))
    assert me not in scores and users not in scores


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_the_sessions_router_serves_the_session_routes_and_signin_keeps_its_redirects(
    style: str,
) -> None:
    whole_spec = styles.restyled(_draft("F11", sessions_router=False), style)
    whole = compiler.compile_bundle(whole_spec)
    spec = styles.restyled(_draft("F11", sessions_router=True), style)
    split = compiler.compile_bundle(spec)
    signin, devices = _module(spec, "signin"), _module(spec, "devices")
    assert devices not in whole.workspace
    assert split.manifest.routes == whole.manifest.routes
    sessions = ["read_session", "list_sessions", "sign_out_everywhere"]
    assert _handlers(whole.workspace[_module(whole_spec, "signin")].decode())[:3] == sessions
    assert _handlers(split.workspace[devices].decode()) == sessions
    redirects = split.workspace[signin].decode()
    assert not set(_handlers(redirects)) & set(sessions)
    assert {"continue_after_sign_in", "sign_out"} & set(_handlers(redirects))
    # each module imports what it uses and nothing else
    for text in (redirects, split.workspace[devices].decode()):
        used = set(re.findall(r"\b(\w+)\b", text.split("\nrouter = ", 1)[1]))
        imported = re.findall(r"^from [\w.]+ import (.+)$|^import (\w+)$", text, re.M)
        for names in imported:
            for name in ", ".join(n for n in names if n).split(", "):
                assert name in used, (name, text)
    main = split.workspace["app/main.py"].decode()
    assert f"include_router({devices.rsplit('/', 1)[1].removesuffix('.py')}.router)" in main
    # two handlers: the sign-in router has no siblings enough to stand out from
    assert signin not in giveaways._asymmetry_scores(giveaways.python_files(split))
