"""Regression tests more than one family adds (the public guide, the caller's own account), and
the first legitimate use of each clause of the skeleton's policy: a family whose bug sits on a
clause writes it, and every other suite gets it from ``regressions._clause_uses``."""

from __future__ import annotations

from typing import Any

from a01gym.factory import testkit
from a01gym.scenario.httptest import HttpTest, StatusIn, Step, TestKind

__all__ = [
    "R",
    "admin_act_as",
    "admin_archive",
    "admin_delete",
    "admin_settings",
    "admin_update",
    "admin_users",
    "debug_admin",
    "file_own",
    "frontend_origin",
    "member_settings",
    "own_account",
    "owner_archive",
    "owner_delete",
    "owner_update",
    "profile_update",
    "public_guide",
    "public_profile",
    "record_create",
]

R = TestKind.REGRESSION


def public_guide(cast: testkit.Cast) -> list[HttpTest]:
    """The administrator guide stays public (defeats login-everywhere fixes)."""
    return [
        HttpTest(
            id="regression.public_guide",
            kind=R,
            description="the administrator guide stays public",
            steps=[Step(path="/admin-guide", expect=[StatusIn(statuses=[200])])],
        )
    ]


def own_account(cast: testkit.Cast) -> list[HttpTest]:
    """The account holder still reads their private fields on ``/users/me``."""
    v = cast.victim
    return [
        testkit.read_test(
            "regression.me",
            R,
            v,
            "/users/me",
            f"{v}_key",
            description="a user reads their own account, private fields included",
        )
    ]


def public_profile(cast: testkit.Cast) -> HttpTest:
    """Another user's public profile stays readable to anyone signed in (defeats "every
    profile private" fixes)."""
    return testkit.profile_test(
        "regression.profile_public",
        R,
        cast.peer,
        cast.victim,
        description="public profiles keep their public fields",
    )


def member_settings(cast: testkit.Cast) -> HttpTest:
    """A member, not only an administrator, still reads their own tenant's settings."""
    return testkit.read_test(
        "regression.member_settings",
        R,
        cast.peer,
        "/tenant/settings",
        "webhook_a",
        description="members read their tenant's settings",
    )


_RECORD_WRITES = {
    "update": ("PATCH", "", "{title}", 200),
    "archive": ("POST", "/archive", "status", 200),
    "delete": ("DELETE", "", "COUNT(*)", 204),
}
"""A record write: its method, the path after the record's, the column it changes, and the
status a permitted one answers."""


def _record_write(
    cast: testkit.Cast,
    verb: str,
    actor: str,
    row: str,
    *,
    who: str,
    description: str,
    body: Any = None,
) -> HttpTest:
    """``actor`` (``who`` in the id: ``regression.<who>_<verb>``) still ``verb``s ``row``, and
    the database shows it."""
    method, suffix, column, status = _RECORD_WRITES[verb]
    return testkit.write_test(
        f"regression.{who}_{verb}",
        R,
        actor,
        method,
        f"{cast.url}/{testkit.id_of(row)}{suffix}",
        f"SELECT {column.format(title=cast.title)} FROM {cast.table} WHERE id = ?",
        [testkit.id_of(row)],
        body=body,
        statuses=[status],
        description=description,
    )


def owner_update(cast: testkit.Cast) -> HttpTest:
    """The owner still edits their record."""
    v = cast.victim
    return _record_write(
        cast,
        "update",
        v,
        f"{v}_private",
        who="owner",
        body={cast.title: "Updated title"},
        description="the owner edits their record",
    )


def owner_archive(cast: testkit.Cast) -> HttpTest:
    """The owner still archives their record."""
    v = cast.victim
    return _record_write(
        cast,
        "archive",
        v,
        f"{v}_private",
        who="owner",
        description="the owner archives their record",
    )


def owner_delete(cast: testkit.Cast) -> HttpTest:
    """The owner still deletes their record (the peer's own, so the victim's rows stay)."""
    p = cast.peer
    return _record_write(
        cast,
        "delete",
        p,
        f"{p}_private",
        who="owner",
        description="the owner deletes their record",
    )


def admin_update(cast: testkit.Cast) -> HttpTest:
    """An administrator still edits any record (where the policy lets them)."""
    return _record_write(
        cast,
        "update",
        cast.admin,
        f"{cast.outsider}_private",
        who="admin",
        body={cast.title: "Moderated"},
        description="an administrator edits any record",
    )


def admin_archive(cast: testkit.Cast) -> HttpTest:
    """An administrator still archives any record (where the policy lets them)."""
    return _record_write(
        cast,
        "archive",
        cast.admin,
        f"{cast.outsider}_private",
        who="admin",
        description="an administrator archives any record",
    )


def admin_delete(cast: testkit.Cast) -> HttpTest:
    """An administrator still deletes any record."""
    return _record_write(
        cast,
        "delete",
        cast.admin,
        f"{cast.outsider}_private",
        who="admin",
        description="an administrator deletes any record",
    )


def record_create(cast: testkit.Cast) -> HttpTest:
    """A user still creates a record in their own name and tenant, although the web client
    sends a field the model does not know."""
    v = cast.victim
    return testkit.write_test(
        "regression.create",
        R,
        v,
        "POST",
        cast.url,
        f"SELECT COUNT(*) FROM {cast.table} WHERE owner_id = ? AND tenant_id = ?",
        [testkit.id_of(v), testkit.id_of("tenant_a")],
        statuses=[201],
        body={cast.title: "New entry", cast.secret: "draft", "client_ref": "web"},
        description="a user creates a record (the client sends extra fields)",
    )


def profile_update(cast: testkit.Cast) -> HttpTest:
    """The account holder still changes their display name, posting the whole profile back as
    the web client does (its id and username unchanged)."""
    v = cast.victim
    return testkit.write_test(
        "regression.profile_update",
        R,
        v,
        "PATCH",
        "/users/me",
        "SELECT display_name FROM users WHERE id = ?",
        [testkit.id_of(v)],
        statuses=[200],
        body={
            "id": testkit.id_of(v),
            "username": testkit.user_of(v),
            "display_name": "New Name",
            "email": testkit.user_of(v) + "@example.test",
        },
        description="the web client posts the whole profile back",
    )


def admin_settings(cast: testkit.Cast, method: str = "PUT", days: int = 30) -> HttpTest:
    """An administrator still changes the tenant settings with ``method``."""
    return testkit.write_test(
        f"regression.admin_settings_{method.lower()}",
        R,
        cast.admin,
        method,
        "/tenant/settings",
        "SELECT retention_days FROM tenant_settings WHERE tenant_id = ?",
        [testkit.id_of("tenant_a")],
        body={"retention_days": days},
        statuses=[200],
        description=f"an administrator changes settings with {method}",
    )


def admin_users(cast: testkit.Cast) -> HttpTest:
    """An administrator still lists the accounts, private fields included."""
    return testkit.read_test(
        "regression.admin_users",
        R,
        cast.admin,
        "/admin/users",
        f"{cast.outsider}_key",
        description="an administrator lists accounts",
    )


def debug_admin(cast: testkit.Cast) -> HttpTest:
    """Administrators keep the diagnostics page."""
    return testkit.read_test(
        "regression.debug_admin",
        R,
        cast.admin,
        "/debug/config",
        "service_key",
        description="administrators keep the diagnostics page",
    )


def file_own(cast: testkit.Cast) -> HttpTest:
    """The owner still downloads their stored file."""
    v = cast.victim
    return testkit.read_test(
        "regression.file_own",
        R,
        v,
        "/files/download",
        f"{v}_file",
        query={"name": "report.txt"},
        description="the owner downloads a file",
    )


def admin_act_as(cast: testkit.Cast) -> HttpTest:
    """An administrator still acts as a user (``X-Act-As``) and sees that user's account."""
    v = cast.victim
    return testkit.read_test(
        "regression.admin_act_as",
        R,
        cast.admin,
        "/users/me",
        f"{v}_key",
        headers={"X-Act-As": testkit.header_id(v)},
        description="an administrator acts as a user for a support case",
    )


def frontend_origin(spec: Any) -> str:
    """The web front end of the spec's app (the origin its browser pages come from)."""
    return f"https://{spec.domain.id.replace('_', '-')}.example.test"
