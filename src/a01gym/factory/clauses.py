"""Which clause of the written policy each hidden test checks: the per-clause report.

A hidden suite is only as good as the policy it covers: a clause no test checks is one a fix
may break for free, and a clause without a regression is one "deny everything" keeps. This
module files every hidden test of a spec under the policy clause it checks
(:func:`a01gym.factory.compiler.policy_clauses`' keys), from the spec alone, so
``a01gym factory clauses`` reports coverage over hundreds of drafts in seconds:

* an exploit or a guard under the clause of the site it attacks (``Site.clause``; a family's
  own site under the family's own lines, or ``Family.clause``);
* a regression under the clause of the request it makes: the family's own lines when a family
  with its own words wrote it, otherwise the skeleton route it calls. The route inventory
  (``/openapi.json``) checks no clause.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Iterable

from pydantic import BaseModel, Field

from a01gym.factory import compiler, exploits, families, guards, regressions, sites, testkit
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.httptest import HttpTest, Step

__all__ = ["Clause", "ClauseReport", "clauses", "report"]


@dataclasses.dataclass(frozen=True)
class Clause:
    """One clause of a spec's written policy and the hidden tests that check it."""

    key: str
    lines: tuple[str, ...]
    """The policy's lines of the clause (a family's own clause may have two)."""
    forbidden: tuple[str, ...]
    """Ids of the exploits and guards: the clause's attacks, which must fail."""
    allowed: tuple[str, ...]
    """Ids of the regressions: the clause's legitimate uses, which must go through."""
    touched: bool
    """Whether the bug breaks the clause (one of its sites keeps it)."""


def clauses(spec: ScenarioSpec) -> list[Clause]:
    """Every clause of ``spec``'s policy with the hidden tests that check it, in the policy's
    order; tests of no stated clause are filed under the key ``""``."""
    keyed = compiler.policy_clauses(spec)
    lines: dict[str, list[str]] = {}
    for key, line in keyed:
        lines.setdefault(key, []).append(line)
    forbidden: dict[str, list[str]] = collections.defaultdict(list)
    allowed: dict[str, list[str]] = collections.defaultdict(list)
    for site, test in _attacks(spec):
        forbidden[_site_clause(site)].append(test.id)
    owners = _regression_owners(spec)
    for test in regressions.regression_tests(spec):
        key = owners.get(test.id) or _request_clause(spec, test.steps[-1])
        if key is not None:
            allowed[key].append(test.id)
    touched = {_site_clause(site) for site in spec.bug.sites}
    keys = [*lines, *sorted((set(forbidden) | set(allowed)) - set(lines))]
    return [
        Clause(
            key=key,
            lines=tuple(lines.get(key, ())),
            forbidden=tuple(forbidden[key]),
            allowed=tuple(allowed[key]),
            touched=key in touched,
        )
        for key in keys
    ]


def _attacks(spec: ScenarioSpec) -> list[tuple[str, HttpTest]]:
    """(site, test) for every exploit and guard: an exploit's id names its site."""
    out = []
    bug = sorted(spec.bug.sites, key=len, reverse=True)  # "record.read" before "record.re"
    for test in exploits.exploit_tests(spec):
        out.append((next((s for s in bug if f".{s}." in f"{test.id}."), bug[-1]), test))
    guarded = guards.guarded_sites(spec)
    out += zip(guarded, guards.guard_tests(spec), strict=True)
    return out


def _site_clause(site: str) -> str:
    shared = sites.SITES.get(site)
    if shared is not None:
        return shared.clause
    fam = next(f for f in families.FAMILIES.values() if site in f.sites)
    return fam.clause or fam.id


def _regression_owners(spec: ScenarioSpec) -> dict[str, str]:
    """Regression id -> the family that wrote it, for the families with words of their own."""
    cast = testkit.Cast(spec)
    owners: dict[str, str] = {}
    for family_id in spec.families:
        fam = families.family(family_id)
        if fam.policy is not None:
            owners.update((test.id, fam.id) for test in fam.regressions(cast))
    return owners


def _request_clause(spec: ScenarioSpec, step: Step) -> str | None:
    """The skeleton clause a request falls under (``None``: the route inventory)."""
    path, method = step.path.split("?")[0], step.method
    plural = "/" + spec.domain.entity.plural.replace("_", "-")
    one = re.escape(plural) + r"/\{\{[^}]*\}\}"
    if path == "/openapi.json":
        return None
    if "X-Act-As" in step.headers:
        return "profile.impersonate"
    if path in ("/health", "/admin-guide"):
        return "pages.public"
    if path == "/public/stats":
        return "stats.public"
    if "/admin/" in path:
        return "admin.manage"
    if path.startswith("/debug/"):
        return "debug.read"
    if path.startswith("/files"):
        return "files.read"
    if path.startswith("/tenant/settings"):
        return "settings.read" if method == "GET" else "settings.update"
    if path.startswith("/users/me"):
        return "profile.update" if method != "GET" else "fields.private"
    if path.startswith("/users/"):
        holder = path == f"/users/{testkit.id_of(step.actor)}"
        return (
            "fields.private" if holder or step.actor == testkit.Cast(spec).admin else "profile.read"
        )
    if path == "/team":
        return "profile.read"
    if path.startswith("/reports/"):
        return "record.read" if re.fullmatch(r"/reports" + one, path) else "record.export"
    if re.fullmatch(one, path):
        return {"GET": "record.read", "PATCH": "record.update", "DELETE": "record.delete"}[method]
    if re.fullmatch(one + "/archive", path):
        return "record.archive"
    if path in (plural, plural + "/search"):
        return "record.create" if method == "POST" else "record.list"
    return ""


class ClauseReport(BaseModel):
    """Coverage of one clause key over many specs (``a01gym factory clauses --json``)."""

    key: str = Field(description="The clause's key; a family's own clause is its id.")
    stated: int = Field(description="Specs whose policy states the clause.")
    forbidden: int = Field(description="Of those, specs with an exploit or guard under it.")
    allowed: int = Field(description="Of those, specs with a regression under it.")
    touched: int = Field(description="Specs whose bug breaks the clause.")
    touched_both: int = Field(
        description="Of those, specs with both an attack and a legitimate use under it."
    )


def report(specs: Iterable[ScenarioSpec]) -> list[ClauseReport]:
    """Per clause key (a family's own clause under its id), how many of ``specs`` state it and
    test each side of it; the key ``""`` counts tests of no stated clause."""
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for spec in specs:
        for clause in clauses(spec):
            c = counts[clause.key]
            c["stated"] += bool(clause.lines)
            c["forbidden"] += bool(clause.lines and clause.forbidden)
            c["allowed"] += bool(clause.lines and clause.allowed)
            c["touched"] += clause.touched
            c["touched_both"] += clause.touched and bool(clause.forbidden and clause.allowed)
    return [
        ClauseReport(
            key=key,
            **{f: c[f] for f in ("stated", "forbidden", "allowed", "touched", "touched_both")},
        )
        for key, c in sorted(counts.items())
    ]
