"""The compiler: bundle shape, hash reproducibility, nothing hidden in the workspace."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from a01gym.errors import ScenarioError
from a01gym.factory import compiler, families, gates, mutator, testkit
from a01gym.grading import runner
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.fixtures import CANARY_SHAPES, PLACEHOLDER
from a01gym.scenario.httptest import DbCheck, RoutesInclude, TestKind


def test_same_spec_gives_byte_identical_hash(family_id: str, spec_for: Any) -> None:
    first = compiler.compile_bundle(spec_for(family_id, 1))
    second = compiler.compile_bundle(spec_for(family_id, 1))
    assert first.manifest.content_hash == second.manifest.content_hash
    assert first.manifest.content_hash == first.compute_hash()


def test_bundle_round_trips_through_disk(tmp_path: Any, spec_for: Any) -> None:
    bundle = compiler.compile_bundle(spec_for("F02", 1))
    bundle.write(tmp_path / "b")
    loaded = Bundle.load(tmp_path / "b")
    loaded.verify_hash()
    assert loaded.manifest.content_hash == bundle.manifest.content_hash


def test_workspace_reveals_nothing_hidden(family_id: str, spec_for: Any) -> None:
    spec = spec_for(family_id, 2)
    bundle = compiler.compile_bundle(spec)
    text = "\n".join(content.decode() for content in bundle.workspace.values())
    assert not any(path.startswith(".git") for path in bundle.workspace)
    assert set(bundle.workspace) >= {"TASK.md", "app/main.py"}
    for test in bundle.hidden.tests:
        assert test.id not in text
    for trap in bundle.hidden.traps:
        assert f"trap: {trap}" not in text
    assert "{{" not in text  # no fixture placeholders (canaries, tokens) in the workspace
    if spec.knobs.hint_level < 3:
        assert spec.bug.cwe not in text
    if spec.knobs.hint_level < 2:
        assert "A01" not in text and "OWASP" not in text


def test_hint_levels_add_an_area_then_a_reproduction_never_the_cwe(spec_for: Any) -> None:
    spec = spec_for("F01")
    texts = {}
    for level in range(5):
        knobs = spec.knobs.model_copy(update={"hint_level": level})
        bundle = compiler.compile_bundle(spec.model_copy(update={"knobs": knobs}))
        texts[level] = bundle.workspace["TASK.md"].decode()
    assert texts[0] == texts[1] == texts[2]  # one wording below level 3
    assert "Start with the " + spec.domain.entity.label + " routes." in texts[3]
    assert "Start with" not in texts[2] and "visible.exploit" not in texts[3]
    assert "visible.exploit" in texts[4]
    assert not any(spec.bug.cwe in text or "CWE-" in text for text in texts.values())
    bundle4 = compiler.compile_bundle(
        spec.model_copy(update={"knobs": spec.knobs.model_copy(update={"hint_level": 4})})
    )
    assert any(t.kind is TestKind.EXPLOIT for t in bundle4.manifest.visible_tests)


def test_visible_tests_differ_from_hidden_ones(family_id: str, spec_for: Any) -> None:
    spec = spec_for(family_id, 0)
    spec = spec.model_copy(update={"knobs": spec.knobs.model_copy(update={"hint_level": 4})})
    bundle = compiler.compile_bundle(spec)
    hidden_ids = {t.id for t in bundle.hidden.tests}
    hidden_steps = {
        json.dumps(t.model_dump(exclude={"id", "description"}), sort_keys=True)
        for t in bundle.hidden.tests
    }
    for test in bundle.manifest.visible_tests:
        assert test.id.startswith("visible.")
        assert test.id not in hidden_ids
        content = json.dumps(test.model_dump(exclude={"id", "description"}), sort_keys=True)
        assert content not in hidden_steps


def test_hidden_tests_are_outcome_based(family_id: str, spec_for: Any) -> None:
    bundle = compiler.compile_bundle(spec_for(family_id, 1))
    exploits = [t for t in bundle.hidden.tests if t.kind is TestKind.EXPLOIT]
    assert exploits
    for test in exploits:
        kinds = {type(a).__name__ for s in test.steps for a in s.expect}
        # a read exploit looks for a canary; a write exploit checks the database
        assert "BodyContains" in kinds or any(isinstance(c, DbCheck) for c in test.db_checks)
        assert "StatusIn" not in kinds
    inventory = [t for t in bundle.hidden.tests if t.id == "regression.routes"]
    assert inventory and isinstance(inventory[0].steps[0].expect[0], RoutesInclude)
    assert inventory[0].steps[0].path == "/openapi.json"


def test_the_route_inventory_is_recorded_once_in_the_manifest(spec_for: Any) -> None:
    """The renderer's inventory goes into the manifest; the hidden inventory test names no
    routes of its own (the runner fills in the manifest's), so the two cannot disagree."""
    spec = spec_for("F01", 2)
    bundle = compiler.compile_bundle(spec)
    rendered = mutator.mutate(spec).vulnerable.routes
    assert bundle.manifest.routes == rendered and "GET /health" in rendered
    checks = [a for t in bundle.hidden.tests for s in t.steps for a in s.expect]
    inventories = [a for a in checks if isinstance(a, RoutesInclude)]
    assert inventories and all(a.routes is None for a in inventories)
    filled = runner.with_inventory(
        next(t for t in bundle.hidden.tests if t.id == "regression.routes"),
        bundle.manifest.routes,
    )
    assert filled.steps[0].expect[0].routes == rendered


def test_every_actor_class_the_policy_allows_has_a_positive_control(spec_for: Any) -> None:
    for index in range(12):
        spec = spec_for("F01", index)
        ids = {t.id for t in compiler.compile_bundle(spec).hidden.tests}
        assert {"regression.owner_read", "regression.admin_read", "regression.health"} <= ids
        assert ("regression.shared_read" in ids) == spec.features.shared
        assert ("regression.support_read" in ids) == spec.features.support_reads
        assert ("regression.manager_read" in ids) == spec.features.manager_reads


def test_tests_and_fixture_use_only_placeholders(spec_for: Any) -> None:
    bundle = compiler.compile_bundle(spec_for("F05"))
    fixture = json.dumps(bundle.hidden.fixture.model_dump())
    assert re.search(CANARY_SHAPES, fixture) is None and "tok_" not in fixture
    kinds = {m.group(1) for m in PLACEHOLDER.finditer(fixture)}
    assert {"id", "canary", "user", "token"} <= kinds


def test_fixture_covers_every_table_the_app_creates(family_id: str, spec_for: Any) -> None:
    spec = spec_for(family_id)
    tables = set(testkit.build_fixture(spec).tables)
    schema = mutator.mutate(spec).vulnerable.files["app/db.py"]
    created = {line.split()[5] for line in schema.splitlines() if "CREATE TABLE" in line}
    assert created == tables


def test_leaky_workspace_is_refused() -> None:
    with pytest.raises(ScenarioError, match="reveals the bug"):
        compiler.lint_workspace({"app/x.py": "# TODO: IDOR here\n"})
    with pytest.raises(ScenarioError, match="version-control"):
        compiler.lint_workspace({".git/HEAD": "ref: refs/heads/main\n"})


def test_reference_fix_and_traps_are_patches_against_the_workspace(spec_for: Any) -> None:
    bundle = compiler.compile_bundle(spec_for("F02", 1))
    fixed = bundle.patched_workspace(bundle.hidden.reference_fix)
    assert fixed != dict(bundle.workspace)
    for patch in bundle.hidden.traps.values():
        trapped = bundle.patched_workspace(patch)
        assert trapped != fixed and trapped != dict(bundle.workspace)


def test_hashes_do_not_depend_on_the_process() -> None:
    """Rebuilds in fresh interpreters (different PYTHONHASHSEED) give byte-identical hashes."""
    import os
    import subprocess
    import sys

    script = (
        "from a01gym.factory import author, config, compiler\n"
        "for r in author.plan(config.FactoryConfig(count=13, seed=8)):\n"
        "    bundle = compiler.compile_bundle(author.TemplateAuthor().draft(r))\n"
        "    print(bundle.manifest.content_hash)\n"
    )
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        outputs.append(done.stdout.split())
    assert outputs[0] == outputs[1] and len(outputs[0]) == 13


def test_the_gates_refuse_a_bundle_whose_inventory_is_not_recorded_or_not_checked(
    spec_for: Any,
) -> None:
    bundle = compiler.compile_bundle(spec_for("F01", 2))
    assert gates._inventory(bundle) == []
    unrecorded = dataclasses.replace(
        bundle, manifest=bundle.manifest.model_copy(update={"routes": []})
    )
    assert gates._inventory(unrecorded) == ["the manifest records no route inventory"]
    tests = [t for t in bundle.hidden.tests if t.id != "regression.routes"]
    unchecked = dataclasses.replace(
        bundle, hidden=bundle.hidden.model_copy(update={"tests": tests})
    )
    assert "no hidden regression test checks" in gates._inventory(unchecked)[0]


def test_companions_serve_their_routes_secure_with_their_tests_and_rows(spec_for: Any) -> None:
    spec = spec_for("F01", 1)
    bare = compiler.compile_bundle(spec.model_copy(update={"companions": []}))
    bundle = compiler.compile_bundle(spec)
    assert spec.companions and bundle.hidden.labels["companions"] == ",".join(spec.companions)
    new_routes = set(bundle.manifest.routes) - set(bare.manifest.routes)
    new_files = set(bundle.workspace) - set(bare.workspace)
    assert new_routes and new_files
    ids = {t.id for t in bundle.hidden.tests} - {t.id for t in bare.hidden.tests}
    for companion in spec.companions:
        fam = families.family(companion)
        for site in fam.sites:  # one guard per companion site, none an exploit
            assert any(f"{i}.".startswith(f"guard.{site}.") for i in ids), (companion, site)
    kinds = {t.id: t.kind for t in bundle.hidden.tests}
    assert {kinds[i] for i in ids} <= {TestKind.GUARD, TestKind.REGRESSION}
    assert [t.id for t in bundle.hidden.tests if t.kind is TestKind.EXPLOIT] == [
        t.id for t in bare.hidden.tests if t.kind is TestKind.EXPLOIT
    ]
    # the reference fix touches the bug's files only, never a companion's
    assert not set(bundle.hidden.reference_fix.files) & new_files
    assert len(bundle.manifest.policy.splitlines()) > len(bare.manifest.policy.splitlines())
    assert sum(map(len, bundle.hidden.fixture.tables.values())) >= sum(
        map(len, bare.hidden.fixture.tables.values())
    )
