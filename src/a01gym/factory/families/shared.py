"""Regression tests more than one family adds (the public guide, the caller's own account)."""

from __future__ import annotations

from typing import Any

from a01gym.factory import testkit
from a01gym.scenario.httptest import HttpTest, JsonEquals, StatusIn, Step, TestKind

__all__ = [
    "R",
    "frontend_origin",
    "member_settings",
    "own_account",
    "public_guide",
    "public_profile",
]

R = TestKind.REGRESSION


def public_guide(cast: testkit.Cast) -> list[HttpTest]:
    """The administrator guide stays public (defeats login-everywhere fixes)."""
    return [
        HttpTest(
            id="regression.public_guide",
            kind=R,
            description="the administrator guide stays public",
            steps=[Step(path="/admin-guide", expect=[StatusIn(statuses=[200])])],
        )
    ]


def own_account(cast: testkit.Cast) -> list[HttpTest]:
    """The account holder still reads their private fields on ``/users/me``."""
    v = cast.victim
    return [
        testkit.read_test(
            "regression.me",
            R,
            v,
            "/users/me",
            f"{v}_key",
            description="a user reads their own account, private fields included",
        )
    ]


def public_profile(cast: testkit.Cast) -> HttpTest:
    """Another user's public profile stays readable to anyone signed in (defeats "every
    profile private" fixes)."""
    v, p = cast.victim, cast.peer
    return HttpTest(
        id="regression.profile_public",
        kind=R,
        description="public profiles keep their public fields",
        steps=[
            Step(
                actor=p,
                path=f"/users/{testkit.id_of(v)}",
                expect=[
                    StatusIn(statuses=[200]),
                    JsonEquals(path="username", value=testkit.user_of(v)),
                ],
            )
        ],
    )


def member_settings(cast: testkit.Cast) -> HttpTest:
    """A member, not only an administrator, still reads their own tenant's settings."""
    return testkit.read_test(
        "regression.member_settings",
        R,
        cast.peer,
        "/tenant/settings",
        "webhook_a",
        description="members read their tenant's settings",
    )


def frontend_origin(spec: Any) -> str:
    """The web front end of the spec's app (the origin its browser pages come from)."""
    return f"https://{spec.domain.id.replace('_', '-')}.example.test"
