"""F09: an over-broad response model that exposes other users' private fields."""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R, own_account
from a01gym.scenario.httptest import BodyContains, HttpTest, JsonEquals, StatusIn, Step

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v, p = cast.victim, cast.peer
    return [
        *own_account(cast),
        HttpTest(
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
        ),
        HttpTest(
            id="regression.team",
            kind=R,
            description="the team listing names teammates",
            steps=[
                Step(
                    actor=v,
                    path="/team",
                    expect=[StatusIn(statuses=[200]), BodyContains(value=testkit.user_of(p))],
                )
            ],
        ),
    ]


FAMILY = Family(
    "F09",
    "Over-broad response model (excessive data exposure)",
    "CWE-200",
    ("CWE-200", "CWE-201", "CWE-359"),
    OWASP_A01,
    ("profile.view", "team.list"),
    ("over_filter", "status_only", "delete_route"),
    regressions=_regressions,
)
