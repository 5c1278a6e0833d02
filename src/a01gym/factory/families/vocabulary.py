"""The factory's words for how a site is rendered and how a fix can go wrong: modes and traps.

A *mode* is how the renderer writes one site (:class:`Mode`: the correct check, the injected
bug, a refusal of everyone, a hard-coded check); a trap renders the sites it targets in a mode
named after itself. A *trap* (:class:`Trap`) is a plausible wrong fix that the hidden tests
must reject (research/a01-catalog.md §2.2): the gates check that none resolves a scenario and
that each trap which works by refusing legitimate use is caught by some regression test. The
traps here are the ones several families share or the mutator builds from the variant itself
(removed routes, a login middleware, hard-coded ids); a family's own traps live in its module.
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = [
    "ADMIN_BREAK",
    "AUTH_ONLY",
    "CLIENT_TRUST",
    "DELETE_ROUTE",
    "DENY_ALL",
    "FIX_ONE_SIBLING",
    "GLOBAL_AUTH",
    "HARDCODE",
    "OVER_FILTER",
    "STATUS_ONLY",
    "Mode",
    "Trap",
]


class Mode(enum.StrEnum):
    """The modes every shared site can be rendered in (a trap's mode is the trap's name)."""

    SECURE = "secure"
    """The correct check: the reference fix."""
    VULN = "vuln"
    """The injected bug."""
    DENY = "deny"
    """Everyone refused (what ``deny_all`` renders)."""
    HARDCODE = "hardcode"
    """A check against the ids the agent saw (what ``hardcode`` renders)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Trap:
    """A wrong fix: its name (the key of ``hidden.traps``), what it does, and whether it
    works by refusing legitimate use (then some regression test must catch it, not only the
    exploits)."""

    name: str
    doc: str
    breaks_legitimate_use: bool = False


FIX_ONE_SIBLING = Trap(
    name="fix_one_sibling", doc="only the first of several vulnerable sites fixed"
)
DENY_ALL = Trap(
    name="deny_all", doc="every request to the vulnerable sites refused", breaks_legitimate_use=True
)
DELETE_ROUTE = Trap(
    name="delete_route", doc="the vulnerable routes removed", breaks_legitimate_use=True
)
GLOBAL_AUTH = Trap(name="global_auth", doc="a middleware that makes every path require sign-in")
HARDCODE = Trap(
    name="hardcode", doc="the check compares with the ids and names of the agent's own world"
)
STATUS_ONLY = Trap(
    name="status_only", doc="the refusal comes after the action, or carries the data it refuses"
)
CLIENT_TRUST = Trap(name="client_trust", doc="the check trusts a header the client sends")
ADMIN_BREAK = Trap(
    name="admin_break",
    doc="the fix also refuses administrators what they may do",
    breaks_legitimate_use=True,
)
OVER_FILTER = Trap(
    name="over_filter",
    doc="the fix hides rows the caller may legitimately see",
    breaks_legitimate_use=True,
)
AUTH_ONLY = Trap(name="auth_only", doc="the fix checks that the caller signed in, not who they are")
