"""The red team's incomplete fixes, each graded in a real local sandbox: none may score 1.

A red-team run (tools only, as a trained policy would play) found seven patches that scored
1.0 although the fix was incomplete or opened a new hole. Each row here is one of them,
rendered as the trap its family now carries (so every gate run checks it too), applied to a
scenario of that family, and graded by the hidden suite exactly as an episode's terminal step
is: the score must stay below 1, and the named attacks must get through. "The fix plus a
check deleted elsewhere" must score 0 in every family; the gates check that per scenario
(``fix_plus_hole``), and the first row checks the red team's own version of it.
"""

from __future__ import annotations

import pytest

from a01gym.factory import appgen, author, compiler, config, mutator
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.spec import ScenarioSpec
from a01gym.grading.verification import Verification, verify
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import Outcome, TestKind
from a01gym.scenario.manifest import Patch


def _spec(family: str, site: str, trap: str | None = None) -> ScenarioSpec:
    """The first template scenario of ``family`` whose bug includes ``site``, with ``trap``."""
    cfg = config.FactoryConfig(count=40, families=[family], seed=11)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if site in spec.bug.sites:
            if trap is not None and trap not in spec.traps:
                spec = spec.model_copy(update={"traps": [*spec.traps[:3], trap]})
            return ScenarioSpec.model_validate(spec.model_dump())
    raise AssertionError(f"no {family} scenario with {site} in 40 drafts")


async def _verify(bundle: Bundle, patch: Patch) -> Verification:
    """Every hidden test's verdict on the patched app, none skipped."""
    async with LocalBackend(pool_size=1) as backend:
        report = await verify(
            backend, bundle, bundle.patched_workspace(patch), seed=7, stop_early=False
        )
    assert report.app.state.value == "running", report.app.error
    return report


def _broken(report: Verification) -> list[str]:
    """The regressions (legitimate uses) that did not pass."""
    return [
        r.test_id
        for r in report.results
        if r.kind is TestKind.REGRESSION and r.outcome is not Outcome.PASS
    ]


async def _grade(bundle: Bundle, patch: Patch) -> tuple[float, set[str]]:
    """The patch's score and the ids of the attacks (exploits or guards) that got through."""
    report = await _verify(bundle, patch)
    broken = _broken(report)
    assert not broken, broken  # each of these patches keeps legitimate use working
    through = {
        r.test_id
        for r in report.results
        if r.kind is not TestKind.REGRESSION and r.outcome is Outcome.PASS
    }
    return report.score.value, through


def _patch(spec: ScenarioSpec, files: dict[str, str], description: str) -> Patch:
    """The app ``files`` as a patch of the vulnerable app: the files that differ from it."""
    vulnerable = mutator.mutate(spec).vulnerable
    changed = {p: t for p, t in files.items() if vulnerable.files.get(p) != t}
    return Patch(description=f"red team: {description}", files=changed)


def _fix_plus_holes(spec: ScenarioSpec, *sites: str) -> Patch:
    """The reference fix with the checks of ``sites`` removed, as a patch of the vulnerable
    app."""
    holed = appgen.render_app(spec, appgen.Variant(modes=dict.fromkeys(sites, "vuln")))
    return _patch(spec, holed.files, f"fix plus holes at {', '.join(sites)}")


async def test_the_fix_plus_checks_deleted_elsewhere_scores_zero() -> None:
    # F03: the print route fixed, and can_modify dropped from the edit route and the admin
    # guard from GET /admin/users: another tenant edits, anyone reads every account's key.
    spec = _spec("F03", "record.print")
    bundle = compiler.compile_bundle(spec)
    score, through = await _grade(bundle, _fix_plus_holes(spec, "record.update", "admin.users"))
    assert score == 0.0
    assert any(t.startswith("guard.record.update.") for t in through), through
    assert any(t.startswith("guard.admin.users.") for t in through), through
    assert not any(t.startswith("exploit.") for t in through), through  # the bug is fixed


async def test_the_fix_plus_a_profile_hole_scores_zero_where_the_bug_opens_the_audit_log() -> None:
    # F04 with the audit log open: the profile's guard cannot read the audit log as proof of
    # the escalation (an exploit's request), so it proves it by the stored role. Before, no
    # guard stood there, and the fix plus a profile that takes a role scored 1.
    spec = _spec("F04", "admin.audit")
    bundle = compiler.compile_bundle(spec)
    assert "profile.update" not in spec.bug.sites
    score, through = await _grade(bundle, _fix_plus_holes(spec, "profile.update"))
    assert score == 0.0
    assert any(t.startswith("guard.profile.update.") and t.endswith(".role") for t in through)
    assert not any(t.startswith("exploit.") for t in through), through  # the bug is fixed


async def test_the_fix_plus_writes_locked_down_elsewhere_scores_zero() -> None:
    # An IDOR on reads, fixed, with the record's writes refused to everyone: owners can no
    # longer edit, archive or delete their records. No exploit gets through, and before every
    # suite used each clause of the policy (stop of 2026-12-07) no regression stood on those
    # routes in an F01 app: this patch scored 1.
    spec = _spec("F01", "record.read")
    writes = ("record.update", "record.archive", "record.delete")
    assert not set(writes) & set(spec.bug.sites)
    locked = appgen.render_app(spec, appgen.Variant(modes=dict.fromkeys(writes, Mode.DENY)))
    patch = _patch(spec, locked.files, "the fix, and every write refused")
    report = await _verify(compiler.compile_bundle(spec), patch)
    assert report.score.value == 0.0
    assert {
        "regression.owner_update",
        "regression.owner_archive",
        "regression.owner_delete",
        "regression.admin_delete",  # administrators may delete any record in every policy
    } <= set(_broken(report))
    assert not [
        r.test_id
        for r in report.results
        if r.kind is not TestKind.REGRESSION and r.outcome is Outcome.PASS
    ]  # the bug itself is fixed


async def test_the_fix_plus_profiles_opened_to_anyone_scores_zero() -> None:
    # The IDOR fixed, and another user's public profile served to callers who are not signed
    # in (the policy lets only signed-in users read it). Before the profile's anonymous guard
    # (2026-12-07) no hidden test made a signed-out request there: this patch scored 1.
    spec = _spec("F01", "record.read")
    files = dict(mutator.mutate(spec).fixed.files)
    fixed = files["app/routers/users.py"]
    signature = "    user: security.SignedIn,\n    session: Session = Depends(db.get_session),\n"
    holder = "    if user.id == user_id or user.is_admin:\n"
    head, sep, rest = fixed.partition("def read_profile(")
    assert sep and rest.count(signature) >= 1 and holder in rest, "the profile route changed"
    rest = rest.replace(
        signature,
        "    user: security.CurrentUser | None = Depends(security.optional_user),\n"
        "    session: Session = Depends(db.get_session),\n",
        1,
    ).replace(holder, "    if user is not None and (user.id == user_id or user.is_admin):\n", 1)
    files["app/routers/users.py"] = head + sep + rest
    patch = _patch(spec, files, "the fix, and profiles readable without signing in")
    score, through = await _grade(compiler.compile_bundle(spec), patch)
    assert score == 0.0
    assert through == {"guard.profile.read.anon"}, through  # the bug itself is fixed


@pytest.mark.parametrize(
    ("family", "site", "trap", "attacks"),
    [
        # reject alg none, verify only HS256: HS512, RS256 and no-alg tokens sign in as anyone
        ("F15", "jwt.signature", "none_rejected", (".hs512", ".rs256", ".noalg")),
        # a link opens what its creator may edit: the victim's link to their other record
        ("F16", "share.open", "creator_edits", (".sibling",)),
        # only owner_id stripped from the create body: the tenant is still the caller's choice
        ("F06", "record.create", "strip_owner", (".tenant",)),
        # a non-empty X-CSRF-Token, never compared with the cookie
        ("F18", "csrf.archive", "token_present", (".wrong_token",)),
        # managers may grant everything but admin: support still granted
        ("F20", "roles.grant", "all_but_admin", (".support",)),
        # the admin check skipped when the target is the caller: users disable themselves
        ("F04", "admin.disable", "self_exempt", (".self",)),
    ],
)
async def test_red_team_incomplete_fix_scores_below_one(
    family: str, site: str, trap: str, attacks: tuple[str, ...]
) -> None:
    spec = _spec(family, site, trap)
    bundle = compiler.compile_bundle(spec)
    score, through = await _grade(bundle, bundle.hidden.traps[trap])
    assert score < 1.0
    for attack in attacks:
        assert any(t.endswith(attack) and site in t for t in through), (attack, through)
