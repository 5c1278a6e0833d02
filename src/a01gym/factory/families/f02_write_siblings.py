"""F02: the read route checks ownership, its write and delete siblings do not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import shared, vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest

if TYPE_CHECKING:
    from a01gym.factory.spec import PolicyFeatures

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    spec, sites = cast.spec, set(cast.spec.bug.sites)
    adm, op = cast.admin, f"{cast.outsider}_private"
    tests: list[HttpTest] = []
    add = tests.append
    if "record.update" in sites:
        add(shared.owner_update(cast))
        if spec.features.admin_edits:
            add(
                testkit.write_test(
                    "regression.admin_update",
                    R,
                    adm,
                    "PATCH",
                    f"{cast.url}/{testkit.id_of(op)}",
                    f"SELECT {cast.title} FROM {cast.table} WHERE id = ?",
                    [testkit.id_of(op)],
                    body={cast.title: "Moderated"},
                    statuses=[200],
                    description="an administrator edits any record",
                )
            )
    if "record.archive" in sites:
        add(shared.owner_archive(cast))
        if spec.features.admin_edits:
            add(
                testkit.write_test(
                    "regression.admin_archive",
                    R,
                    adm,
                    "POST",
                    f"{cast.url}/{testkit.id_of(op)}/archive",
                    f"SELECT status FROM {cast.table} WHERE id = ?",
                    [testkit.id_of(op)],
                    statuses=[200],
                    description="an administrator archives any record",
                )
            )
    if "record.delete" in sites:
        add(shared.owner_delete(cast))
        add(
            testkit.write_test(
                "regression.admin_delete",
                R,
                adm,
                "DELETE",
                f"{cast.url}/{testkit.id_of(op)}",
                f"SELECT COUNT(*) FROM {cast.table} WHERE id = ?",
                [testkit.id_of(op)],
                statuses=[204],
                description="an administrator deletes any record",
            )
        )
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
