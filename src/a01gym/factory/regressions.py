"""Hidden regression tests (positive controls) and the agent's visible tests.

Regression tests cover every actor class the policy allows (owner, teammate when shared,
support, manager, administrator, anonymous on public routes), the family's own legitimate uses,
and the route inventory on ``/openapi.json``; they pass on the vulnerable and the fixed app and
fail on deny-all, delete-route, over-filter and admin-break "fixes". Visible tests use other
actors and rows than hidden ones; at hint level 4 they include one exploit reproduction.
"""

from __future__ import annotations

from a01gym.factory import approutes, exploits, testkit
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.httptest import (
    BodyContains,
    HttpTest,
    JsonEquals,
    RoutesInclude,
    StatusIn,
    Step,
    TestKind,
)

__all__ = ["regression_tests", "visible_tests"]

R = TestKind.REGRESSION
# Report endpoints: site, path suffix, test name, and what the owner's, an admin's and a
# teammate's read of it shows.
_REPORTS = (
    (
        "record.export",
        ".csv",
        "export",
        (
            "the owner exports",
            "an administrator's export holds every record",
            "a teammate's export holds shared records",
        ),
    ),
    (
        "record.digest",
        "/digest",
        "digest",
        (
            "the owner's digest",
            "the admin's digest",
            "a teammate's digest holds shared records",
        ),
    ),
)


def regression_tests(spec: ScenarioSpec, routes: list[str]) -> list[HttpTest]:
    """Hidden positive controls for the actor classes the policy allows, plus the inventory."""
    cast = testkit.Cast(spec)
    fam = spec.bug.family
    sites = set(spec.bug.sites)
    v, p, o, adm = cast.victim, cast.peer, cast.outsider, cast.admin
    vp, vt, op = f"{v}_private", cast.team_row(v), f"{o}_private"
    tests = [
        HttpTest(
            id="regression.health",
            kind=R,
            description="the health check is public",
            steps=[Step(path="/health", expect=[StatusIn(statuses=[200])])],
        ),
        HttpTest(
            id="regression.routes",
            kind=R,
            description="every documented route still exists",
            steps=[Step(path="/openapi.json", expect=[RoutesInclude(routes=routes)])],
        ),
        testkit.read_test(
            "regression.owner_read",
            R,
            v,
            f"{cast.url}/{testkit.id_of(vp)}",
            vp,
            description="the owner reads their record",
        ),
        testkit.read_test(
            "regression.admin_read",
            R,
            adm,
            f"{cast.url}/{testkit.id_of(op)}",
            op,
            description="an administrator reads any record",
        ),
        testkit.read_test(
            "regression.list_own", R, v, cast.url, vp, description="the owner lists their records"
        ),
    ]
    if cast.shared:
        tests.append(
            testkit.read_test(
                "regression.shared_read",
                R,
                p,
                f"{cast.url}/{testkit.id_of(vt)}",
                vt,
                description="a teammate reads a shared record",
            )
        )
    if cast.support:
        tests.append(
            testkit.read_test(
                "regression.support_read",
                R,
                cast.support,
                f"{cast.url}/{testkit.id_of(op)}",
                op,
                description="support staff read any record",
            )
        )
    if cast.manager:
        tests.append(
            testkit.read_test(
                "regression.manager_read",
                R,
                cast.manager,
                f"{cast.url}/{testkit.id_of(op)}",
                op,
                description="the manager reads records of their tenant",
            )
        )
    extra: list[HttpTest] = []
    add = extra.append
    if "record.print" in sites:
        add(
            testkit.read_test(
                "regression.owner_print",
                R,
                v,
                f"/reports{cast.url}/{testkit.id_of(vp)}",
                vp,
                description="the owner prints their record",
            )
        )
        add(
            testkit.read_test(
                "regression.admin_print",
                R,
                adm,
                f"/reports{cast.url}/{testkit.id_of(op)}",
                op,
                description="an administrator prints any record",
            )
        )
        if cast.shared:
            add(
                testkit.read_test(
                    "regression.shared_print",
                    R,
                    p,
                    f"/reports{cast.url}/{testkit.id_of(vt)}",
                    vt,
                    description="a teammate prints a shared record",
                )
            )
    if fam == "F02":
        row = f"{cast.url}/{testkit.id_of(vp)}"
        if "record.update" in sites:
            add(
                testkit.write_test(
                    "regression.owner_update",
                    R,
                    v,
                    "PATCH",
                    row,
                    f"SELECT {cast.title} FROM {cast.table} WHERE id = ?",
                    [testkit.id_of(vp)],
                    body={cast.title: "Updated title"},
                    statuses=[200],
                    description="the owner edits their record",
                )
            )
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
            add(
                testkit.write_test(
                    "regression.owner_archive",
                    R,
                    v,
                    "POST",
                    f"{row}/archive",
                    f"SELECT status FROM {cast.table} WHERE id = ?",
                    [testkit.id_of(vp)],
                    statuses=[200],
                    description="the owner archives their record",
                )
            )
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
            add(
                testkit.write_test(
                    "regression.owner_delete",
                    R,
                    p,
                    "DELETE",
                    f"{cast.url}/{testkit.id_of(p + '_private')}",
                    f"SELECT COUNT(*) FROM {cast.table} WHERE id = ?",
                    [testkit.id_of(p + "_private")],
                    statuses=[204],
                    description="the owner deletes their record",
                )
            )
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
    for site, suffix, name, (own, admin, shared) in _REPORTS:
        if site not in sites:
            continue
        path = f"/reports{cast.url}{suffix}"
        add(testkit.read_test(f"regression.owner_{name}", R, v, path, vp, description=own))
        add(testkit.read_test(f"regression.admin_{name}", R, adm, path, op, description=admin))
        if cast.shared:
            add(testkit.read_test(f"regression.shared_{name}", R, p, path, vt, description=shared))
    if fam in ("F03", "F14", "F17"):
        add(
            HttpTest(
                id="regression.public_guide",
                kind=R,
                description="the administrator guide stays public",
                steps=[Step(path="/admin-guide", expect=[StatusIn(statuses=[200])])],
            )
        )
    if fam == "F04":
        if "admin.users" in sites:
            add(
                testkit.read_test(
                    "regression.admin_users",
                    R,
                    adm,
                    "/admin/users",
                    f"{o}_key",
                    description="an administrator lists accounts",
                )
            )
        if "admin.audit" in sites:
            add(
                testkit.read_test(
                    "regression.admin_audit",
                    R,
                    adm,
                    "/admin/audit",
                    "audit",
                    description="an administrator reads the audit log",
                )
            )
        if "admin.disable" in sites:
            add(
                testkit.write_test(
                    "regression.admin_disable",
                    R,
                    adm,
                    "POST",
                    f"/admin/users/{testkit.id_of(cast.outsider2)}/disable",
                    "SELECT is_active FROM users WHERE id = ?",
                    [testkit.id_of(cast.outsider2)],
                    statuses=[200],
                    description="an administrator disables an account",
                )
            )
    if fam in ("F05", "F06", "F09"):
        add(
            testkit.read_test(
                "regression.me",
                R,
                v,
                "/users/me",
                f"{v}_key",
                description="a user reads their own account, private fields included",
            )
        )
    if fam == "F05":
        add(
            testkit.read_test(
                "regression.admin_act_as",
                R,
                adm,
                "/users/me",
                f"{v}_key",
                headers={"X-Act-As": testkit.header_id(v)},
                description="an administrator acts as a user for a support case",
            )
        )
    if fam == "F06":
        if "profile.update" in sites:
            add(
                testkit.write_test(
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
            )
        if "record.create" in sites:
            add(
                testkit.write_test(
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
            )
        add(
            testkit.write_test(
                "regression.admin_role",
                R,
                adm,
                "PUT",
                f"/admin/users/{testkit.id_of(p)}/role",
                "SELECT role FROM users WHERE id = ?",
                [testkit.id_of(p)],
                body={"role": "support"},
                statuses=[200],
                description="an administrator changes a role",
            )
        )
    if fam == "F07":
        add(
            testkit.read_test(
                "regression.list_outsider",
                R,
                o,
                cast.url,
                op,
                description="each tenant lists its own records",
            )
        )
        add(
            testkit.read_test(
                "regression.admin_list",
                R,
                adm,
                cast.url,
                op,
                description="an administrator lists every record",
            )
        )
        add(
            testkit.read_test(
                "regression.owner_filter",
                R,
                v,
                cast.url,
                vp,
                query={"owner_id": testkit.id_of(v)},
                description="filtering by owner keeps the owner's records",
            )
        )
        add(
            testkit.read_test(
                "regression.search_own",
                R,
                v,
                f"{cast.url}/search",
                vp,
                query={"q": cast.term},
                description="search finds the caller's records",
            )
        )
        add(
            testkit.read_test(
                "regression.admin_search",
                R,
                adm,
                f"{cast.url}/search",
                op,
                query={"q": cast.term},
                description="an administrator searches everything",
            )
        )
        if cast.shared:
            add(
                testkit.read_test(
                    "regression.list_shared",
                    R,
                    p,
                    cast.url,
                    vt,
                    description="a teammate lists shared records",
                )
            )
            add(
                testkit.read_test(
                    "regression.search_shared",
                    R,
                    p,
                    f"{cast.url}/search",
                    vt,
                    query={"q": cast.term},
                    description="search finds shared records",
                )
            )
    if fam == "F09":
        add(
            HttpTest(
                id="regression.profile_public",
                kind=R,
                description="public profiles keep their public fields",
                steps=[
                    Step(
                        actor=p,
                        path=f"/users/{testkit.id_of(v)}",
                        expect=[
                            StatusIn(statuses=[200]),
                            JsonEquals(path="username", value=testkit.user_of(v)),
                        ],
                    )
                ],
            )
        )
        add(
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
            )
        )
    if fam == "F10":
        add(
            testkit.read_test(
                "regression.file_own",
                R,
                v,
                "/files/download",
                f"{v}_file",
                query={"name": "report.txt"},
                description="the owner downloads a file",
            )
        )
        add(
            testkit.read_test(
                "regression.file_nested",
                R,
                v,
                "/files/download",
                f"{v}_nested",
                query={"name": "reports/2024/q1.txt"},
                description="the owner downloads a file from a subfolder",
            )
        )
    if fam == "F14":
        add(
            testkit.read_test(
                "regression.admin_audit",
                R,
                adm,
                "/admin/audit",
                "audit",
                description="an administrator reads the audit log",
            )
        )
        for site, prefix in approutes.LEGACY_PREFIXES.items():
            add(
                testkit.read_test(
                    f"regression.admin_alias.{site}",
                    R,
                    adm,
                    f"{prefix}/audit",
                    "audit",
                    description=f"documented clients still use {prefix}",
                )
            )
    if fam == "F13":
        settings_sql = "SELECT retention_days FROM tenant_settings WHERE tenant_id = ?"
        for method, days in (("PUT", 30), ("PATCH", 60)):
            add(
                testkit.write_test(
                    f"regression.admin_settings_{method.lower()}",
                    R,
                    adm,
                    method,
                    "/tenant/settings",
                    settings_sql,
                    [testkit.id_of("tenant_a")],
                    body={"retention_days": days},
                    statuses=[200],
                    description=f"an administrator changes settings with {method}",
                )
            )
        add(
            testkit.read_test(
                "regression.member_settings",
                R,
                p,
                "/tenant/settings",
                "webhook_a",
                description="members read their tenant's settings",
            )
        )
    if fam == "F17":
        add(
            testkit.read_test(
                "regression.debug_admin",
                R,
                adm,
                "/debug/config",
                "service_key",
                description="administrators keep the diagnostics page",
            )
        )
    return tests + extra


def visible_tests(spec: ScenarioSpec, routes: list[str]) -> list[HttpTest]:
    """What the agent may run: other actors and rows than the hidden tests use.

    At hint level 4 this includes one failing exploit reproduction.
    """
    cast = testkit.Cast(spec)
    o, o2 = cast.outsider, cast.outsider2
    tests = [
        HttpTest(
            id="visible.health",
            kind=R,
            description="the app is up",
            steps=[Step(path="/health", expect=[JsonEquals(path="status", value="ok")])],
        ),
        testkit.read_test(
            "visible.owner_read",
            R,
            o,
            f"{cast.url}/{testkit.id_of(o + '_private')}",
            f"{o}_private",
            description=f"{o} reads their own record",
        ),
        testkit.read_test(
            "visible.owner_list",
            R,
            o2,
            cast.url,
            cast.team_row(o2),
            description=f"{o2} lists their records",
        ),
    ]
    if spec.knobs.hint_level >= 4:
        site = spec.bug.sites[0]
        tests += exploits.exploits_for(cast, site, o2, o, "visible.exploit")[-1:]
    return tests
