"""Shared pieces of the test generator: the cast of a spec's world, its fixture, builders.

The fixture seeds every table the app creates (so state resets between tests) with rows whose
ids, names, tokens and canaries are all placeholders (``{{id:alice_private}}``), re-randomised
for every hidden run. :mod:`a01gym.factory.exploits` and :mod:`a01gym.factory.regressions`
build the tests from the helpers here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import families
from a01gym.scenario.httptest import (
    BodyContains,
    DbCheck,
    HttpTest,
    JsonEquals,
    StatusIn,
    Step,
    TestKind,
)
from a01gym.scenario.manifest import Fixture

if TYPE_CHECKING:  # the spec module imports the family registry, which imports this module
    from a01gym.factory.spec import ScenarioSpec

__all__ = [
    "SPOOF",
    "Cast",
    "build_fixture",
    "canary",
    "cast_file",
    "header_id",
    "id_of",
    "placeholder",
    "read_test",
    "spoof",
    "user_of",
    "write_test",
]


class Cast:
    """Who plays which part in a spec's world, and the placeholder names of their rows."""

    def __init__(self, spec: ScenarioSpec) -> None:
        self.spec = spec
        self.victim = spec.actor("user", "a", 0).name
        self.peer = spec.actor("user", "a", 1).name
        self.outsider = spec.actor("user", "b", 0).name
        self.outsider2 = spec.actor("user", "b", 1).name
        self.admin = spec.actor("admin").name
        roles = {a.role for a in spec.actors}
        self.support = spec.actor("support").name if "support" in roles else None
        self.manager = spec.actor("manager").name if "manager" in roles else None
        entity = spec.domain.entity
        self.table = entity.plural
        self.url = "/" + entity.plural.replace("_", "-")
        self.title = entity.title_field
        self.secret = entity.secret_field
        self.number = entity.number_field
        self.term = entity.search_term
        self.shared = spec.features.shared

    def team_row(self, owner: str) -> str:
        """The owner's second record: team-visible when sharing exists."""
        return f"{owner}_team" if self.shared else f"{owner}_second"


def placeholder(kind: str, name: str) -> str:
    return "{{" + kind + ":" + name + "}}"


def id_of(name: str) -> str:
    return placeholder("id", name)


def canary(name: str) -> str:
    return placeholder("canary", name)


def user_of(name: str) -> str:
    return placeholder("user", name)


def build_fixture(spec: ScenarioSpec) -> Fixture:
    """The seeded world as templates (every table the app has, so state resets per test)."""
    cast = Cast(spec)
    users: list[dict[str, object]] = []
    sessions: list[dict[str, object]] = []
    for actor in spec.actors:
        if actor.role == "anonymous":
            continue
        tenant = {"a": id_of("tenant_a"), "b": id_of("tenant_b"), None: None}[actor.tenant]
        if actor.role == "admin":
            tenant = id_of("tenant_a")
        users.append(
            {
                "id": id_of(actor.name),
                "tenant_id": tenant,
                "username": user_of(actor.name),
                "display_name": actor.display_name or actor.name.capitalize(),
                "email": user_of(actor.name) + "@example.test",
                "role": actor.role,
                "api_key": canary(f"{actor.name}_key"),
                "is_active": 1,
            }
        )
        sessions.append({"token": placeholder("token", actor.name), "user_id": id_of(actor.name)})
    samples = spec.domain.entity.title_samples
    records: list[dict[str, object]] = []
    plan = [
        (cast.victim, "a", "private", f"{cast.victim}_private"),
        (cast.victim, "a", "team" if cast.shared else "private", cast.team_row(cast.victim)),
        (cast.peer, "a", "private", f"{cast.peer}_private"),
        (cast.outsider, "b", "private", f"{cast.outsider}_private"),
        (cast.outsider2, "b", "team" if cast.shared else "private", cast.team_row(cast.outsider2)),
    ]
    for index, (owner, tenant, visibility, row) in enumerate(plan):
        records.append(
            {
                "id": id_of(row),
                "tenant_id": id_of(f"tenant_{tenant}"),
                "owner_id": id_of(owner),
                cast.title: samples[index % len(samples)],
                cast.secret: canary(row),
                cast.number: 100 * (index + 1),
                "visibility": visibility,
                "status": "open",
                "created_at": f"2024-0{index + 1}-1{index} 09:30:00",
            }
        )
    attachments = [
        (cast.victim, "report.txt", f"{cast.victim}_file"),
        (cast.victim, "reports/2024/q1.txt", f"{cast.victim}_nested"),
        (cast.peer, "notes.txt", f"{cast.peer}_file"),
        (cast.outsider, "plan.txt", f"{cast.outsider}_file"),
    ]
    tables: dict[str, list[dict[str, object]]] = {
        "tenants": [
            {"id": id_of("tenant_a"), "name": spec.domain.tenant_names[0]},
            {"id": id_of("tenant_b"), "name": spec.domain.tenant_names[1]},
        ],
        "users": users,
        "sessions": sessions,
        cast.table: records,
        "attachments": [
            {
                "id": id_of(f"file_{key}"),
                "owner_id": id_of(owner),
                "filename": name,
                "content": canary(key) + "\n",
            }
            for owner, name, key in attachments
        ],
        "audit_log": [
            {
                "id": id_of("audit_1"),
                "tenant_id": id_of("tenant_a"),
                "actor_id": id_of(cast.admin),
                "action": "review",
                "detail": f"quarterly access review {canary('audit')}",
            },
        ],
        "settings": [
            {"key": "service_key", "value": canary("service_key")},
            {"key": "smtp_host", "value": "mail.internal"},
        ],
        "tenant_settings": [
            {
                "tenant_id": id_of(f"tenant_{tenant}"),
                "currency": currency,
                "retention_days": 90,
                "webhook_url": "https://hooks.example.test/" + canary(f"webhook_{tenant}"),
            }
            for tenant, currency in (("a", "EUR"), ("b", "USD"))
        ],
    }
    for family_id in spec.families:
        extra = families.family(family_id).fixture
        for table, rows in (extra(cast) if extra is not None else {}).items():
            tables[table] = [*tables.get(table, []), *rows]
    return Fixture(tables=tables)


# -- small builders ---------------------------------------------------------------------------
SPOOF = {"X-Role": "admin"}


def header_id(name: str) -> str:
    """An id for a header value: a bare ``{{id:…}}`` renders to an int, which headers refuse,
    and ``int("+123")`` parses, so the app sees the same number."""
    return "+" + id_of(name)


def spoof(victim: str) -> dict[str, str]:
    return {**SPOOF, "X-User-Id": header_id(victim)}


def read_test(
    test_id: str,
    kind: TestKind,
    actor: str,
    path: str,
    secret: str,
    *,
    description: str,
    query: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> HttpTest:
    """A GET by ``actor`` whose response must contain the canary called ``secret``."""
    expect: list[Any] = [BodyContains(value=canary(secret))]
    if kind is TestKind.REGRESSION:
        expect.insert(0, StatusIn(statuses=[200]))
    return HttpTest(
        id=test_id,
        kind=kind,
        description=description,
        steps=[
            Step(actor=actor, path=path, query=query or {}, headers=headers or {}, expect=expect)
        ],
    )


def profile_test(
    test_id: str, kind: TestKind, actor: str, owner: str, *, description: str
) -> HttpTest:
    """A GET of ``owner``'s profile by ``actor`` that answers 200 with ``owner``'s username:
    a signed-in user's legitimate read, or an anonymous caller's attack."""
    return HttpTest(
        id=test_id,
        kind=kind,
        description=description,
        steps=[
            Step(
                actor=actor,
                path=f"/users/{id_of(owner)}",
                expect=[
                    StatusIn(statuses=[200]),
                    JsonEquals(path="username", value=user_of(owner)),
                ],
            )
        ],
    )


def write_test(
    test_id: str,
    kind: TestKind,
    actor: str,
    method: str,
    path: str,
    sql: str,
    params: list[Any],
    *,
    description: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    statuses: list[int] | None = None,
) -> HttpTest:
    expect = [StatusIn(statuses=statuses)] if statuses else []
    return HttpTest(
        id=test_id,
        kind=kind,
        description=description,
        steps=[
            Step(
                actor=actor,
                method=method,
                path=path,
                json=body,
                headers=headers or {},
                expect=expect,
            )
        ],
        db_checks=[DbCheck(sql=sql, params=params, expect="changed")],
    )


def cast_file(cast: Cast, owner: str) -> str:
    """The top-level file ``owner`` has in the fixture."""
    return {cast.victim: "report.txt", cast.peer: "notes.txt", cast.outsider: "plan.txt"}[owner]
