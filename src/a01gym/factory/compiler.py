"""The compiler: spec + mutation → :class:`~a01gym.scenario.bundle.Bundle`.

The workspace is the vulnerable app plus a ``TASK.md`` written at the spec's hint level. The
manifest carries what the agent may see (actors and their credential templates, the policy in
words, visible tests) and the route inventory the renderer recorded (the one record of it:
reset, grading and the hidden inventory test all read it there); ``hidden.json`` carries the
fixture, the hidden tests, the reference fix, the traps and the labels. Patches are whole-file
overlays against the vulnerable workspace.

A leakage lint refuses a workspace that names its bug (research/a01-catalog.md §5.1 G6): no
history, no reference fix, no mutation notes, no words such as "vulnerable" in the app code.
"""

from __future__ import annotations

import hashlib
import json
import re

from a01gym.errors import ScenarioError
from a01gym.factory import (
    difficulty,
    exploits,
    families,
    guards,
    mutator,
    regressions,
    testkit,
)
from a01gym.factory.appgen import ENTRYPOINT, RenderedApp
from a01gym.factory.mutator import Mutation
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle, canonical_json
from a01gym.scenario.manifest import Actor, Budget, HiddenPart, Manifest, Patch

__all__ = [
    "LEAK_WORDS",
    "compile_bundle",
    "lint_workspace",
    "policy_clauses",
    "policy_lines",
    "spec_digest",
    "task_text",
]

LEAK_WORDS = re.compile(
    r"vulnerab|exploit|\bidor\b|cwe-|owasp|mass.assign|travers|\bbug\b|\btrap|canary|hidden|"
    r"mutat|reference.fix|inject|insecure|\bfixme\b|\btodo\b|\bhack",
    re.IGNORECASE,
)

_TASK = (
    "A security review found that the app does not enforce the access policy below "
    "(OWASP Top 10 2021, A01: Broken Access Control). It may sit in one place or in several."
)
"""The task's one wording, whatever the family, the site count or the hint level."""

_AREAS = {
    "record": "the {label} routes",
    "admin": "the administration pages",
    "auth": "acting as another user",
    "profile": "the account pages",
    "team": "the account pages",
    "files": "file downloads",
    "settings": "the {tenant} settings",
    "debug": "the diagnostics page",
}
"""Where hint level 3 tells the agent to start: an area of the app, never a route or a CWE
(by the prefix of the shared skeleton's sites; a family names the areas of sites only its
app has in ``Family.hint_areas``)."""


def spec_digest(spec: ScenarioSpec) -> str:
    """sha256 of the spec's canonical JSON (used for names, splits and provenance)."""
    return hashlib.sha256(canonical_json(spec.model_dump(mode="json"))).hexdigest()


def task_text(spec: ScenarioSpec, policy_lines: list[str]) -> str:
    """TASK.md at the spec's hint level: level 3 names the area to start with, level 4 also
    points at the visible reproduction; no level names the family, the CWE or a route."""
    level = spec.knobs.hint_level
    hint = _TASK
    if level >= 3:
        prefix = spec.bug.sites[0].split(".")[0]
        area = _AREAS.get(prefix) or families.family(spec.bug.family).hint_areas[prefix]
        hint += (
            " Start with "
            + area.format(label=spec.domain.entity.label, tenant=spec.domain.tenant_noun)
            + "."
        )
    if level >= 4:
        hint += " The visible test whose id starts with `visible.exploit` reproduces it."
    actors = []
    for actor in spec.actors:
        if actor.role == "anonymous":
            actors.append("- `anonymous`: no credentials")
            continue
        tenant = (
            f", {spec.domain.tenant_noun} {spec.domain.tenant_names['ab'.index(actor.tenant)]}"
            if actor.tenant
            else ""
        )
        actors.append(f"- `{actor.name}`: {actor.role}{tenant}")
    return "\n".join(
        [
            f"# {spec.domain.app_name}",
            "",
            f"{spec.domain.description} A FastAPI app (`{ENTRYPOINT}`) over SQLite; "
            "each request authenticates with a bearer session token.",
            "",
            "## Task",
            "",
            hint,
            "Change the code so that the policy holds everywhere, without breaking legitimate "
            "use: every route must keep working, with the same response shape, for everyone the "
            "policy allows. Do not remove routes.",
            "",
            "## Access policy",
            "",
            *[f"- {line}" for line in policy_lines],
            "",
            "## Actors",
            "",
            *actors,
            "",
            "`http_request` sends an actor's credentials when you name it in `actor`.",
            "",
        ]
    )


def policy_lines(spec: ScenarioSpec) -> list[str]:
    """Every rule the app keeps, in words, in an order drawn from the spec's seed (the lines
    of :func:`policy_clauses`)."""
    return [line for _, line in policy_clauses(spec)]


def policy_clauses(spec: ScenarioSpec) -> list[tuple[str, str]]:
    """Every rule the app keeps as ``(key, line)``, in an order drawn from the spec's seed.

    The key names the clause for the hidden tests' report (:mod:`a01gym.factory.clauses`),
    never for the agent: ``resource.action`` for the spec's rules (``record.read``,
    ``admin.manage``), ``fields.private``, ``pages.public`` and ``stats.public`` for the
    skeleton's fixed lines, and the family's id for its own lines.

    The lines are the spec's rules, the skeleton's fixed ones (private fields, public pages,
    a public count when the app serves one) and the family's and each companion's words for
    the sites only their app code has. None names a route, and the order depends on the seed
    and the line alone, so neither the broken rule's place nor the family's own line's says
    which rule is broken.
    """
    label = spec.domain.entity.label
    label = ("an " if label[0].lower() in "aeiou" else "a ") + label
    tenant = spec.domain.tenant_noun
    words = {
        "anonymous": "anyone",
        "any_user": "anyone signed in",
        "owner": "its owner",
        "self": "the account holder",
        "team_if_shared": f"members of the owner's {tenant} when the record is shared (team)",
        "support": "support staff",
        "manager": f"the manager of the record's {tenant}",
        "admin": "administrators",
    }
    what = {
        ("record", "read"): f"Read {label}",
        ("record", "list"): f"See {label} in lists and searches",
        ("record", "export"): f"See {label} in reports and exports",
        ("record", "create"): f"Create {label} (owned by the creator, in their {tenant})",
        ("record", "update"): f"Edit {label}",
        ("record", "archive"): f"Archive {label}",
        ("record", "delete"): f"Delete {label}",
        ("profile", "read"): "See another user's public profile (id, username, display name)",
        ("profile", "update"): "Change an account's display name and e-mail",
        ("profile", "impersonate"): "Act as another user (the X-Act-As header)",
        (
            "admin",
            "manage",
        ): "Use the administration pages (accounts, roles, audit log); change roles",
        ("files", "read"): "Download a stored file",
        ("debug", "read"): "See the diagnostics page",
        (
            "settings",
            "read",
        ): f"Read the {tenant} settings of one's own {tenant}",
        ("settings", "update"): f"Change the {tenant} settings",
    }
    clauses = []
    for rule in spec.policy:
        who = ", ".join(words[p] for p in rule.allow)
        line = f"{what[(rule.resource, rule.action)]}: {who}."
        clauses.append((f"{rule.resource}.{rule.action}", line))
    clauses.append(
        (
            "fields.private",
            "Private account fields (e-mail, role, API key) are shown only to the account "
            "holder and administrators, and an account's profile shows them to both.",
        )
    )
    clauses.append(("pages.public", "The health check and the administrator guide are public."))
    if "public_stats" in spec.decoys:  # the app serves the count: a rule the app keeps
        count = f"The number of {spec.domain.entity.label} records is public (no content)."
        clauses.append(("stats.public", count))
    for family_id in spec.families:
        extra = families.family(family_id).policy
        clauses += [(family_id, line) for line in (extra(spec) if extra is not None else [])]
    # An order drawn per scenario: the family's own rule is not always the last line.
    return sorted(clauses, key=lambda c: hashlib.sha256(f"{spec.seed}\x00{c[1]}".encode()).digest())


def lint_workspace(files: dict[str, str]) -> None:
    """Refuse app code that reveals the bug.

    Raises:
        ScenarioError: naming the file and the offending word.
    """
    for path, text in files.items():
        if path.startswith(".git") or "/.git" in path:
            raise ScenarioError(f"workspace contains version-control data: {path}")
        if path == "TASK.md":
            continue
        match = LEAK_WORDS.search(text)
        if match:
            raise ScenarioError(f"workspace file {path} reveals the bug: {match.group(0)!r}")


def _patch(base: RenderedApp, target: RenderedApp, description: str) -> Patch:
    files: dict[str, str | None] = {
        path: text for path, text in sorted(target.files.items()) if base.files.get(path) != text
    }
    files.update({path: None for path in sorted(base.files) if path not in target.files})
    return Patch(description=description, files=files)


def compile_bundle(spec: ScenarioSpec, mutation: Mutation | None = None) -> Bundle:
    """Build the bundle (with its content hash) for ``spec``.

    Raises:
        ScenarioError: when a trap or the fix renders no change, or the workspace leaks.
    """
    mutation = mutation or mutator.mutate(spec)
    fam = families.family(spec.bug.family)
    routes = mutation.vulnerable.routes
    if mutation.fixed.routes != routes:
        raise ScenarioError(f"reference fix changes the route inventory of {spec.domain.id}")
    lines = policy_lines(spec)
    workspace_text = dict(mutation.vulnerable.files)
    workspace_text["TASK.md"] = task_text(spec, lines)
    lint_workspace(workspace_text)
    reference = _patch(mutation.vulnerable, mutation.fixed, "reference fix")
    if not reference.files:
        raise ScenarioError("the reference fix renders no change")
    traps: dict[str, Patch] = {}
    for name, app in mutation.traps.items():
        patch = _patch(mutation.vulnerable, app, f"trap: {name}")
        if not patch.files or patch.files == reference.files:
            raise ScenarioError(f"trap {name!r} renders no change or equals the reference fix")
        traps[name] = patch
    actors = []
    for actor in spec.actors:
        tenant = spec.domain.tenant_names["ab".index(actor.tenant)] if actor.tenant else None
        headers = (
            {}
            if actor.role == "anonymous"
            else {"Authorization": "Bearer {{token:" + actor.name + "}}"}
        )
        actors.append(
            Actor(
                name=actor.name,
                role=actor.role,
                tenant=tenant,
                headers=headers,
                description=actor.display_name or actor.role,
            )
        )
    features = difficulty.measure(spec, mutation.vulnerable.files, mutation.fixed.files)
    score = difficulty.score(features)
    digest = spec_digest(spec)
    manifest = Manifest(
        name=f"{spec.domain.id}-{digest[:10]}",
        title=spec.domain.app_name,
        entrypoint=ENTRYPOINT,
        actors=actors,
        budget=Budget(max_steps=30 + 10 * len(spec.bug.sites)),
        policy="\n".join(lines),
        visible_seed=mutator.visible_seed(spec),
        visible_tests=regressions.visible_tests(spec),
        routes=routes,
    )
    hidden = HiddenPart(
        fixture=testkit.build_fixture(spec),
        tests=exploits.exploit_tests(spec)
        + regressions.regression_tests(spec)
        + guards.guard_tests(spec),
        reference_fix=reference,
        traps=traps,
        labels={
            "family": fam.id,
            "family_title": fam.title,
            "cwe": spec.bug.cwe,
            "owasp": spec.bug.owasp,
            "domain": spec.domain.id,
            "sites": ",".join(spec.bug.sites),
            "distance": spec.knobs.distance,
            "indirection": spec.knobs.indirection,
            "data_access": spec.knobs.data_access,
            "hint_level": str(spec.knobs.hint_level),
            "decoys": ",".join(spec.decoys),
            "companions": ",".join(spec.companions),
            "layout": spec.layout.model_dump_json(),
            "difficulty": difficulty.band(score),
            "difficulty_score": f"{score:.3f}",
            "difficulty_features": json.dumps(features._asdict()),
            "spec_sha256": digest,
            **({"owasp_mapping": fam.mapping} if fam.mapping else {}),
        },
    )
    workspace = {path: text.encode() for path, text in sorted(workspace_text.items())}
    return Bundle(manifest=manifest, hidden=hidden, workspace=workspace).with_hash()
