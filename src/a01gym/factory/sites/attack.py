"""What a site is to the test generator, and one attack on it (the arguments every site's
exploits take).

:class:`Site` is the registry's entry (:mod:`a01gym.factory.sites`); :class:`Attack` names
who attacks whom at which site, so each site's exploits are one small function of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from a01gym.factory import testkit
from a01gym.scenario.httptest import HttpTest, TestKind

__all__ = ["Attack", "Exploits", "Site"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Attack:
    """``attacker`` attacks ``victim`` at ``site``; the tests are ``kind`` tests whose ids
    start with ``tag``.

    ``anonymous``: the family's bug leaves the site without its authentication dependency
    (``Family.unauthenticated``), so the attacks include an anonymous caller's.
    """

    cast: testkit.Cast
    site: str
    attacker: str
    victim: str
    tag: str
    kind: TestKind
    anonymous: bool = False

    @property
    def id(self) -> str:
        """The id of the site's main attack test (others add a suffix)."""
        return f"{self.tag}.{self.site}.{self.attacker}"

    @property
    def row(self) -> str:
        """The victim's private record (the row every record attack is after)."""
        return f"{self.victim}_private"

    @property
    def forged(self) -> dict[str, str]:
        """Spoofable headers naming the victim, which a client-trust "fix" would honour."""
        return testkit.spoof(self.victim)


Exploits = Callable[[Attack], list[HttpTest]]
"""A site's attacks: tests that pass while its check is missing and fail once it holds."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Site:
    """One shared site: its id, its attacks and what an attack on it can mean.

    ``same_tenant_only``: an attack from the other tenant proves nothing beyond the same
    tenant's (the site acts on the caller's own account or tenant); ``route``: the site is a
    route the ``delete_route`` trap can remove (not a shared function); ``clause``: the key of
    the policy clause the site's check keeps (:func:`a01gym.factory.compiler.policy_clauses`).
    """

    id: str
    clause: str
    exploits: Exploits
    same_tenant_only: bool = False
    route: bool = True
