"""``ScenarioSpec``: the draft an author produces and the mutator renders.

A spec is pure data (pydantic, ``extra="forbid"``): the domain and its entity, the actors, the
access **policy** as explicit rules, the **bug target** (family, CWE, OWASP category, sites),
decoys, companion families (other families' routes, served secure), traps, difficulty knobs,
hint level and the seed. Validation is strict because LLM authors write specs too: every error
names the field, and the retry loop feeds it back.

The policy is explicit, but the app generator supports a fixed vocabulary of shapes; the
validator checks that the rules are exactly one of them (:func:`canonical_policy`), so a spec
that validates always renders.
"""

from __future__ import annotations

import keyword
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from a01gym.factory import families
from a01gym.factory.layoutspec import AREA_NAMES, Layout

__all__ = [
    "AREA_NAMES",
    "DECOY_KINDS",
    "MAX_COMPANIONS",
    "RESERVED_COLUMNS",
    "ActorSpec",
    "BugTarget",
    "DomainSpec",
    "EntitySpec",
    "HintLevel",
    "Knobs",
    "Layout",
    "PolicyFeatures",
    "PolicyRule",
    "ScenarioSpec",
    "canonical_policy",
    "policy_features",
]

SPEC_VERSION = 1
MAX_COMPANIONS = 7
"""The most drawn (6, ``author.COMPANION_COUNTS``) and F12, which every app serves."""

DECOY_KINDS: tuple[str, ...] = ("sort_column", "request_id", "basename_preview", "public_stats")
RESERVED_COLUMNS = frozenset(
    {"id", "tenant_id", "owner_id", "visibility", "status", "created_at", "user", "request"}
)
_IDENT = r"^[a-z][a-z0-9_]{1,30}$"

HintLevel = Literal[0, 1, 2, 3, 4]
"""0-2 the one task wording (kept apart for the difficulty score), 3 also the area to start
with, 4 also a visible exploit reproduction; never the CWE, the family or a route. Held-out
(eval) scenarios are built at 0 (:func:`a01gym.factory.split.as_built`); the labels and the
cache index record the level."""

Principal = Literal[
    "anonymous", "any_user", "owner", "self", "team_if_shared", "support", "manager", "admin"
]
Resource = Literal["record", "profile", "admin", "files", "debug", "settings"]
Action = Literal[
    "read", "list", "create", "update", "delete", "archive", "export", "impersonate", "manage"
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _identifier(value: str) -> str:
    if keyword.iskeyword(value) or value in RESERVED_COLUMNS:
        raise ValueError(f"{value!r} is reserved")
    return value


class EntitySpec(_Model):
    """The domain's main private record (an invoice, a note, an appointment, ...)."""

    name: str = Field(pattern=_IDENT, description="Singular snake_case, e.g. 'invoice'.")
    plural: str = Field(pattern=_IDENT, description="Plural snake_case, e.g. 'invoices'.")
    label: str = Field(min_length=2, max_length=40, description="Human name, e.g. 'invoice'.")
    title_field: str = Field(pattern=_IDENT, description="Short public-ish text column.")
    secret_field: str = Field(pattern=_IDENT, description="Private text column (holds canaries).")
    number_field: str = Field(pattern=_IDENT, description="Integer column, e.g. 'amount_cents'.")
    title_samples: list[str] = Field(min_length=4, max_length=12)
    search_term: str = Field(min_length=3, max_length=20, pattern=r"^[A-Za-z]+$")
    archived_status: str = Field("archived", pattern=r"^[a-z_]{3,20}$")

    _check_ident = field_validator("name", "plural", "title_field", "secret_field", "number_field")(
        _identifier
    )

    @model_validator(mode="after")
    def _consistent(self) -> EntitySpec:
        columns = [self.title_field, self.secret_field, self.number_field]
        if len(set(columns)) != 3:
            raise ValueError(f"title/secret/number fields must differ, got {columns}")
        if self.name == self.plural:
            raise ValueError("name and plural must differ")
        for sample in self.title_samples:
            if self.search_term.lower() not in sample.lower():
                raise ValueError(f"title sample {sample!r} lacks search_term {self.search_term!r}")
            if any(ch in sample for ch in "\"'\\{}$\n"):
                raise ValueError(f"title sample {sample!r} has quotes, braces or newlines")
        return self


class DomainSpec(_Model):
    """What the app is about."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{2,30}$")
    app_name: str = Field(pattern=r"^[A-Z][A-Za-z0-9 ]{2,30}$")
    description: str = Field(min_length=10, max_length=200, pattern=r"^[^\"\\{}$\n]+$")
    tenant_noun: str = Field(pattern=r"^[a-z ]{3,20}$", description="e.g. 'company', 'clinic'.")
    tenant_names: list[str] = Field(min_length=2, max_length=2)
    entity: EntitySpec

    @field_validator("tenant_names")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or any(ch in name for ch in "\"'\\{}$\n"):
                raise ValueError(f"tenant name {name!r} is empty or has quotes/braces")
        return names


class ActorSpec(_Model):
    """A person in the fixture world; ``tenant`` is 'a' or 'b' (None for staff-wide roles)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{1,20}$")
    role: Literal["anonymous", "user", "support", "manager", "admin"]
    tenant: Literal["a", "b"] | None = None
    display_name: str = Field("", max_length=40, pattern=r"^[^\"\\{}$\n]*$")

    @model_validator(mode="after")
    def _tenant_matches_role(self) -> ActorSpec:
        if self.role in ("user", "manager") and self.tenant is None:
            raise ValueError(f"actor {self.name!r} with role {self.role!r} needs a tenant")
        if self.role == "anonymous" and self.tenant is not None:
            raise ValueError("the anonymous actor has no tenant")
        return self


class PolicyRule(_Model):
    """Who may do ``action`` on ``resource``."""

    resource: Resource
    action: Action
    allow: list[Principal] = Field(min_length=1)

    @field_validator("allow")
    @classmethod
    def _sorted_unique(cls, allow: list[str]) -> list[str]:
        return sorted(set(allow))


class PolicyFeatures(_Model):
    """The degrees of freedom of the policies the generator can render."""

    shared: bool = Field(True, description="Owners may share records with their tenant.")
    support_reads: bool = Field(False, description="A support role reads every record.")
    manager_reads: bool = Field(False, description="A manager reads every record of its tenant.")
    admin_edits: bool = Field(True, description="Admins may edit any record.")


def canonical_policy(features: PolicyFeatures) -> list[PolicyRule]:
    """The explicit rules for ``features`` (the only policies the generator renders)."""
    read: list[str] = ["owner", "admin"]
    if features.shared:
        read.append("team_if_shared")
    if features.support_reads:
        read.append("support")
    if features.manager_reads:
        read.append("manager")
    update = ["owner", "admin"] if features.admin_edits else ["owner"]

    def rule(resource: str, action: str, allow: list[str]) -> PolicyRule:
        return PolicyRule.model_validate({"resource": resource, "action": action, "allow": allow})

    return [
        rule("record", "read", read),
        rule("record", "list", read),
        rule("record", "export", read),
        rule("record", "create", ["any_user"]),
        rule("record", "update", update),
        rule("record", "archive", update),
        rule("record", "delete", ["owner", "admin"]),
        rule("profile", "read", ["any_user"]),
        rule("profile", "update", ["self"]),
        rule("profile", "impersonate", ["admin"]),
        rule("admin", "manage", ["admin"]),
        rule("files", "read", ["owner"]),
        rule("debug", "read", ["admin"]),
        rule("settings", "read", ["any_user"]),
        rule("settings", "update", ["admin"]),
    ]


def policy_features(rules: list[PolicyRule]) -> PolicyFeatures:
    """Recover the features of a canonical policy.

    Raises:
        ValueError: when ``rules`` is not exactly a policy the generator can render.
    """
    table = {(r.resource, r.action): set(r.allow) for r in rules}
    read = table.get(("record", "read"), set())
    features = PolicyFeatures(
        shared="team_if_shared" in read,
        support_reads="support" in read,
        manager_reads="manager" in read,
        admin_edits="admin" in table.get(("record", "update"), set()),
    )
    expected = {(r.resource, r.action): set(r.allow) for r in canonical_policy(features)}
    if table != expected or len(rules) != len(expected):
        wrong = sorted(
            f"{res}.{act}: expected {sorted(expected.get((res, act), set()))}, "
            f"got {sorted(table.get((res, act), set()))}"
            for res, act in set(expected) | set(table)
            if expected.get((res, act)) != table.get((res, act))
        ) or ["duplicate rules"]
        raise ValueError("unsupported policy: " + "; ".join(wrong))
    return features


class BugTarget(_Model):
    """The injected bug: family, labels and the sites it lives at."""

    family: str
    cwe: str = Field(pattern=r"^CWE-\d+$")
    owasp: str = families.OWASP_A01
    sites: list[str] = Field(min_length=1, max_length=3)

    @model_validator(mode="after")
    def _matches_catalog(self) -> BugTarget:
        if self.family not in families.FAMILIES:
            raise ValueError(f"unknown family {self.family!r}; known: {sorted(families.FAMILIES)}")
        fam = families.FAMILIES[self.family]
        if self.cwe not in fam.cwes:
            raise ValueError(f"cwe {self.cwe} does not fit {fam.id}; use one of {list(fam.cwes)}")
        if self.owasp != families.OWASP_A01:
            raise ValueError(f"owasp must be {families.OWASP_A01!r}")
        unknown = [s for s in self.sites if s not in fam.sites]
        if unknown or len(set(self.sites)) != len(self.sites):
            raise ValueError(
                f"sites must be distinct members of {list(fam.sites)}, got {self.sites}"
            )
        return self


class Knobs(_Model):
    """Difficulty knobs that change the generated code (the site count is ``len(bug.sites)``)."""

    distance: Literal["route", "service", "repository"] = Field(
        "route", description="Where record checks live: handler, service layer or SQL."
    )
    indirection: Literal["dependency", "router", "decorator", "middleware"] = Field(
        "dependency", description="How admin-only routes are guarded."
    )
    hint_level: HintLevel = 1
    data_access: Literal["sqlite3", "sqlalchemy"] = Field(
        "sqlite3", description="How the app reaches its database: raw sqlite3 or SQLAlchemy ORM."
    )


class ScenarioSpec(_Model):
    """A complete scenario draft."""

    spec_version: Literal[1] = SPEC_VERSION
    seed: int = Field(ge=0, lt=2**63)
    domain: DomainSpec
    actors: list[ActorSpec] = Field(min_length=6, max_length=10)
    policy: list[PolicyRule] = Field(min_length=1)
    bug: BugTarget
    decoys: list[str] = Field(default_factory=list, max_length=len(DECOY_KINDS))
    traps: list[str] = Field(min_length=1)
    knobs: Knobs = Field(default_factory=Knobs)
    companions: list[str] = Field(
        default_factory=list,
        max_length=MAX_COMPANIONS,
        description="Other families whose own routes the app also serves, secure.",
    )
    layout: Layout = Field(default_factory=Layout)

    @model_validator(mode="after")
    def _coherent(self) -> ScenarioSpec:
        names = [a.name for a in self.actors]
        if len(set(names)) != len(names):
            raise ValueError(f"actor names must be unique, got {names}")
        roles = [a.role for a in self.actors]
        if roles.count("anonymous") != 1 or roles.count("admin") != 1:
            raise ValueError("actors need exactly one 'anonymous' and exactly one 'admin'")
        for tenant in ("a", "b"):
            users = [a for a in self.actors if a.role == "user" and a.tenant == tenant]
            if len(users) < 2:
                raise ValueError(f"tenant {tenant!r} needs at least 2 actors with role 'user'")
        if any(roles.count(r) > 1 for r in ("support", "manager")):
            raise ValueError("at most one 'support' and one 'manager' actor")
        features = policy_features(list(self.policy))
        if features.support_reads != ("support" in roles):
            raise ValueError("a 'support' actor exists exactly when the policy grants it reads")
        if features.manager_reads != ("manager" in roles):
            raise ValueError("a 'manager' actor exists exactly when the policy grants it reads")
        fam = families.FAMILIES[self.bug.family]
        missing = [role for role in fam.needs_roles if role not in roles]
        if missing:
            raise ValueError(f"{fam.id} needs actors with the roles {missing}")
        traps = fam.every_trap if len(self.bug.sites) > 1 else fam.traps
        allowed = {t.name for t in traps}
        bad = [t for t in self.traps if t not in allowed]
        if bad or len(set(self.traps)) != len(self.traps):
            raise ValueError(
                f"traps must be distinct members of {sorted(allowed)}, got {self.traps}"
            )
        bad = [d for d in self.decoys if d not in DECOY_KINDS]
        if bad or len(set(self.decoys)) != len(self.decoys):
            raise ValueError(f"decoys must be distinct members of {list(DECOY_KINDS)}")
        for companion in self.companions:
            if companion not in families.COMPANIONS or companion == fam.id:
                raise ValueError(
                    f"companions must be members of {list(families.COMPANIONS)} other than "
                    f"the bug's family, got {companion!r}"
                )
            lacking = [r for r in families.FAMILIES[companion].needs_roles if r not in roles]
            if lacking:
                raise ValueError(f"companion {companion} needs actors with the roles {lacking}")
        if len(set(self.companions)) != len(self.companions):
            raise ValueError(f"companions must be distinct, got {self.companions}")
        if self.knobs.indirection not in fam.indirections:
            raise ValueError(
                f"knobs.indirection {self.knobs.indirection!r} does not fit {fam.id}; "
                f"use one of {list(fam.indirections)}"
            )
        return self

    @property
    def families(self) -> tuple[str, ...]:
        """The bug's family and its companions: every family whose routes the app serves."""
        return (self.bug.family, *self.companions)

    @property
    def features(self) -> PolicyFeatures:
        """The policy's degrees of freedom."""
        return policy_features(list(self.policy))

    def actor(self, role: str, tenant: str | None = None, index: int = 0) -> ActorSpec:
        """The ``index``-th actor with ``role`` (and ``tenant``)."""
        matches = [
            a for a in self.actors if a.role == role and (tenant is None or a.tenant == tenant)
        ]
        return matches[index]
