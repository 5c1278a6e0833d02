"""Hidden regression tests (positive controls) and the agent's visible tests.

Regression tests cover every actor class the policy allows (owner, teammate when shared,
support, manager, administrator, anonymous on public routes), the legitimate uses of the
bug's family (its ``regressions`` hook) and the first of each companion family's, a use of the
read-only clauses no bug family's hook covers everywhere, and the route inventory on
``/openapi.json``; they pass on the vulnerable and the fixed app and fail on
deny-all, delete-route, over-filter and admin-break "fixes". Visible tests use other actors and
rows than hidden ones; at hint level 4 they include one exploit reproduction.
"""

from __future__ import annotations

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
    for site, suffix, name, (own, admin, team) in _REPORTS:
        if site not in sites:
            continue
        path = f"/reports{cast.url}{suffix}"
        add(testkit.read_test(f"regression.owner_{name}", R, v, path, vp, description=own))
        add(testkit.read_test(f"regression.admin_{name}", R, adm, path, op, description=admin))
        if cast.shared:
            add(testkit.read_test(f"regression.shared_{name}", R, p, path, vt, description=team))
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


def _clause_uses(spec: ScenarioSpec, cast: testkit.Cast) -> list[HttpTest]:
    """A legitimate use of each read-only clause no other regression used in most suites
    (``a01gym factory clauses``, seed 28's 300 drafts: 14, 14 and 0 before): another user's
    public profile, one's own tenant's settings, and the public record count where the app
    serves it. A fix that also locks one of them down (to administrators, say) fails a regression.

    Three GETs at most, for the cost every regression has in every gate run and world (the
    other clauses' uses, writes among them, would cost a build more; docs/families.md)."""
    uses = [shared.public_profile(cast), shared.member_settings(cast)]
    if "public_stats" in spec.decoys:
        uses.append(
            HttpTest(
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
        )
    return uses


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
