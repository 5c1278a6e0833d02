"""F02: the read route checks ownership, its write and delete siblings do not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import shared, vocabulary
from a01gym.factory.families.base import Family
from a01gym.scenario.httptest import HttpTest

if TYPE_CHECKING:
    from a01gym.factory.spec import PolicyFeatures

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    spec, sites = cast.spec, set(cast.spec.bug.sites)
    tests: list[HttpTest] = []
    add = tests.append
    if "record.update" in sites:
        add(shared.owner_update(cast))
        if spec.features.admin_edits:
            add(shared.admin_update(cast))
    if "record.archive" in sites:
        add(shared.owner_archive(cast))
        if spec.features.admin_edits:
            add(shared.admin_archive(cast))
    if "record.delete" in sites:
        add(shared.owner_delete(cast))
        add(shared.admin_delete(cast))
    return tests


def _trap_applies(trap: str, sites: list[str], features: PolicyFeatures) -> bool:
    """``admin_break`` is seen only where an administrator's write is a regression test."""
    return trap != "admin_break" or "record.delete" in sites or features.admin_edits


FAMILY = Family(
    id="F02",
    title="Ownership checked on read but not on write/delete siblings",
    cwes=("CWE-639", "CWE-862", "CWE-285"),
    sites=("record.update", "record.delete", "record.archive"),
    traps=(
        vocabulary.DENY_ALL,
        vocabulary.DELETE_ROUTE,
        vocabulary.STATUS_ONLY,
        vocabulary.CLIENT_TRUST,
        vocabulary.HARDCODE,
        vocabulary.ADMIN_BREAK,
    ),
    regressions=_regressions,
    check_forms={"record.write": checkforms.PLAIN_FORMS},
    trap_applies=_trap_applies,
)
