"""F17: an unauthenticated diagnostics page that shows service secrets."""

from __future__ import annotations

from typing import Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import debug_admin, public_guide
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY", "GUARDS", "guard"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    return [
        *public_guide(cast),
        debug_admin(cast),
    ]


FAMILY = Family(
    id="F17",
    title="Forced browsing to an unauthenticated debug route",
    cwes=("CWE-425", "CWE-497", "CWE-538"),
    sites=("debug.config",),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, vocabulary.AUTH_ONLY),
    regressions=_regressions,
)


GUARDS = ("knob", "inline", "mount")
"""Where the diagnostics page's admin guard is: as the ``indirection`` knob says (a
dependency, the router's dependencies or a decorator); an explicit role test in the handler;
or the ``dependencies`` of its ``include_router`` in the routers package."""


def guard(spec: Any) -> str:
    """Where ``spec``'s app guards ``/debug/config``."""
    return checkforms.draw(spec, "debug.config", GUARDS)
