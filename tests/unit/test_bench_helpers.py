"""The benchmarks' shared helpers (``bench/``): the calibration unit, the report, and the moves
a scripted agent derives from a real first observation."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

from a01gym.env import briefing
from a01gym.scenario.bundle import Bundle

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import calibration  # noqa: E402
import report  # noqa: E402
import workload  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "idor_notes"


def test_calibration_is_fixed_work_in_cpu_ms() -> None:
    assert calibration.workload(1000) == calibration.workload(1000)  # deterministic
    ms = calibration.measure(runs=3)
    assert 1 < ms < 5000
    assert calibration.units(2 * ms, ms) == pytest.approx(2.0, abs=0.01)


def test_the_sampler_times_the_workload_while_the_work_runs_and_is_reaped_after() -> None:
    def reaped_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    sampler = calibration.Sampler(every_s=0.1)
    time.sleep(2.5)  # the child imports, warms up, then samples about every 0.1 s
    before = reaped_cpu()  # the child runs still: none of its CPU is counted yet
    ms, samples = sampler.stop()
    assert samples >= 2, samples
    assert 1 < ms < 5000
    assert reaped_cpu() > before  # stop() reaped it: its CPU joins the children's only now
    # stopped before its first sample: one measurement in this process stands in
    assert calibration.Sampler(every_s=0.1).stop()[1] == 0


def test_report_carries_load_calibration_and_verdicts(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.json"
    done = report.emit(
        "x",
        {"ratio": 3.0, "count": 0},
        {"ratio": ("<=", 2.0), "count": ("<=", 0)},
        quick=True,
        began=0.0,
        json_out=out,
        calibration_ms=12.5,
    )
    assert json.loads(out.read_text()) == done
    assert done["calibration_ms"] == 12.5 and "load_avg_1m" in done
    assert done["meets_targets"] == {"ratio": False, "count": True}
    assert "ratio=3.0 (MISS)" in capsys.readouterr().err


def test_moves_come_from_the_first_observation() -> None:
    _, result = briefing.render(Bundle.load(FIXTURE))
    moves = workload.Moves.of({"result": result})
    paths = {f["path"] for f in result["files"]}
    assert moves.entry == "app/main.py" and moves.other in paths and moves.other != moves.entry
    assert moves.actor in {a["name"] for a in result["actors"]} and moves.actor != "anonymous"
    script = moves.script()
    assert script[-1] == {"tool": "submit"}
    assert moves.edit("x")["content"] == "x\n# reviewed\n"


def test_ab_runs_one_bench_against_the_base_commits_code_and_this_trees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tools/bench_ab.py`` with this tree's HEAD as the base: side A must import the base's
    checkout (the worktree it made), side B this tree's ``src``; a bench that reports where
    ``a01gym`` came from tells them apart. The worktree is removed afterwards."""
    import subprocess

    probe = tmp_path / "where.py"
    probe.write_text(
        "import json, sys, a01gym\n"
        "out = sys.argv[sys.argv.index('--json-out') + 1]\n"
        f"ours = a01gym.__file__.startswith({str(ROOT / 'src')!r})\n"
        "report = {'metrics': {'ours': 2 if ours else 1}, 'load_avg_1m': 0.0}\n"
        "open(out, 'w').write(json.dumps(report))\n"
    )
    cache = tmp_path / "xdg"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    ab = [sys.executable, str(ROOT / "tools" / "bench_ab.py"), "--base", "HEAD", "--rounds", "1"]
    done = subprocess.run(
        [*ab, "--key", "ours", "--", str(probe)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    trees = list((cache / "a01gym" / "ab").iterdir()) if (cache / "a01gym" / "ab").exists() else []
    for tree in trees:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [(r["side"], r["ours"]) for r in result["rounds"]] == [("A", 1), ("B", 2)]
    assert result["ours"] == {"A": 1, "B": 2, "b_over_a": 2.0}
    assert "B/A 2.0" in done.stderr
    assert len(trees) == 1


def test_the_bench_cache_is_keyed_by_the_imported_code(tmp_path: Path) -> None:
    """Another checkout's code (imported first, as ``tools/bench_ab.py`` does) gets a cache of
    its own once its factory differs from this tree's."""
    import shutil
    import subprocess

    shutil.copytree(ROOT / "src" / "a01gym", tmp_path / "a01gym")
    ask = [sys.executable, "-c", "import workload; print(workload._code_digest())"]

    def digest() -> str:
        env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT / 'bench'}"}
        return subprocess.run(ask, env=env, capture_output=True, text=True, check=True).stdout

    assert digest().strip() == workload._code_digest()
    with (tmp_path / "a01gym" / "factory" / "spec.py").open("a") as spec:
        spec.write("\n# changed\n")
    assert digest().strip() != workload._code_digest()
