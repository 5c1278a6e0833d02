"""The caller's own account in a router of its own (``Layout.account_router``): drawn in half
the drafts, rendered as ``app/routers/me.py`` (renamed like any router), serving the same
routes as the users router did, included before it (the users router's ``/users/{user_id}``
would take ``/users/me``), and leaving neither router two handlers short of a check."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from a01gym.factory import author, compiler, config, giveaways, layoutdraw, styles
from a01gym.factory.spec import Layout, ScenarioSpec


def _draft(family: str, account_router: bool) -> ScenarioSpec:
    request = next(iter(author.plan(config.FactoryConfig(count=1, families=[family], seed=3))))
    spec = author.TemplateAuthor().draft(request)
    layout = spec.layout.model_copy(update={"account_router": account_router})
    return spec.model_copy(update={"layout": layout})


def test_half_the_drafts_split_the_account_and_only_they_name_its_router(
    drawn_layouts: list[Layout], assert_layout_share: Callable[[str, float], None]
) -> None:
    assert_layout_share("account_router", layoutdraw.ACCOUNT_ROUTER_SHARE)
    assert not any("me" in d.areas for d in drawn_layouts if not d.account_router)
    spellings = {d.areas["me"] for d in drawn_layouts if "me" in d.areas}
    assert spellings == {"myself", "self_service"}


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_the_split_app_serves_the_same_routes_with_me_included_first(style: str) -> None:
    whole = compiler.compile_bundle(styles.restyled(_draft("F09", False), style))
    spec = styles.restyled(_draft("F09", True), style)
    split = compiler.compile_bundle(spec)
    package = f"app/{spec.layout.routers}"
    users = f"{package}/{spec.layout.areas.get('users', 'users')}.py"
    me = f"{package}/{spec.layout.areas.get('me', 'me')}.py"
    assert me not in whole.workspace
    assert split.manifest.routes == whole.manifest.routes
    own, others = split.workspace[me].decode(), split.workspace[users].decode()
    assert re.findall(r"^def (\w+)\(", own, re.M) == ["read_me", "update_me"]
    assert re.findall(r"^def (\w+)\(", others, re.M) == ["read_profile", "read_team"]
    assert '"/users/me"' not in others
    main = split.workspace["app/main.py"].decode()
    me_name, users_name = (path.rsplit("/", 1)[1].removesuffix(".py") for path in (me, users))
    assert main.index(f"include_router({me_name}.router)") < main.index(
        f"include_router({users_name}.router)"
    )
    # two handlers a module: neither has siblings enough to stand out from
    scores = giveaways._asymmetry_scores(giveaways.python_files(split))
    assert me not in scores and users not in scores
