"""The giveaway probes see only workspaces and point at files; their rates are against chance."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from a01gym.cli.factory import app
from a01gym.factory import author, compiler, config, giveaway_gate, giveaways
from a01gym.factory.spec import Layout
from a01gym.scenario.bundle import Bundle


def _drafts(count: int) -> list[Bundle]:
    cfg = config.FactoryConfig(count=count, seed=28, families=["F01", "F18"])
    return [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]


def test_normalising_abstracts_names_strings_and_numbers() -> None:
    one = 'def read_note(note_id: int) -> str:\n    return "x" * 3  # why\n'
    two = 'def get_task(task_id: int) -> str:\n    return "yy" * 12\n'
    assert giveaways.normalise(one) == giveaways.normalise(two)
    assert giveaways.normalise(one) != giveaways.normalise(one.replace("*", "+"))


def test_an_unused_helper_points_at_its_file() -> None:
    files = {
        "app/routes.py": "from app import auth\n\n\n@router.get('/x')\ndef x():\n"
        "    return auth.who()\n",
        "app/auth.py": "def who():\n    return 1\n",
        "app/tokens.py": "def _signature_ok(token):\n    return True\n",
    }
    probe = giveaways.PROBES["unused_helper"]
    drafts = _drafts(12)
    pointer = probe(drafts[0], [files], 0)
    assert pointer == giveaways.Pointer("app/tokens.py", (1, 1), name="_signature_ok")
    # two files with one: a draw per scenario, never the order of the files' names
    files["app/auth.py"] += "\n\nTRUSTED_HOSTS = ()\n"
    named = [probe(draft, [files], 0).path for draft in drafts]
    assert named == [probe(draft, [files], 0).path for draft in drafts]
    assert set(named) == {"app/auth.py", "app/tokens.py"}, named


def test_a_function_lacking_its_siblings_check_points_at_its_lines() -> None:
    """The issue's F07 finding: the list methods filter by scope and the broken one does not.
    Route handlers are siblings of route handlers, helpers of helpers."""
    repository = (
        "class Notes:\n"
        "    def list_visible(self, user):\n        return policy.read_scope(user)\n"
        "    def export_rows(self, user):\n        return policy.read_scope(user)\n"
        "    def digest_rows(self, user):\n        return policy.read_scope(user)\n"
        "    def search(self, user, q):\n        return q\n"
    )
    routes = (
        "@router.get('/a')\ndef a(user=Depends(security.current_user)):\n    return 1\n"
        "@router.get('/b')\ndef b(user=Depends(security.current_user)):\n    return 2\n"
        "def _helper(x):\n    return x\n"
    )
    probe = giveaways.PROBES["sibling_asymmetry"]
    bundle = _drafts(1)[0]
    assert probe(bundle, [{"app/repository.py": repository, "app/routes.py": routes}], 0) == (
        giveaways.Pointer("app/repository.py", (8, 9))  # def search ... return q
    )
    symmetric = repository.replace("return q", "return policy.read_scope(user)")
    assert probe(bundle, [{"app/repository.py": symmetric, "app/routes.py": routes}], 0) is None


def test_equally_asymmetric_files_tie_and_the_probe_names_one_of_them() -> None:
    """The tied files, whose share the fix changes is the probe's expected hit (what the
    report counts), whichever one a scenario's draw names."""
    lopsided = (
        "class Notes:\n"
        "    def a(self, u):\n        return policy.read_scope(u)\n"
        "    def b(self, u):\n        return policy.read_scope(u)\n"
        "    def c(self, u):\n        return u\n"
    )
    files = {"app/notes.py": lopsided, "app/tasks.py": lopsided.replace("Notes", "Tasks")}
    scores = giveaways._asymmetry_scores(files)

    assert scores == {"app/notes.py": (1.0, (6, 7)), "app/tasks.py": (1.0, (6, 7))}
    probe = giveaways.PROBES["sibling_asymmetry"]
    pointers = [probe(draft, [files], 0) for draft in _drafts(12)]
    assert {p.path for p in pointers} == set(files)  # the draw picks each of them somewhere
    for pointer in pointers:  # and carries the other, which the report counts alike
        assert sorted(c.path for c in giveaways.candidates(pointer)) == sorted(files)
        assert giveaway_gate.expected_hit(pointer, lambda c: c.path == "app/tasks.py") == 0.5
    assert giveaway_gate.expected_hit(None, lambda c: True) == 0.0


def test_the_gates_tail_interpolates_between_whole_hit_counts() -> None:
    whole = [giveaway_gate.binomial_tail(k, 15, 0.1) for k in (2, 3)]
    assert whole[0] > giveaway_gate.binomial_tail(2.5, 15, 0.1) > whole[1]
    assert giveaway_gate.binomial_tail(2.5, 15, 0.1) == pytest.approx(sum(whole) / 2)
    assert giveaway_gate.binomial_tail(0, 15, 0.1) == pytest.approx(1.0)
    assert giveaway_gate.binomial_tail(15, 15, 0.1) == pytest.approx(0.1**15)


def test_the_last_policy_lines_words_point_at_a_file_named_by_them() -> None:
    bundle = _drafts(1)[0]
    task = "## Access policy\n\n- Read a note: its owner.\n- Download a stored file: its owner.\n"
    files = {"app/routers/files.py": "", "app/routers/notes.py": "", "app/main.py": ""}
    probe = giveaways.PROBES["policy_keywords"]
    moved = dataclasses.replace(bundle, workspace={**bundle.workspace, "TASK.md": task.encode()})
    assert probe(moved, [files], 0) == giveaways.Pointer("app/routers/files.py")
    files = {"app/routers/records.py": "", "app/main.py": ""}
    assert probe(moved, [files], 0) is None


def test_report_rates_each_probe_per_family_against_chance() -> None:
    bundles = _drafts(8)
    rows = {row.family: row for row in giveaway_gate.report(bundles)}
    assert set(rows) == {"ALL", "F01", "F18"}
    assert rows["ALL"].scenarios == 8 == rows["F01"].scenarios + rows["F18"].scenarios
    for row in rows.values():
        assert set(row.probes) == set(giveaways.PROBES)
        for name, rate in row.probes.items():
            assert 0.0 <= rate.rate <= 1.0 and 0.0 < rate.chance < 0.5
            # expected hits: a scenario whose probe found k files equally good counts 1/k each
            assert abs(rate.hits - rate.rate * rate.scenarios) <= 0.01 * rate.scenarios
            # a line hit is a file hit; only the probes that read code name lines
            if name in giveaways.LINE_PROBES:
                assert rate.line_hits is not None and rate.line_hits <= rate.hits
            else:
                assert rate.line_hits is None and rate.line_rate is None


def test_the_nearest_diff_points_at_the_lines_a_removed_check_left() -> None:
    """Two apps alike but for one check: the diff names the file and the gap where the check
    was, on the line numbers the agent reads (a multi-line string before it keeps them)."""
    secure = (
        '"""Routes.\n\nMore words.\n"""\n'
        "@router.get('/a')\ndef a(user):\n    check(user)\n    return 1\n"
    )
    broken = secure.replace("    check(user)\n", "")
    shared = {"app/main.py": "app = make()\n", "app/db.py": "x = 1\ny = 2\n"}
    apps = [{**shared, "app/routes.py": broken}, {**shared, "app/routes.py": secure}]
    population = [{p: giveaways.normalise(t) for p, t in app.items()} for app in apps]
    pointer = giveaways.PROBES["nearest_diff"](_drafts(1)[0], population, 0)
    assert pointer == giveaways.Pointer("app/routes.py", (6, 7))  # "def a(user):", "return 1"
    assert broken.splitlines()[5:7] == ["def a(user):", "    return 1"]


def test_equally_near_apps_each_count_alike_whatever_their_order() -> None:
    """Two apps share as many files with this one: each is compared, and each holds half the
    probe's expected hit, so the order of the population (the content hashes' in a report)
    decides nothing. Against the one, the routes file is new and the other differs a little;
    against the other, both are new (a tie at 1.0): 1, then 1/2."""
    shared = {"app/main.py": "app = make()\n", "app/db.py": "x = 1\ny = 2\n"}
    mine = {**shared, "app/routes.py": "def a():\n    return 1\n", "app/c.py": "c = 1\n"}
    lacking = {**shared, "app/c.py": "c = 2\n"}
    other = {**shared, "app/x.py": "z = 9\n"}
    bundle = _drafts(1)[0]
    shares = set()
    for population in ([mine, lacking, other], [mine, other, lacking]):
        pointer = giveaways.PROBES["nearest_diff"](bundle, population, 0)
        shares.add(giveaway_gate.expected_hit(pointer, lambda c: c.path == "app/routes.py"))
    assert shares == {0.75}


def test_a_builds_nearest_diff_rates_do_not_follow_the_order_of_its_apps() -> None:
    """Read backwards, the same apps give every scenario the same expected hit (the first of
    equally near apps used to decide: 3 of these 24 scenarios changed)."""
    bundles = _drafts(24)
    population = [
        {p: giveaways.normalise(t) for p, t in giveaways.python_files(b).items()} for b in bundles
    ]
    backwards = population[::-1]
    last = len(bundles) - 1
    for index, bundle in enumerate(bundles):
        fixed = set(bundle.hidden.reference_fix.files)

        def hit(c: giveaways.Pointer, fixed: set[str] = fixed) -> bool:
            return c.path in fixed

        forwards = giveaways.PROBES["nearest_diff"](bundle, population, index)
        reverse = giveaways.PROBES["nearest_diff"](bundle, backwards, last - index)
        assert giveaway_gate.expected_hit(forwards, hit) == giveaway_gate.expected_hit(reverse, hit)


def test_a_line_hit_is_a_pointer_at_lines_the_reference_fix_changes() -> None:
    bundle = _drafts(1)[0]
    changed = giveaway_gate._changed_lines(bundle)
    assert changed and set(changed) <= set(bundle.hidden.reference_fix.files)
    path, lines = next((p, sorted(ls)) for p, ls in changed.items() if ls)
    assert giveaway_gate._on_changed_line(giveaways.Pointer(path, (lines[0], lines[0])), changed)
    assert not giveaway_gate._on_changed_line(giveaways.Pointer(path), changed)
    total = len(bundle.workspace[path].decode().split("\n"))
    untouched = next(n for n in range(1, total + 1) if n not in changed[path])
    assert not giveaway_gate._on_changed_line(
        giveaways.Pointer(path, (untouched, untouched)), changed
    )


def test_a_helper_the_fix_starts_using_elsewhere_is_a_hit() -> None:
    """``unused_helper`` points at a definition; a fix that starts calling it from another
    file found the bug through it (an F11 app's dead ``landing_target``, 2026-12-02), though
    the file the probe names is not one the fix changes."""
    bundle = _drafts(1)[0]
    path, text = next((p, t) for p, t in bundle.hidden.reference_fix.files.items() if t)
    before = bundle.workspace[path].decode()

    def uses(word: str, source: str) -> int:
        return len(re.findall(rf"\b{word}\b", source))

    words = set(re.findall(r"\b[A-Za-z_]\w*", before + text))
    added = next(w for w in words if uses(w, text) > uses(w, before))
    kept = next(w for w in words if 0 < uses(w, text) <= uses(w, before))
    elsewhere = next(p for p in bundle.workspace if p.endswith(".py") and p != path)
    assert giveaway_gate._put_to_use(giveaways.Pointer(elsewhere, (1, 1), name=added), bundle)
    assert not giveaway_gate._put_to_use(giveaways.Pointer(elsewhere, (1, 1), name=kept), bundle)
    assert not giveaway_gate._put_to_use(giveaways.Pointer(elsewhere, (1, 1)), bundle)


def test_without_companions_a_family_only_file_is_given_away() -> None:
    """The probe finds what companions hide: stripped of them, an F18 app adds a form router
    no F01 app has, and remembering an F01 app and diffing finds it (all in the skeleton's
    own layout, which varies apps' other files too). One F18 app among the F01 ones: F18 apps
    that are each other's nearest both serve the router and tell nothing (since F18's broken
    check is a slip, not a missing function)."""
    cfg = config.FactoryConfig(count=16, seed=28, families=["F01", "F18"])
    drafts = [
        author.TemplateAuthor().draft(r).model_copy(update={"layout": Layout()})
        for r in author.plan(cfg)
    ]
    specs = [s for s in drafts if s.bug.family == "F01"]
    specs += [s for s in drafts if s.bug.family == "F18"][:1]
    assert all(spec.companions for spec in specs)
    bare = [compiler.compile_bundle(spec.model_copy(update={"companions": []})) for spec in specs]
    rows = {row.family: row for row in giveaway_gate.report(bare)}
    assert rows["F18"].probes["nearest_diff"].ratio > 2
    with_companions = {
        row.family: row
        for row in giveaway_gate.report([compiler.compile_bundle(spec) for spec in specs])
    }
    assert (
        with_companions["F18"].probes["nearest_diff"].hits < rows["F18"].probes["nearest_diff"].hits
    )


def test_a_family_fails_only_when_its_hits_are_far_above_chance() -> None:
    """Two hits in 14 at 4% chance are 3.6x chance, and a probe that finds the bug 2x as often
    as chance scores that often in ~31% of builds: not a failure. Eight in 14 are not luck."""

    def row(hits: int) -> giveaway_gate.FamilyRates:
        chance = 0.04
        rate = giveaway_gate.ProbeRate(
            hits=hits,
            scenarios=14,
            rate=hits / 14,
            chance=chance,
            ratio=hits / 14 / chance,
            p_value=giveaway_gate.binomial_tail(hits, 14, giveaway_gate.GATE_FACTOR * chance),
        )
        return giveaway_gate.FamilyRates(family="F99", scenarios=14, probes={"largest_file": rate})

    assert giveaway_gate.binomial_tail(0, 14, 0.3) == pytest.approx(1.0)
    assert giveaway_gate.binomial_tail(14, 14, 0.5) == pytest.approx(0.5**14)
    assert giveaway_gate.failures([row(2)]) == []
    assert giveaway_gate.failures([row(8)]) == [("F99", "largest_file")]
    # a family of 9 is not judged, however many hits (3 of 3 fall under GATE_ALPHA)
    small = row(8).model_copy(update={"scenarios": giveaway_gate.GATE_MIN_SCENARIOS - 1})
    assert giveaway_gate.failures([small]) == []
    assert row(2).probes["largest_file"].p_value == pytest.approx(0.31, abs=0.01)


def test_cli_reports_a_caches_giveaways_and_fails_strictly_on_one(
    tmp_path: Path, cache_of: Any
) -> None:
    """``a01gym factory giveaways``: the report of :func:`giveaway_gate.report` over a cache, and
    ``--strict`` exits 1 on a family whose bug a probe finds far above chance. F07's fix is in
    ``app/repository.py``, the largest file of every app (docs/families.md): 10 of 10 found."""
    cfg = config.FactoryConfig(count=20, seed=28, families=["F07", "F18"])
    bundles = [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]
    cache = cache_of(tmp_path / "cache", bundles)
    result = CliRunner().invoke(app, ["giveaways", str(cache.root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["families"] == [r.model_dump() for r in giveaway_gate.report(bundles)]
    assert ["F07", "largest_file"] in data["failures"]
    # ...whether or not the bug is in it: the F18 apps' largest file is the same one
    f07 = next(r for r in data["families"] if r["family"] == "F07")["probes"]["largest_file"]
    assert f07["rate"] == f07["base"] == 1.0 and f07["lift"] == 1.0
    assert f07["base_p_value"] > giveaway_gate.GATE_ALPHA
    strict = CliRunner().invoke(app, ["giveaways", str(cache.root), "--strict"])
    assert strict.exit_code == 1
    assert "far above chance: " in strict.output and "F07 largest_file" in strict.output
    assert "largest_file" in strict.output  # the table
    missing = CliRunner().invoke(app, ["giveaways", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "no scenario cache" in missing.output


def test_the_build_gate_rejects_this_builds_scenarios_of_a_family_a_probe_finds(
    tmp_path: Path,
) -> None:
    """``giveaway_gate.judge`` over a cache filled without sandboxes (the gate reads only
    workspaces and labels). F07's fix is in the repository, the largest file of every app, so
    ``largest_file`` finds it in every scenario: a gate that applies it rejects F07 (only the
    build's own scenarios) once the cache holds ten of it, and the default probes, which leave
    it out, do not."""
    from a01gym.factory.cache import Provenance, ScenarioCache

    cfg = config.FactoryConfig(count=22, seed=28, families=["F04", "F07"])
    bundles = [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]
    f07 = sorted(b.manifest.content_hash for b in bundles if b.hidden.labels["family"] == "F07")
    assert len(f07) == 11
    cache = ScenarioCache(tmp_path / "cache")
    provenance = Provenance(author="template", config_hash="x")
    strict = config.GateConfig(giveaway_probes=["largest_file"])
    built = [*f07[:5], *(b.manifest.content_hash for b in bundles[:2])]

    with cache.writer():
        for bundle in bundles:
            if bundle.manifest.content_hash not in f07[9:]:
                cache.add(bundle, split="train", validation={}, provenance=provenance)
        nine = giveaway_gate.judge(cache, strict, built, provenance)
        for bundle in bundles:
            cache.add(bundle, split="train", validation={}, provenance=provenance)
        default = giveaway_gate.judge(cache, config.GateConfig(), built, provenance)
        report = giveaway_gate.judge(
            cache,
            config.GateConfig(giveaways="report", giveaway_probes=["largest_file"]),
            built,
            provenance,
        )
        verdict = giveaway_gate.judge(cache, strict, built, provenance)

    f07_rates = {row.family: row for row in nine.families}["F07"]
    assert f07_rates.probes["largest_file"].hits == 9 and not nine.failures  # too few to judge
    assert ("F07", "largest_file") not in default.failures and not default.removed
    assert report.failures == [("F07", "largest_file")] and not report.removed
    assert verdict.failures == [("F07", "largest_file")]
    assert sorted(verdict.removed) == sorted(set(built) & set(f07))
    left = {entry.hash for entry in cache.entries()}
    assert left == {b.manifest.content_hash for b in bundles} - set(verdict.removed)
    (rejection,) = {r.reason: r for r in cache.rejections()}.values()
    assert rejection.stage == "giveaways" and "largest_file names the fixed file in 11 of 11" in (
        rejection.reason
    )
    with pytest.raises(ValueError, match="unknown probes"):
        config.GateConfig(giveaway_probes=["biggest"])


def test_the_build_gate_takes_out_only_the_scenarios_a_probe_finds_until_the_family_passes(
    tmp_path: Path,
) -> None:
    """F01's fix is in the repository module (the largest file) in about half its scenarios,
    so ``largest_file`` finds it far above chance over 12 of them; the gate takes out those
    it finds, the surest first, until the rest is no longer far above chance, and keeps the
    family's other scenarios (it used to take all of this build's out: seed 62's 300 lost its
    every F18 scenario to ``sibling_asymmetry``)."""
    from a01gym.factory.cache import Provenance, ScenarioCache

    cfg = config.FactoryConfig(count=24, seed=28, families=["F01", "F04"])
    bundles = [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]
    f01 = {b.manifest.content_hash: b for b in bundles if b.hidden.labels["family"] == "F01"}
    finds = {h for h, b in f01.items() if _largest(b) in b.hidden.reference_fix.files}
    assert len(f01) == 12 and 3 <= len(finds) <= 9, len(finds)
    cache = ScenarioCache(tmp_path / "cache")
    provenance = Provenance(author="template", config_hash="x")
    strict = config.GateConfig(giveaway_probes=["largest_file"])
    with cache.writer():
        for bundle in bundles:
            cache.add(bundle, split="train", validation={}, provenance=provenance)
        verdict = giveaway_gate.judge(cache, strict, list(f01), provenance)
        after = giveaway_gate.report([cache.load(entry.hash) for entry in cache.entries()])

    assert ("F01", "largest_file") in verdict.failures
    assert verdict.removed and set(verdict.removed) < finds  # only finds, and not all of them
    rate = {row.family: row for row in after}["F01"].probes["largest_file"]
    assert not rate.far_above_chance and rate.hits > 0, rate
    reasons = {r.reason for r in cache.rejections()}
    assert len(reasons) == 1 and next(iter(reasons)).endswith("and finds this one")


def _largest(bundle: Bundle) -> str:
    files = giveaways.python_files(bundle)
    return max(files, key=lambda path: len(files[path]))
