"""Regression tests more than one family adds (the public guide, the caller's own account)."""

from __future__ import annotations

from typing import Any

from a01gym.factory import testkit
from a01gym.scenario.httptest import HttpTest, StatusIn, Step, TestKind

__all__ = ["R", "frontend_origin", "own_account", "public_guide"]

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


def frontend_origin(spec: Any) -> str:
    """The web front end of the spec's app (the origin its browser pages come from)."""
    return f"https://{spec.domain.id.replace('_', '-')}.example.test"
