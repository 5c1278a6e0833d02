"""What a task text must not give away, checked the same way by the unit and integration tiers.

The agent's reset observation (text and structured result) never names the family (its id,
its title or the weakness's common name), a CWE id, or a route the hidden exploits attack; every
task has one template whatever the family and hint level; the written policy states a rule for
every route the app serves; and the policy's order does not say which rule is broken.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterable
from typing import Any

from a01gym.env import briefing
from a01gym.factory import compiler, families
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import TestKind

WEAKNESS_NAMES = re.compile(
    r"\bIDOR\b|insecure direct object|broken object.level|mass.assignment|traversal|"
    r"open.redirect|\bCORS\b|cross.origin resource|method confusion|path mismatch|\bJWT\b|"
    r"forced browsing|(?<![\w-])CSRF(?![\w-])|cross.site request forgery|optional.auth|"
    r"privilege escalation|role escalation|excessive data exposure|missing authentication|"
    r"function.level|client.controlled|tenant.isolation|owner filter|over.broad|"
    r"forwarding headers?|spoof|predictable|unbound|weakened",
    re.IGNORECASE,
)
"""The families' weakness names in words (an identifier the app itself defines, such as its
``X-CSRF-Token`` header, is the app's interface and may be named)."""

_SITE_RULES = {
    "record.read": r"^Read an? ",
    "record.print": r"^Read an? ",
    "record.update": r"^Edit ",
    "record.delete": r"^Delete ",
    "record.archive": r"^Archive ",
    "record.list": r"in lists and searches",
    "record.search": r"in lists and searches",
    "record.export": r"in reports and exports",
    "record.digest": r"in reports and exports",
    "record.create": r"^Create ",
    "admin": r"^Use the administration pages",
    "guard": r"^Use the administration pages",
    "auth.impersonate": r"^Act as another user",
    "profile.update": r"^Change an account's",
    "profile.view": r"^Private account fields",
    "team.list": r"^Private account fields",
    "files.download": r"^Download a stored file",
    "settings.update": r"^Change the .* settings",
    "debug.config": r"diagnostics page",
}
"""The policy line of each shared site (a family's own sites have its own lines)."""


def _route_rules(spec: ScenarioSpec) -> list[tuple[str, str]]:
    """(route pattern, policy line pattern): the rule each route of the skeleton keeps."""
    entity = spec.domain.entity
    p = "(?:" + re.escape(entity.plural) + "|" + re.escape(entity.plural.replace("_", "-")) + ")"
    one = p + r"/\{" + re.escape(entity.name) + "_id}"
    return [
        (r"^GET /(health|admin-guide)$", r"health check and the administrator guide are public"),
        (r"^GET /public/stats$", r"^The number of .* is public"),
        (r"/admin/", r"^Use the administration pages"),
        (r"^GET /debug/config$", r"diagnostics page"),
        (r"^GET /files(/download|/preview)?$", r"^Download a stored file"),
        (r"^GET /(team|users/\{user_id})$", r"public profile"),
        (r"^GET /users/me$", r"^Private account fields"),
        (r"^PATCH /users/me$", r"^Change an account's display name and e-mail"),
        (r"^GET /tenant/settings$", r"^Read the .* settings"),
        (r"^(PATCH|PUT) /tenant/settings$", r"^Change the .* settings"),
        (rf"^GET /{p}(/search)?$", r"in lists and searches"),
        (rf"^POST /{p}$", r"^Create "),
        (rf"^GET /{one}$", r"^Read an? "),
        (rf"^PATCH /{one}$", r"^Edit "),
        (rf"^DELETE /{one}$", r"^Delete "),
        (rf"^POST /{one}/archive$", r"^Archive "),
        (rf"^GET /reports/{p}", r"in reports and exports"),
    ]


def bug_paths(bundle: Bundle) -> set[str]:
    """The fixed part of every path the hidden exploits attack (up to the first placeholder)."""
    paths = set()
    for test in bundle.hidden.tests:
        if test.kind is TestKind.EXPLOIT:
            for step in test.steps:
                fixed = step.path.split("{{")[0].rstrip("/")
                if len(fixed) > 1:
                    paths.add(fixed)
    return paths


def assert_names_no_bug(bundle: Bundle, text: str, result: dict[str, Any]) -> None:
    """The reset observation (``briefing.render``'s text and result) names no bug.

    The tools section's example request is the visible owner-read test's, the same kind of
    request in every scenario; every other part must not contain a route the exploits attack.
    """
    labels = bundle.hidden.labels
    fam = families.family(labels["family"])
    name = (bundle.manifest.name, fam.id)
    seen = "\n".join([text, json.dumps(result)])
    assert not re.search(r"CWE-?\d+", seen, re.IGNORECASE), name
    assert not re.search(r"\bF\d\d\b", seen), name
    assert fam.title.lower() not in seen.lower(), name
    match = WEAKNESS_NAMES.search(seen)
    assert match is None, (name, match and match.group(0))
    for site in labels["sites"].split(","):
        assert site not in seen, (name, site)
    assert "more than one place" not in seen, name
    untooled = briefing.without_wire_tools(text) + "\n" + json.dumps(result)
    for path in bug_paths(bundle):  # as a route, not inside a file's path (app/routers/…)
        route = r"(?<![\w.])" + re.escape(path) + r"(?![\w-]|\.\w)"
        assert not re.search(route, untooled), (name, path)
    example = re.search(r'"tool":"http_request","method":"GET","path":"([^"]+)"', text)
    owner_read = next(t for t in bundle.manifest.visible_tests if t.id == "visible.owner_read")
    assert example is not None, name
    assert example.group(1).split("/")[1] == owner_read.steps[0].path.split("/")[1], name


def _opening(bundle: Bundle) -> str:
    task = bundle.workspace["TASK.md"].decode()
    paragraph = task.split("## Task\n\n")[1].split("\n")[0]
    return paragraph.split(" Start with ")[0].split(" The visible test")[0]


def _skeleton(bundle: Bundle) -> list[str]:
    """TASK.md's headings and the task's fixed sentences, with the app's name left out."""
    task = bundle.workspace["TASK.md"].decode()
    headings = [line for line in task.splitlines() if line.startswith("## ")]
    return [*headings, _opening(bundle), task.split("## Task\n\n")[1].split("\n")[1]]


def assert_one_template(bundles: Iterable[Bundle]) -> None:
    """Every task, whatever its family or hint level, is the same template filled with data."""
    skeletons: collections.Counter[tuple[str, ...]] = collections.Counter()
    for bundle in bundles:
        skeletons[tuple(_skeleton(bundle))] += 1
        task = bundle.workspace["TASK.md"].decode()
        hint = re.search(r" Start with ([^.]+)\.", task)
        level = int(bundle.hidden.labels["hint_level"])
        assert (hint is not None) == (level >= 3), bundle.manifest.name
        assert hint is None or "/" not in hint.group(1), hint
        assert ("The visible test" in task) == (level >= 4), bundle.manifest.name
    assert len(skeletons) == 1, skeletons


def assert_policy_is_complete(spec: ScenarioSpec, bundle: Bundle) -> None:
    """Every route the app serves falls under a rule of the written policy.

    A route outside the shared skeleton's belongs to the sites of the bug's family or of a
    companion family, whose words that family's policy hook adds.
    """
    lines = bundle.manifest.policy.splitlines()
    fam = families.family(spec.bug.family)
    own: list[str] = []
    for family_id in (fam.id, *spec.companions):
        hook = families.family(family_id).policy
        words = hook(spec) if hook is not None else []
        assert all(line in lines for line in words), family_id
        own += words
    assert any(re.search(r"^Act as another user", line) for line in lines), fam.id
    rules = _route_rules(spec)
    for route in bundle.manifest.routes:
        wanted = [rule for pattern, rule in rules if re.search(pattern, route)]
        if not wanted:
            assert own, (fam.id, route)  # a route of the family's own app
            continue
        assert any(re.search(wanted[0], line) for line in lines), (fam.id, route, wanted[0])


def _bug_line(spec: ScenarioSpec, lines: list[str]) -> int:
    fam = families.family(spec.bug.family)
    site = spec.bug.sites[0]
    rule = _SITE_RULES.get(site) or _SITE_RULES.get(site.split(".")[0])
    if rule is None:
        own = fam.policy(spec) if fam.policy is not None else []
        return min(lines.index(line) for line in own)
    return next(i for i, line in enumerate(lines) if re.search(rule, line))


def assert_order_hides_the_bug(specs: list[ScenarioSpec]) -> None:
    """The broken rule's place in the written policy varies within a family and overall."""
    places: dict[str, list[float]] = collections.defaultdict(list)
    for spec in specs:
        lines = compiler.policy_lines(spec)
        places[spec.bug.family].append(_bug_line(spec, lines) / (len(lines) - 1))
    assert set(places) == set(families.FAMILIES)
    for fam, where in places.items():
        assert len(set(where)) >= min(3, len(where)), (fam, where)
        assert max(collections.Counter(where).values()) <= max(2, len(where) // 2), (fam, where)
    every = [x for where in places.values() for x in where]
    assert sum(x == 1.0 for x in every) < 0.2 * len(every)  # last
    assert sum(x == 0.0 for x in every) < 0.2 * len(every)  # first
    assert 0.35 < sum(every) / len(every) < 0.65  # the mean place is the middle
