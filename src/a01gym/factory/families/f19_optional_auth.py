# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F19: an optional-auth dependency used where the handler needs a signed-in caller.

The app gets ``app/routers/feed.py`` (on ``app/listings.py``, :data:`plumbing.LISTINGS`).
``GET /feed`` is public on purpose (anonymous visitors see the public counter, signed-in
users also their own records, administrators any owner's), and ``GET /activity/{user_id}`` is
a user's own page. Both take ``security.optional_user``.
Sites: ``optional.feed`` (an anonymous caller's ``owner_id`` is honoured as if the server had
asked) and ``optional.activity`` (``None`` is waved through the ownership check). The
``require_login`` trap makes every caller sign in, which breaks the public feed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import plumbing, vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest, JsonEquals, StatusIn, Step, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY"]

_FEED = {
    "secure": """
        if user is None:
            owner = None
        else:
            owner = owner_id if owner_id is not None and user.is_admin else user.id
        """,
    "vuln": """
        if user is None or user.is_admin:
            owner = owner_id
        else:
            owner = user.id
        """,
    "deny": """
        owner = None
        """,
    "hardcode": """
        if user is None:
            owner = owner_id if owner_id is not None and owner_id != $victim else None
        else:
            owner = owner_id if owner_id is not None and user.is_admin else user.id
        """,
}
_FEED_HELPER = {
    "secure": """
        if user is None:
            return None
        if owner_id is not None and user.is_admin:
            return owner_id
        return user.id
        """,
    "vuln": """
        if user is not None and not user.is_admin:
            return user.id
        return owner_id
        """,
    "deny": """
        return None
        """,
    "hardcode": """
        if user is None:
            return owner_id if owner_id is not None and owner_id != $victim else None
        if owner_id is not None and user.is_admin:
            return owner_id
        return user.id
        """,
}
"""The feed's choice of owner as a function of its own (the other phrasing of ``_FEED``)."""
_ACTIVITY = {
    "secure": "user is None or (user.id != user_id and not user.is_admin)",
    "vuln": "user is not None and user.id != user_id and not user.is_admin",
    "deny": "True",
    "hardcode": "(user is None and user_id == $victim) or (user is not None and user.id != user_id and not user.is_admin)",
}


def _app(r: Renderer) -> FamilyApp:
    handlers: list[str] = []
    helpers: list[str] = []
    victim = r.v.hardcode.get("owner_id", "0")
    # the trap makes every optional dependency required, whichever site it was aimed at
    everywhere = any(r.v.mode(site) == "require_login" for site in FAMILY.sites)
    dependency = "security.current_user" if everywhere else "security.optional_user"
    user_type = "CurrentUser" if everywhere else "CurrentUser | None"

    if "optional.feed" not in r.v.removed:
        r.route("GET", "/feed")
        mode = r.v.mode("optional.feed")
        as_function = checkforms.draw(r.spec, "optional.feed", ("inline", "function")) == "function"
        choose = r.t(_FEED.get(mode, _FEED["secure"]), victim=victim)
        if as_function:
            body = r.t(_FEED_HELPER.get(mode, _FEED_HELPER["secure"]), victim=victim)
            if everywhere:
                body = "return owner_id if owner_id is not None and user.is_admin else user.id"
            helpers.append(
                f"def _feed_owner(user: {user_type}, owner_id: int | None) -> int | None:\n"
                '    """Whose records the feed lists (None: only the public counter)."""\n'
                + body.replace("\n", "\n    ").join(["    ", ""])
            )
            choose = "owner = _feed_owner(user, owner_id)"
        elif everywhere:
            choose = "owner = owner_id if owner_id is not None and user.is_admin else user.id"
        handlers.append(
            r.t(
                '''
                @router.get("/feed")
                def read_feed(
                    owner_id: int | None = None,
                    user: $user_type = Depends($dependency),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, Any]:
                    """Public counter for visitors; signed-in users also get their own $ents."""
                $choose
                    items = listings.owned_by(connection, owner) if owner is not None else []
                    return {"signed_in": user is not None, "$ents": repository.${Ent}Repository(connection).count(), "items": items}
                ''',
                choose=choose.replace("\n", "\n    ").join(["    ", ""]),
                user_type=user_type,
                dependency=dependency,
            )
        )
    if "optional.activity" not in r.v.removed:
        r.route("GET", "/activity/{user_id}")
        mode = r.v.mode("optional.activity")
        refuse = (
            "user.id != user_id and not user.is_admin"
            if mode == "require_login"
            else r.t(_ACTIVITY.get(mode, _ACTIVITY["secure"]), victim=victim)
        )
        form = checkforms.draw(r.spec, "optional.activity")
        guard = checkforms.Guard(
            form,
            {"predicate": "_not_viewable", "dependency": "activity_viewer"}.get(
                form, "_ensure_may_view_activity"
            ),
            f"user: {user_type}, user_id: int",
            "user, user_id",
            "HTTP_404_NOT_FOUND",
            "no such activity page",
            "An activity page is for its user and administrators.",
            f"user_id: int, user: {user_type} = Depends({dependency})",
            user_type,
        )
        if guard.helper(refuse):
            helpers.append(guard.helper(refuse))
        handlers.append(
            r.t(
                '''
                @router.get("/activity/{user_id}")
                def read_activity(
                    user_id: int,
                    user: $user_type = Depends($dependency),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> list[dict[str, Any]]:
                    """A user's own $ents, newest first (their activity page)."""
                    $check
                    return list(reversed(listings.owned_by(connection, user_id)))
                ''',
                check=guard.check(refuse, 4),
                user_type=user_type,
                dependency=guard.user_dependency(dependency),
            )
        )
    head = r.t(
        '''
        """The start page feed and users' activity pages."""

        import sqlite3
        from typing import Any

        from fastapi import APIRouter, Depends, HTTPException, status

        from app import db, listings, repository, security
        from app.security import CurrentUser

        router = APIRouter(tags=["feed"])
        '''
    )
    files = {"app/routers/feed.py": "\n\n\n".join([head, *helpers, *handlers]) + "\n"}
    if handlers:
        files["app/listings.py"] = r.t(plumbing.LISTINGS)
    return FamilyApp(files=files, routers=["feed"])


_MADE_UP = {"Authorization": "Bearer expired-or-made-up-token"}
"""A bearer token no account holds: the optional dependency reads it as no caller at all."""


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    """An anonymous visitor reads the victim's records, and (the first pair's attack) so does
    a caller whose token is not valid: a fix that refuses only a request without a token
    misses it."""
    if site == "optional.feed":
        path, query, where = "/feed", {"owner_id": testkit.id_of(victim)}, "from the feed"
    else:
        path, query, where = f"/activity/{testkit.id_of(victim)}", {}, "from their activity page"
    callers = [("", {}, "an anonymous visitor")]
    if victim == cast.victim:
        callers.append((".bad_token", _MADE_UP, "a caller with a made-up token"))
    return [
        testkit.read_test(
            f"{tag}.{site}{suffix}",
            TestKind.EXPLOIT,
            "anonymous",
            path,
            f"{victim}_private",
            query=query,
            headers=headers,
            description=f"{who} reads {victim}'s records {where}",
        )
        for suffix, headers, who in callers
    ]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v, adm, o = cast.victim, cast.admin, cast.outsider
    return [
        HttpTest(
            id="regression.feed_public",
            kind=R,
            description="visitors still get the public feed",
            steps=[
                Step(
                    path="/feed",
                    expect=[StatusIn(statuses=[200]), JsonEquals(path="signed_in", value=False)],
                )
            ],
        ),
        testkit.read_test(
            "regression.feed_own",
            R,
            v,
            "/feed",
            f"{v}_private",
            description="a signed-in user's feed lists their records",
        ),
        testkit.read_test(
            "regression.feed_admin",
            R,
            adm,
            "/feed",
            f"{o}_private",
            query={"owner_id": testkit.id_of(o)},
            description="an administrator looks at any user's feed",
        ),
        testkit.read_test(
            "regression.activity_own",
            R,
            v,
            f"/activity/{testkit.id_of(v)}",
            f"{v}_private",
            description="users open their own activity page",
        ),
        testkit.read_test(
            "regression.activity_admin",
            R,
            adm,
            f"/activity/{testkit.id_of(o)}",
            f"{o}_private",
            description="an administrator opens any activity page",
        ),
    ]


def _policy(spec: Any) -> list[str]:
    return [
        "The feed is public: visitors see the counter only, signed-in users also their "
        "own records, administrators any user's (owner_id). A user's activity page is for "
        "that user and administrators."
    ]


_REQUIRE_LOGIN = vocabulary.Trap(
    name="require_login",
    doc="every caller must sign in, which breaks the public pages",
    breaks_legitimate_use=True,
)

FAMILY = Family(
    id="F19",
    title="Optional-auth dependency misused as required",
    cwes=("CWE-862", "CWE-287"),
    sites=("optional.feed", "optional.activity"),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _REQUIRE_LOGIN, vocabulary.HARDCODE),
    cross_tenant=False,
    exploits=_exploits,
    app=_app,
    companion=True,
    regressions=_regressions,
    policy=_policy,
    hint_areas={"optional": "the public pages"},
)
