"""F09: an over-broad response model that exposes other users' private fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R, own_account
from a01gym.scenario.httptest import BodyContains, HttpTest, JsonEquals, StatusIn, Step

if TYPE_CHECKING:
    from a01gym.factory.sites import Attack

__all__ = ["FAMILY", "STYLES", "view"]


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


def _extra_exploits(a: Attack) -> list[HttpTest]:
    """The team listing also shows the tenant's administrator's private fields: a fix that
    hides only the fields of users like the caller misses them."""
    if a.site != "team.list" or a.victim != a.cast.victim:
        return []
    return [
        testkit.read_test(
            f"{a.id}.admin",
            a.kind,
            a.attacker,
            "/team",
            f"{a.cast.admin}_key",
            description=f"{a.attacker}'s team listing exposes the administrator's private fields",
        )
    ]


FAMILY = Family(
    id="F09",
    title="Over-broad response model (excessive data exposure)",
    cwes=("CWE-200", "CWE-201", "CWE-359"),
    sites=("profile.view", "team.list"),
    traps=(vocabulary.OVER_FILTER, vocabulary.STATUS_ONLY, vocabulary.DELETE_ROUTE),
    regressions=_regressions,
    extra_exploits=_extra_exploits,
)


# -- how an app keeps private fields out of a profile view (drawn per scenario) ------------
STYLES = ("response_model", "projection", "include")
"""``response_model``: the route declares ``UserPublic``; ``projection``: the handler returns
``UserPublic.model_validate(...).model_dump()`` and the route declares no model;
``include``: the route keeps ``UserPrivate`` but lists the public fields in
``response_model_include``. The vulnerable route returns the private model."""

_PUBLIC = '{"id", "username", "display_name"}'


def view(spec: Any, mode: str, many: bool, value: str) -> tuple[str, str]:
    """The route decorator's model arguments and the handler's return expression for a view
    of users that returns ``value`` (a list of rows when ``many``)."""
    style = checkforms.draw(spec, "profile.view", STYLES)
    private = "list[models.UserPrivate]" if many else "models.UserPrivate"
    public = "list[models.UserPublic]" if many else "models.UserPublic"
    if mode in ("vuln", "status_only"):
        extra = ", response_model_exclude_none=True" if mode == "status_only" else ""
        return f"response_model={private}{extra}", value
    if style == "include" and mode == "secure":
        include = f'{{"__all__": {_PUBLIC}}}' if many else _PUBLIC
        return f"response_model={private}, response_model_include={include}", value
    if style == "projection" and mode == "secure":
        if many:
            projected = f"[models.UserPublic.model_validate(row).model_dump() for row in {value}]"
        else:
            projected = f"models.UserPublic.model_validate({value}).model_dump()"
        return "response_model=None", projected
    return f"response_model={public}", value
