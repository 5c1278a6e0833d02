"""Hidden security guards: the policy's other rules, attacked, must stay enforced.

Exploit tests cover the injected bug; they say nothing about the rest of the app. A fix that
closes the bug and deletes an ownership check elsewhere would score 1.0 on them alone. So every
scenario also carries a **guard** per site of the shared skeleton that is not one of its bug's
sites: the same attack the exploit suite would make there (a teammate who does not own the
record reads, edits, deletes, archives, lists, exports it; a regular user reaches ``/admin``,
the diagnostics page, the tenant settings, another account's private fields, another user's
files, impersonation, a role change through the profile, a record planted in another tenant;
a caller who is not signed in reads a profile).

The routes of the spec's companion families (other families' code, rendered secure) get a
guard per site too: their family's own attack, made by the same teammate.

Every guard is blocked in the vulnerable app and in the reference fix (the gates check both).
A guard that gets through after the agent's edit is a **security regression**: like a failed
regression test it settles the score at 0 (:mod:`a01gym.grading.scoring`), so opening a hole
anywhere never pays, however well the bug itself is fixed.

The attacker is the victim's teammate in the same tenant: the policy (every canonical
variant, :func:`a01gym.factory.spec.canonical_policy`) never lets a regular user who does not
own a private record act on it, nor reach an administrator's routes.
"""

from __future__ import annotations

from a01gym.factory import exploits, families, sites, testkit
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.httptest import HttpTest, Step, TestKind

__all__ = ["GUARDED_SITES", "guard_tests", "guarded_sites"]

GUARDED_SITES = tuple(sites.SITES)
"""Skeleton sites every generated app serves, each with an attack the policy forbids."""


def guard_tests(spec: ScenarioSpec) -> list[HttpTest]:
    """A guard for every skeleton site the bug does not touch and every companion's site (ids
    ``guard.<site>…``).

    A guard that makes a request an exploit also makes (acting as the victim, then reading
    the victim's record: the read is the bug in F01) would get through because of the bug
    itself, so it is left out.
    """
    return list(_site_guards(spec).values())


def guarded_sites(spec: ScenarioSpec) -> list[str]:
    """The sites :func:`guard_tests` guards, in ``GUARDED_SITES`` order: a hole opened at any
    other site (one whose only attack is also an exploit's request) no test would see."""
    return list(_site_guards(spec))


def _site_guards(spec: ScenarioSpec) -> dict[str, HttpTest]:
    cast = testkit.Cast(spec)
    bugged = set(spec.bug.sites)
    attacked = {_request(step) for test in exploits.exploit_tests(spec) for step in test.steps}
    chosen: dict[str, HttpTest] = {}
    for site in GUARDED_SITES:
        if site in bugged:
            continue
        usable = [
            test
            for test in exploits.site_exploits(
                cast, site, cast.peer, cast.victim, "guard", kind=TestKind.GUARD
            )
            if not attacked & {_request(step) for step in test.steps}
        ]
        # one attack per site, the signed-in teammate's where there is a choice: it is the
        # stronger one (a check reduced to "signed in" still stops an anonymous caller)
        if usable:
            chosen[site] = _strongest(usable, cast)
    for companion in spec.companions:  # their routes: every site is secure, so guard each
        fam = families.family(companion)
        assert fam.exploits is not None  # a companion is self-contained
        for site in fam.sites:
            attacks = [
                test.model_copy(update={"kind": TestKind.GUARD})
                for test in fam.exploits(cast, site, cast.peer, cast.victim, "guard")
            ]
            if attacks:
                chosen[site] = _strongest(attacks, cast)
    return chosen


def _strongest(tests: list[HttpTest], cast: testkit.Cast) -> HttpTest:
    return next((t for t in tests if t.steps[0].actor == cast.peer), tests[0])


def _request(step: Step) -> tuple[str, str]:
    return step.method, step.path
