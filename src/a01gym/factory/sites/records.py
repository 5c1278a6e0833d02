"""The record sites: the record routes (read, list, search, create, update, delete, archive)
and their reports (export, digest, print).

A read attack passes when the attacker's response carries the victim's canary, a write attack
when a read-only database query shows the victim's row changed (or a row planted in the
victim's name). Every attack sends the spoofable headers naming the victim, as a client-trust
"fix" would honour them.
"""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.sites.attack import Attack, Site
from a01gym.scenario.httptest import HttpTest

__all__ = ["SITES"]


def _record(a: Attack) -> str:
    return f"{a.cast.url}/{testkit.id_of(a.row)}"


def _read(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            _record(a),
            a.row,
            headers=a.forged,
            description=f"{a.attacker} reads {a.victim}'s private record",
        )
    ]


def _print(a: Attack) -> list[HttpTest]:
    path = f"/reports{_record(a)}"
    if not a.anonymous:
        return [
            testkit.read_test(
                a.id,
                a.kind,
                a.attacker,
                path,
                a.row,
                headers=a.forged,
                description=f"{a.attacker} reads {a.victim}'s private record",
            )
        ]
    return [
        testkit.read_test(
            f"{a.id}.anon",
            a.kind,
            "anonymous",
            path,
            a.row,
            description=f"anonymous prints {a.victim}'s private record",
        ),
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            path,
            a.row,
            headers=a.forged,
            description=f"{a.attacker} prints {a.victim}'s private record",
        ),
    ]


def _export(a: Attack) -> list[HttpTest]:
    path = f"/reports{a.cast.url}.csv"
    tests = [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            path,
            a.row,
            headers=a.forged,
            description=f"{a.attacker}'s export contains {a.victim}'s private record",
        )
    ]
    if a.anonymous:
        tests.append(
            testkit.read_test(
                f"{a.id}.anon",
                a.kind,
                "anonymous",
                path,
                a.row,
                description=f"anonymous export contains {a.victim}'s record",
            )
        )
    return tests


def _digest(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            f"/reports{a.cast.url}/digest",
            a.row,
            headers=a.forged,
            description=f"{a.attacker}'s digest contains {a.victim}'s private record",
        )
    ]


def _update(a: Attack) -> list[HttpTest]:
    c = a.cast
    return [
        testkit.write_test(
            a.id,
            a.kind,
            a.attacker,
            "PATCH",
            _record(a),
            f"SELECT {c.title}, {c.secret} FROM {c.table} WHERE id = ?",
            [testkit.id_of(a.row)],
            body={c.title: "tampered", c.secret: "tampered"},
            headers=a.forged,
            description=f"{a.attacker} edits {a.victim}'s record",
        )
    ]


def _delete(a: Attack) -> list[HttpTest]:
    return [
        testkit.write_test(
            a.id,
            a.kind,
            a.attacker,
            "DELETE",
            _record(a),
            f"SELECT COUNT(*) FROM {a.cast.table} WHERE id = ?",
            [testkit.id_of(a.row)],
            headers=a.forged,
            description=f"{a.attacker} deletes {a.victim}'s record",
        )
    ]


def _archive(a: Attack) -> list[HttpTest]:
    return [
        testkit.write_test(
            a.id,
            a.kind,
            a.attacker,
            "POST",
            f"{_record(a)}/archive",
            f"SELECT status FROM {a.cast.table} WHERE id = ?",
            [testkit.id_of(a.row)],
            headers=a.forged,
            description=f"{a.attacker} archives {a.victim}'s record",
        )
    ]


def _list(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            a.cast.url,
            a.row,
            headers=a.forged,
            query={"owner_id": testkit.id_of(a.victim), "tenant_id": testkit.id_of("tenant_a")},
            description=f"{a.attacker} lists {a.victim}'s private records",
        )
    ]


def _search(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            f"{a.cast.url}/search",
            a.row,
            headers=a.forged,
            query={"q": a.cast.term, "tenant_id": testkit.id_of("tenant_a")},
            description=f"{a.attacker}'s search returns {a.victim}'s private record",
        )
    ]


def _create(a: Attack) -> list[HttpTest]:
    c = a.cast
    other = "tenant_b" if c.spec.actor("user", "a", 0).name == a.victim else "tenant_a"
    return [
        testkit.write_test(
            a.id,
            a.kind,
            a.attacker,
            "POST",
            c.url,
            f"SELECT COUNT(*) FROM {c.table} WHERE owner_id = ? AND tenant_id = ?",
            [testkit.id_of(a.victim), testkit.id_of(other)],
            body={
                c.title: "planted",
                c.secret: "planted",
                "owner_id": testkit.id_of(a.victim),
                "tenant_id": testkit.id_of(other),
            },
            description=f"{a.attacker} plants a record owned by {a.victim}",
        )
    ]


SITES = (
    Site(id="record.read", clause="record.read", exploits=_read),
    Site(id="record.update", clause="record.update", exploits=_update),
    Site(id="record.delete", clause="record.delete", exploits=_delete),
    Site(id="record.archive", clause="record.archive", exploits=_archive),
    Site(id="record.list", clause="record.list", exploits=_list),
    Site(id="record.search", clause="record.list", exploits=_search),
    Site(id="record.export", clause="record.export", exploits=_export),
    Site(id="record.digest", clause="record.export", exploits=_digest),
    Site(id="record.print", clause="record.read", exploits=_print),
    Site(id="record.create", clause="record.create", exploits=_create),
)
"""The record sites, in the order the guard tests visit them."""
