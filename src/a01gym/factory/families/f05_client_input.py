# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F05: an authorization decision taken from a header the client controls."""

from __future__ import annotations

import dataclasses
from typing import Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import admin_act_as, own_account
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY", "STRUCTURES", "ActingCheck", "acting_check"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    return [
        *own_account(cast),
        admin_act_as(cast),
    ]


FAMILY = Family(
    id="F05",
    title="Authorization decision based on client-controlled input",
    cwes=("CWE-807", "CWE-639", "CWE-290"),
    sites=("auth.impersonate",),
    traps=(vocabulary.CLIENT_TRUST, vocabulary.HARDCODE, vocabulary.ADMIN_BREAK),
    regressions=_regressions,
)


# -- where an app decides who may act as another user (drawn per scenario) ----------------
STRUCTURES = ("inline", "predicate", "config_roles", "user_property", "refuse", "authenticated")
"""``inline``: the role test in ``optional_user``'s ``if``; ``predicate``: a
``may_act_as`` function; ``config_roles``: a role list in ``config.py``; ``user_property``:
a ``CurrentUser.can_act_as`` property; ``refuse``: a separate block that answers 403 to
anyone else who sends the header (missing altogether in the vulnerable app);
``authenticated``: an ``ensure_may_act_as`` guard that the vulnerable app has too, but that
only asks whether the caller signed in, not whether they are an administrator."""

_ALL_ROLES = '("admin", "support", "manager", "user")'


@dataclasses.dataclass(frozen=True)
class ActingCheck:
    """The impersonation decision of ``security.optional_user`` and what it needs elsewhere:
    ``acting`` replaces the ``if`` that switches to the target user (with any lines before
    it), ``helper`` is a module-level function of ``security.py``, ``property`` a property of
    ``CurrentUser``, ``config`` lines of ``config.py``."""

    acting: str
    helper: str = ""
    property: str = ""
    config: str = ""


def acting_check(spec: Any, mode: str, victim: str) -> ActingCheck:
    """How ``spec``'s app decides impersonation in ``mode`` (``victim``: the hard-coded id)."""
    structure = checkforms.draw(spec, "auth.impersonate", STRUCTURES)
    role_test = {
        "inline": "user.is_admin",
        "predicate": "user.is_admin",
        "config_roles": "user.role in config.IMPERSONATOR_ROLES",
        "user_property": "user.can_act_as",
    }.get(structure, "user.is_admin")
    header_role = 'request.headers.get("X-Role", "").lower() == "admin"'
    # What refuses to act as someone else, per mode (``vuln`` differs by structure).
    refusals = {
        "client_trust": f"acting_as and (user is None or not (user.is_admin or {header_role}))",
        "hardcode": f'acting_as and acting_as.strip() == "{victim}"',
        "admin_break": "acting_as",
    }
    secure = "acting_as and (user is None or not user.is_admin)"
    if structure == "authenticated":
        refuse = {"vuln": "acting_as and user is None", **refusals}.get(mode, secure)
        helper = (
            "def ensure_may_act_as(user: CurrentUser | None, acting_as: str | None, request: Request) -> None:\n"
            '    """Only administrators act as other users (support cases)."""\n'
            f"    if {refuse}:\n"
            '        raise HTTPException(status.HTTP_403_FORBIDDEN, "only administrators act as others")'
        )
        return ActingCheck(
            "ensure_may_act_as(user, acting_as, request)\n    if user is not None and acting_as:",
            helper=helper,
        )
    if structure == "refuse":
        refuse = {"vuln": "", **refusals}.get(mode, secure)
        block = (
            f"if {refuse}:\n"
            '        raise HTTPException(status.HTTP_403_FORBIDDEN, "only administrators act as others")\n'
            "    "
            if refuse
            else ""
        )
        return ActingCheck(block + "if user is not None and acting_as:")
    condition = {
        "vuln": "user is not None and acting_as",
        "client_trust": (
            f"user is not None and acting_as and (\n        {role_test} or {header_role}\n    )"
        ),
        "hardcode": f'user is not None and acting_as and acting_as.strip() != "{victim}"',
        "admin_break": "False and acting_as",
    }.get(mode, f"user is not None and acting_as and {role_test}")
    if structure in ("config_roles", "user_property"):
        if mode == "vuln":  # the role test is there, but every role passes it
            condition = f"user is not None and acting_as and {role_test}"
        roles = _ALL_ROLES if mode == "vuln" else '("admin",)'
        if structure == "config_roles":
            return ActingCheck(f"if {condition}:", config=f"IMPERSONATOR_ROLES = {roles}")
        prop = (
            "@property\n"
            "def can_act_as(self) -> bool:\n"
            '    """Whether this user may act as another one (support cases)."""\n'
            f"    return self.role in {roles}"
        )
        return ActingCheck(f"if {condition}:", property=prop)
    if structure == "predicate":
        helper = (
            "def may_act_as(user: CurrentUser | None, acting_as: str | None, request: Request) -> bool:\n"
            '    """Whether the caller may switch to the user named in the impersonation header."""\n'
            f"    return bool({condition.replace(chr(10) + '    ', chr(10))})"
        )
        return ActingCheck("if may_act_as(user, acting_as, request):", helper=helper)
    return ActingCheck(f"if {condition}:")
