"""F09: an over-broad response model that exposes other users' private fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R, own_account, public_profile
from a01gym.scenario.httptest import BodyContains, HttpTest, StatusIn, Step

if TYPE_CHECKING:
    from a01gym.factory.sites import Attack

__all__ = ["FAMILY", "STYLES", "view"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    """The legitimate views: the holder's and an administrator's private view of a profile
    (a fix that makes every profile public fails them), another user's public view, and the
    team listing."""
    v, p, adm = cast.victim, cast.peer, cast.admin
    return [
        *own_account(cast),
        testkit.read_test(
            "regression.profile_holder",
            R,
            v,
            f"/users/{testkit.id_of(v)}",
            f"{v}_key",
            description="the account holder sees their own profile's private fields",
        ),
        testkit.read_test(
            "regression.profile_admin",
            R,
            adm,
            f"/users/{testkit.id_of(v)}",
            f"{v}_key",
            description="an administrator sees a profile's private fields",
        ),
        public_profile(cast),
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


PUBLIC_TO_ALL = vocabulary.Trap(
    name="public_to_all",
    doc="every profile shown public, to its holder and administrators too",
    breaks_legitimate_use=True,
)
"""The fix the policy's line on private fields does not allow: a profile shows its private
fields to the account holder and administrators (until 2026-12-07 this was the reference, and
"every profile public" passed every hidden test)."""


FAMILY = Family(
    id="F09",
    title="Over-broad response model (excessive data exposure)",
    cwes=("CWE-200", "CWE-201", "CWE-359"),
    sites=("profile.view", "team.list"),
    traps=(vocabulary.OVER_FILTER, vocabulary.STATUS_ONLY, vocabulary.DELETE_ROUTE, PUBLIC_TO_ALL),
    trap_sites={PUBLIC_TO_ALL.name: "profile.view"},
    regressions=_regressions,
    extra_exploits=_extra_exploits,
)


# -- how an app keeps private fields out of a view (drawn per scenario) --------------------
STYLES = ("response_model", "projection", "include")
"""How the secure view shows a caller the public fields only. ``response_model``: the team
route declares ``list[UserPublic]``, the profile returns a ``UserPublic``; ``projection``:
``UserPublic.model_validate(...).model_dump()``; ``include``: the team route keeps
``list[UserPrivate]`` and lists the public fields in ``response_model_include``, the profile
dumps a ``UserPrivate`` with ``include``. The vulnerable team view returns the private model to
every caller; the vulnerable profile answers the holder and administrators as the secure one
does and anyone else with the stored row itself, every column of it (with no response model
left to filter it). Until 2026-12-07 it had no such branch, and the branch the fix added made
F09's users router the file differing most from the nearest app (``nearest_diff``: 2.5 of 28
F09 drafts over seeds 28 and 31, 2.8x chance, against none before)."""

_PUBLIC = '{"id", "username", "display_name"}'


def view(spec: Any, mode: str, many: bool, value: str) -> tuple[str, str, str]:
    """The route decorator's model arguments, the handler's closing statements and its return
    annotation for the team's view of users (a list of rows, ``many``) or a profile ``value``.

    A secure profile answers by caller: the holder and administrators see the private fields,
    anyone else the public ones (its statements test the handler's ``user`` and ``user_id``;
    a statement's continuation lines are indented for a top-level handler's body).
    """
    style = checkforms.draw(spec, "profile.view", STYLES)
    private = "list[models.UserPrivate]" if many else "models.UserPrivate"
    public = "list[models.UserPublic]" if many else "models.UserPublic"
    rows = "list[dict[str, Any]]" if many else "dict[str, Any]"
    if mode == "status_only" or (mode == "vuln" and many):
        extra = ", response_model_exclude_none=True" if mode == "status_only" else ""
        return f"response_model={private}{extra}", f"return {value}", rows
    if many:
        if style == "include" and mode == "secure":
            include = f'{{"__all__": {_PUBLIC}}}'
            return (
                f"response_model={private}, response_model_include={include}",
                f"return {value}",
                rows,
            )
        if style == "projection" and mode == "secure":
            projected = f"[models.UserPublic.model_validate(row).model_dump() for row in {value}]"
            return "response_model=None", f"return {projected}", rows
        return f"response_model={public}", f"return {value}", rows
    if mode not in ("secure", "vuln"):
        return f"response_model={public}", f"return {value}", rows
    shown = {
        "response_model": f"models.UserPublic.model_validate({value})",
        "projection": f"models.UserPublic.model_validate({value}).model_dump()",
        "include": f"models.UserPrivate.model_validate({value}).model_dump(include={_PUBLIC})",
    }[style]
    full = f"models.UserPrivate.model_validate({value})"
    if style != "response_model":
        full += ".model_dump()"
    return (
        "response_model=None",
        f"if user.id == user_id or user.is_admin:\n        return {full}\n"
        f"    return {value if mode == 'vuln' else shown}",
        "models.UserPrivate | models.UserPublic" if style == "response_model" else rows,
    )
