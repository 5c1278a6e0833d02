"""ScenarioSpec validation: strict, and every error names the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from a01gym.factory import families
from a01gym.factory.spec import (
    BugTarget,
    PolicyFeatures,
    PolicyRule,
    ScenarioSpec,
    canonical_policy,
    policy_features,
)


def _data(**changes: object) -> dict[str, Any]:
    from a01gym.factory import author, config

    request = author.plan(config.FactoryConfig(count=1, families=["F01"]))[0]
    data = author.TemplateAuthor().draft(request).model_dump(mode="json")
    data.update(changes)
    return data


def test_template_spec_round_trips_through_json(spec_for: Any) -> None:
    spec = spec_for("F02")
    assert ScenarioSpec.model_validate_json(spec.model_dump_json()) == spec


def test_extra_fields_are_forbidden() -> None:
    with pytest.raises(ValidationError, match="surprise"):
        ScenarioSpec.model_validate(_data(surprise=1))


def test_unknown_family_is_rejected_with_the_catalog() -> None:
    with pytest.raises(ValidationError, match="unknown family 'F99'"):
        BugTarget(family="F99", cwe="CWE-639", sites=["record.read"])


def test_cwe_must_fit_the_family() -> None:
    with pytest.raises(ValidationError, match="does not fit F01"):
        BugTarget(family="F01", cwe="CWE-22", sites=["record.read"])


def test_sites_must_belong_to_the_family() -> None:
    with pytest.raises(ValidationError, match="sites must be distinct members"):
        BugTarget(family="F01", cwe="CWE-639", sites=["files.download"])


def test_each_tenant_needs_two_users() -> None:
    data = _data()
    b_users = [a for a in data["actors"] if a["tenant"] == "b" and a["role"] == "user"]
    data["actors"].remove(b_users[-1])
    data["actors"].append({"name": "zed", "role": "user", "tenant": "a", "display_name": ""})
    with pytest.raises(ValidationError, match="tenant 'b' needs at least 2"):
        ScenarioSpec.model_validate(data)


def test_unsupported_policy_names_the_rule() -> None:
    data = _data()
    data["policy"] = [r for r in data["policy"] if r["action"] != "delete"]
    with pytest.raises(ValidationError, match=r"record\.delete: expected \['admin', 'owner'\]"):
        ScenarioSpec.model_validate(data)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("admin_edits", [True, False])
def test_policy_features_round_trip(shared: bool, admin_edits: bool) -> None:
    features = PolicyFeatures(shared=shared, admin_edits=admin_edits)
    assert policy_features(canonical_policy(features)) == features


def test_policy_rule_sorts_principals() -> None:
    rule = PolicyRule(resource="record", action="read", allow=["owner", "admin", "owner"])
    assert rule.allow == ["admin", "owner"]


def test_traps_must_fit_the_family() -> None:
    with pytest.raises(ValidationError, match="traps must be distinct members"):
        ScenarioSpec.model_validate(_data(traps=["strip_once"]))


def test_every_family_has_a_primary_cwe_in_its_list() -> None:
    for fam in families.FAMILIES.values():
        assert fam.cwe in fam.cwes
        assert fam.owasp == "A01:2021"


def test_companions_are_other_self_contained_families_with_their_roles() -> None:
    data = _data()
    assert data["companions"]  # the template author draws them
    assert "F01" not in families.COMPANIONS and "F14" not in families.COMPANIONS
    for wrong, message in (
        (["F01"], "companions must be members"),  # the bug's own family
        (["F07"], "companions must be members"),  # its sites are the skeleton's
        (["F14"], "companions must be members"),  # its code adds middleware and mounts
        (["F21", "F21"], "companions must be distinct"),
    ):
        with pytest.raises(ValidationError, match=message):
            ScenarioSpec.model_validate({**data, "companions": wrong})
    # without a manager actor (and the policy line that grants it reads), F20 cannot stand by
    spec = ScenarioSpec.model_validate(data)
    features = policy_features(spec.policy).model_copy(update={"manager_reads": False})
    data = {
        **data,
        "actors": [a for a in data["actors"] if a["role"] != "manager"],
        "policy": [r.model_dump(mode="json") for r in canonical_policy(features)],
        "companions": [c for c in data["companions"] if c != "F20"],
    }
    ScenarioSpec.model_validate(data)
    with pytest.raises(ValidationError, match=r"companion F20 needs .*manager"):
        ScenarioSpec.model_validate({**data, "companions": ["F20"]})
