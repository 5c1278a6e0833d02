"""Hidden regression tests (positive controls) and the agent's visible tests.

Regression tests cover every actor class the policy allows (owner, teammate when shared,
support, manager, administrator, anonymous on public routes), the legitimate uses of the
bug's family (its ``regressions`` hook) and the first of each companion family's, a use of
every clause the app states that none of those covers, and the route inventory on
``/openapi.json``; they pass on the vulnerable and the fixed app and fail on
deny-all, delete-route, over-filter and admin-break "fixes". Visible tests use other actors and
rows than hidden ones; at hint level 4 they include one exploit reproduction.
"""

from __future__ import annotations

from collections.abc import Callable

from a01gym.factory import exploits, families, testkit
from a01gym.factory.families import shared
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


def regression_tests(spec: ScenarioSpec) -> list[HttpTest]:
    """Hidden positive controls for the actor classes the policy allows, plus the inventory
    (checked against the manifest's ``routes``, its one record)."""
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
    if spec.layout.account_activity:
        tests.append(
            HttpTest(
                id="regression.own_activity",
                kind=R,
                description="a user reads their own recent actions",
                steps=[Step(actor=v, path="/users/me/activity", expect=[StatusIn(statuses=[200])])],
            )
        )
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
    for report in _REPORTS:
        if report[0] in sites:
            extra += _report_uses(cast, *report)
    extra += families.family(fam).regressions(cast)
    for companion in spec.companions:
        # A companion's first legitimate use only: its routes must keep working, and its other
        # controls tell a trap of its own bug from a fix, which no companion has. Every
        # regression runs in every gate run and world: all of them cost a build ~50% more CPU
        # a candidate (bench/factory.py --quick, 2026-11-29: 4.15 against 2.71 CPU-s).
        extra += families.family(companion).regressions(cast)[:1]
    listed = {test.id for test in extra}
    extra += [test for test in _clause_uses(spec, cast) if test.id not in listed]
    # Last: building the OpenAPI document is the dearest request an app answers, and a gate
    # run that stops at its first failed regression (traps, G5 hacks) rarely needs it.
    inventory = HttpTest(
        id="regression.routes",
        kind=R,
        description="every documented route still exists",
        steps=[Step(path="/openapi.json", expect=[RoutesInclude()])],  # the manifest's
    )
    return [*tests, *extra, inventory]


def _report_uses(
    cast: testkit.Cast, site: str, suffix: str, name: str, descriptions: tuple[str, str, str]
) -> list[HttpTest]:
    """A report's reads by its owner, an administrator and (when shared) a teammate."""
    v, p, adm = cast.victim, cast.peer, cast.admin
    own, admin, team = descriptions
    path = f"/reports{cast.url}{suffix}"
    tests = [
        testkit.read_test(f"regression.owner_{name}", R, v, path, f"{v}_private", description=own),
        testkit.read_test(
            f"regression.admin_{name}", R, adm, path, f"{cast.outsider}_private", description=admin
        ),
    ]
    if cast.shared:
        tests.append(
            testkit.read_test(
                f"regression.shared_{name}", R, p, path, cast.team_row(v), description=team
            )
        )
    return tests


def _owner_export(cast: testkit.Cast) -> HttpTest:
    return _report_uses(cast, *_REPORTS[0])[0]


def _public_stats(cast: testkit.Cast) -> HttpTest:
    return HttpTest(
        id="regression.public_stats",
        kind=R,
        description="the record count stays public",
        steps=[
            Step(
                path="/public/stats",
                expect=[StatusIn(statuses=[200]), BodyContains(value=f'"{cast.table}"')],
            )
        ],
    )


_CLAUSE_USES: tuple[tuple[str, str, Callable[[testkit.Cast], HttpTest]], ...] = (
    ("profile.read", "any_user", shared.public_profile),
    ("settings.read", "any_user", shared.member_settings),
    ("stats.public", "anonymous", _public_stats),
    ("fields.private", "self", lambda cast: shared.own_account(cast)[0]),
    ("record.export", "owner", _owner_export),
    ("files.read", "owner", shared.file_own),
    ("debug.read", "admin", shared.debug_admin),
    ("admin.manage", "admin", shared.admin_users),
    ("profile.impersonate", "admin", shared.admin_act_as),
    ("record.create", "any_user", shared.record_create),
    ("record.update", "owner", shared.owner_update),
    ("record.update", "admin", shared.admin_update),
    ("record.archive", "owner", shared.owner_archive),
    ("record.archive", "admin", shared.admin_archive),
    ("record.delete", "owner", shared.owner_delete),
    ("record.delete", "admin", shared.admin_delete),
    ("profile.update", "self", shared.profile_update),
    ("settings.update", "admin", shared.admin_settings),
)
"""Per clause of the skeleton's policy and actor class it may allow (the policy's words:
``Rule.allow``), a legitimate use: the reads first, then the writes, whose database checks
and the restored seed after them cost more. The record writes are used by both classes a
policy may name, the owner and an administrator; the reads of records by every class
already (``regression_tests``)."""


def _clause_uses(spec: ScenarioSpec, cast: testkit.Cast) -> list[HttpTest]:
    """A legitimate use of every clause the app states, by each actor class above that the
    clause allows, where the bug's family and companions wrote none under the same id. Before,
    the write clauses were used only where a family's hook happened to (``a01gym factory
    clauses``, seed 28's 300 drafts: record.delete 3, record.update 6, profile.update 12 ...),
    and the read-only ones in 14 or none: a fix that also locked one of them down (to
    administrators, say, or for everyone, or no longer for administrators) cost nothing. Now
    one that does fails a regression, which caps the score at 0."""
    allowed = {f"{rule.resource}.{rule.action}": set(rule.allow) for rule in spec.policy}
    # the skeleton's fixed lines (``compiler.policy_clauses``)
    allowed["fields.private"] = {"self", "admin"}
    if "public_stats" in spec.decoys:  # the app serves the count: a rule it keeps
        allowed["stats.public"] = {"anonymous"}
    return [use(cast) for key, who, use in _CLAUSE_USES if who in allowed.get(key, ())]


def visible_tests(spec: ScenarioSpec) -> list[HttpTest]:
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
