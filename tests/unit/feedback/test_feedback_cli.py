"""``a01gym analyze`` and ``a01gym factory build --from-feedback`` as the console entry runs
them (:func:`a01gym.cli.__main__.main`, where exit codes are decided); no sandbox needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from test_feedback_analysis import _breakdown, _gateway_episode

from a01gym.cli import analyze as analyze_cli
from a01gym.cli.__main__ import main
from a01gym.env import sampler
from a01gym.feedback import jobs


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    else:
        code = 0
    out = capsys.readouterr()
    return code, out.out, out.err


def _runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for index, resolved in enumerate((True, False, False)):
        labels = {"family": "F04", "difficulty": "easy"}
        _gateway_episode(runs, f"f04-{index}", _breakdown(resolved=resolved, labels=labels))
    for index in range(2):
        _gateway_episode(runs, f"f06-{index}", _breakdown(labels={"family": "F06",
                         "difficulty": "hard"}, removed_routes=["GET /a"]))  # fmt: skip
    return runs


def test_analyze_writes_the_analysis_weights_and_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A console as wide as the table: the module's own was sized when first imported, by
    # whichever test of this worker's process imported it (COLUMNS set here came too late
    # under pytest-xdist, and the table's headers were cut).
    monkeypatch.setattr(analyze_cli, "_err", Console(stderr=True, width=250))
    runs = _runs(tmp_path)
    code, out, err = _run(
        capsys, "analyze", str(runs), "--json", "--json-out", str(tmp_path / "a.json"),
        "--weights-out", str(tmp_path / "w.yaml"), "--job-out", str(tmp_path / "job.yaml"),
        "--cache", "/scenarios",
    )  # fmt: skip
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads((tmp_path / "a.json").read_text())
    assert [(c["family"], c["resolved"], c["failures"]) for c in printed["cells"]] == [
        ("F04", 1, {"never_found": 2}),
        ("F06", 0, {"broke_regression": 2}),
    ]
    assert sampler.load_weights(tmp_path / "w.yaml") == {
        "*": 1.0,
        "F04/easy": 4.0,
        "F06/hard": 0.5,
    }
    spec = jobs.load_job_spec(tmp_path / "job.yaml")
    assert [(o.family, o.difficulty) for o in spec.orders] == [("F06", "hard")]
    assert spec.cache == "/scenarios"
    assert "broke reg." in err and "learnable" in err and "too_hard" in err


def test_analyze_without_logs_exits_1_naming_what_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "analyze", str(tmp_path))
    assert code == 1
    assert "no episode logs" in err and "rollouts.jsonl" in err


def test_analyze_refuses_an_inverted_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "analyze", str(_runs(tmp_path)), "--band-low", "0.9",
                        "--band-high", "0.1")  # fmt: skip
    assert code == 1 and "--band-low" in err


def test_from_feedback_refuses_an_order_for_a_held_out_family(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump({"seed": 1, "orders": [
        {"family": "F17", "difficulty": "easy", "count": 2}]}))  # fmt: skip
    code, _, err = _run(capsys, "factory", "build", "--from-feedback", str(spec), "--out",
                        str(tmp_path / "cache"))  # fmt: skip
    assert code == 1
    assert "F17 is held out" in " ".join(err.split())
    assert not (tmp_path / "cache").exists()


def test_from_feedback_with_nothing_ordered_builds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"seed": 1, "cache": str(tmp_path / "cache"), "orders": []}))
    code, out, err = _run(capsys, "factory", "build", "--from-feedback", str(spec), "--json")
    assert code == 0, err
    assert json.loads(out)["candidates"] == 0
    assert "orders nothing" in " ".join(err.split())


def test_from_feedback_does_not_combine_with_a_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"seed": 1, "orders": []}))
    code, _, err = _run(capsys, "factory", "build", "--from-feedback", str(spec), "--count", "3",
                        "--out", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "--count" in err


def test_build_without_out_or_spec_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "factory", "build", "--count", "1")
    assert code == 2 and "--out" in err
