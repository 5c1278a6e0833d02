"""The family package: one module per family, its hooks, and truthful OWASP labels."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import a01gym.factory
from a01gym.factory import compiler, families, mutator, testkit
from a01gym.factory.families import base
from a01gym.factory.spec import ScenarioSpec

SRC = Path(a01gym.factory.__file__).parent


def test_each_family_module_defines_the_family_its_name_says() -> None:
    found = {}
    for info in pkgutil.iter_modules(families.__path__):
        if info.name.startswith("f") and info.name[1:3].isdigit():
            module = importlib.import_module(f"a01gym.factory.families.{info.name}")
            assert isinstance(module.FAMILY, base.Family)
            assert module.FAMILY.id == "F" + info.name[1:3]
            found[module.FAMILY.id] = module.FAMILY
    assert found == families.FAMILIES  # every module is registered, nothing else is


def test_no_factory_module_is_over_500_lines() -> None:
    sizes = {p.relative_to(SRC): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 500} == {}


def test_every_trap_a_family_lists_renders_a_change(family_id: str, spec_for: Any) -> None:
    fam = families.family(family_id)
    seen: set[str] = set()
    for index in range(8):
        spec = spec_for(family_id, index)
        bundle = compiler.compile_bundle(spec)  # refuses a trap that changes nothing
        seen |= set(bundle.hidden.traps)
    assert set(fam.trap_names) <= seen | set(fam.trap_sites)


def test_owasp_mapping_label_is_carried_exactly_when_the_fit_is_not_plain_a01(
    family_id: str, spec_for: Any
) -> None:
    labels = compiler.compile_bundle(spec_for(family_id)).hidden.labels
    fam = families.family(family_id)
    assert labels.get("owasp_mapping", "") == fam.mapping
    if family_id in ("F12", "F15", "F16"):
        assert labels["owasp_mapping"].startswith("loose:")
        assert "A0" in labels["owasp_mapping"].replace("A01", "")


def test_role_escalation_scenarios_always_have_a_manager(spec_for: Any) -> None:
    for index in range(6):
        spec = spec_for("F20", index)
        assert spec.features.manager_reads and spec.actor("manager").tenant == "b"
    data = spec_for("F20").model_dump()
    data["actors"] = [a for a in data["actors"] if a["role"] != "manager"]
    data["policy"] = [
        {**rule, "allow": [p for p in rule["allow"] if p != "manager"]} for rule in data["policy"]
    ]
    with pytest.raises(ValueError, match="F20 needs actors with the roles"):
        ScenarioSpec.model_validate(data)


def test_a_managers_role_change_shows_only_what_the_policy_lets_a_manager_see(
    spec_for: Any,
) -> None:
    """The role change answered with the member's e-mail and API key, which the policy shows
    to the account holder and administrators only; the manager's regression now fails if an
    API key comes back, and the policy says a manager sees their tenant's roles (the member
    listing shows them)."""
    spec = spec_for("F20")
    bundle = compiler.compile_bundle(spec)
    router = bundle.workspace["app/routers/members.py"].decode()
    assert '@router.put("/members/{user_id}/role", response_model=models.UserPublic)' in router
    tests = {t.id: t for t in bundle.hidden.tests}
    lacks = [
        e
        for e in tests["regression.manager_promotes"].steps[0].expect
        if type(e).__name__ == "BodyLacks"
    ]
    assert [e.value for e in lacks] == ["{{canary:" + spec.actor("user", "b", 1).name + "_key}}"]
    assert not any(
        type(e).__name__ == "BodyLacks" for e in tests["regression.admin_grants"].steps[0].expect
    )
    assert "a manager sees the roles of the users in" in bundle.manifest.policy


def test_a_profile_shows_its_private_fields_to_the_holder_and_administrators(
    spec_for: Any,
) -> None:
    """The secure profile view returned the public fields to every caller, so "every profile
    public" was the reference fix and passed. It now answers by caller in every app, F09's
    hidden suite has the holder's and an administrator's private view, and the old reference
    is an F09 trap (G6 proves those regressions fail it, in real sandboxes). The vulnerable
    profile has the same branch and answers anyone else with the stored row."""
    by_caller = "if user.id == user_id or user.is_admin:"
    spec = next(s for s in (spec_for("F09", i) for i in range(64)) if "profile.view" in s.bug.sites)
    bundle = compiler.compile_bundle(spec)
    fixed = "".join(bundle.hidden.reference_fix.files.values())
    vulnerable = "".join(v.decode() for k, v in bundle.workspace.items() if k.endswith(".py"))
    assert by_caller in fixed and by_caller in vulnerable  # the fix is one line, not a branch
    stored_row = f"{by_caller}\n        return models.UserPrivate"
    assert "    return profile\n" in vulnerable and "    return profile\n" not in fixed
    assert stored_row in vulnerable and stored_row in fixed
    trap = "".join(mutator.mutate(spec).traps["public_to_all"].files.values())
    assert by_caller not in trap and "models.UserPublic" in trap
    tests = {t.id: t for t in bundle.hidden.tests}
    victim = testkit.Cast(spec).victim
    for test_id, actor in (
        ("regression.profile_holder", victim),
        ("regression.profile_admin", testkit.Cast(spec).admin),
    ):
        step = tests[test_id].steps[0]
        assert (step.actor, step.path) == (actor, f"/users/{testkit.id_of(victim)}")
        assert [e.value for e in step.expect if type(e).__name__ == "BodyContains"] == [
            testkit.canary(f"{victim}_key")
        ]
    assert "an account's profile shows them to both" in bundle.manifest.policy
    other = compiler.compile_bundle(spec_for("F01"))
    assert by_caller in "".join(v.decode() for k, v in other.workspace.items() if k.endswith(".py"))


def test_require_login_trap_makes_every_optional_route_require_a_caller(spec_for: Any) -> None:
    spec = next(
        s for s in (spec_for("F19", i) for i in range(64)) if s.bug.sites == ["optional.activity"]
    )
    trap = mutator.mutate(spec).traps["require_login"].files["app/routers/feed.py"]
    assert "security.optional_user" not in trap
    assert trap.count("Depends(security.current_user)") == 2


def test_jwt_family_implements_hs256_with_the_standard_library(spec_for: Any) -> None:
    files = mutator.mutate(spec_for("F15")).fixed.files
    assert "import jwt" not in files["app/tokens.py"]
    assert "hmac.compare_digest" in files["app/tokens.py"]
    assert "app/routers/api.py" in files
