"""The benchmarks' shared helpers (``bench/``): the calibration unit, the report, and the moves
a scripted agent derives from a real first observation."""

from __future__ import annotations

import json
import sys
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
