"""The report of a real learning run: the curve per GRPO step, base vs SFT vs SFT + GRPO per
family, and the real model's own transcripts.

``tests/fixtures/learning_run`` is the run folder of ``python bench/learning.py --quick``
(SmolLM2-135M-Instruct, 2026-11-29; its JSON is ``bench-learning.json``): ``metrics.jsonl`` and
``eval/`` as the bench wrote them, the last GRPO step's ``rollouts.jsonl``, and in every chat the
system and task turns cut to 300 characters (they are the same briefing in every episode; the
model's turns and the tool replies are whole). Nothing here is synthetic.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from a01gym.training import report

RUN = Path(__file__).parents[1] / "fixtures" / "learning_run"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    run = tmp_path_factory.mktemp("learning") / "run"
    shutil.copytree(RUN, run)
    return report.write_html_report(run).read_text(encoding="utf-8")


def _records(label: str) -> list[dict]:
    path = RUN / "eval" / label / "episodes.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_training_section_draws_every_grpo_step(page: str, tmp_path: Path) -> None:
    steps = [json.loads(line) for line in (RUN / "metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 4
    assert 'alt="reward, rates and time per GRPO step"' in page
    first, last = steps[0], steps[-1]
    for key in ("reward_mean", "resolved_rate"):
        row = f"<td>{key}</td><td>{first[key]:.3f}</td><td>{last[key]:.3f}</td>"
        assert row in page, key


def test_base_sft_and_trained_side_by_side_per_family(page: str) -> None:
    headers = [
        re.findall(r"<th>([^<]*)</th>", found)
        for found in re.findall(r"<th>family</th>((?:<th>[^<]*</th>)+)", page)
    ]
    assert ["base", "sft", "trained"] in headers
    means = {}
    for label in ("base", "sft", "trained"):
        rewards = [r["reward"] for r in _records(label) if r["family"] == "F01"]
        means[label] = f"{statistics.fmean(rewards):.3f}"
    row = f"<td>F01</td><td>{means['base']}</td><td>{means['sft']}</td><td>{means['trained']}</td>"
    assert row in page
    # F02, the family never trained on, was played by base and trained only
    assert re.search(r"<td>F02</td><td>[-0-9.]+</td><td>–</td><td>[-0-9.]+</td>", page)
    # what the run measured: SFT and SFT + GRPO resolve held-out scenarios the base model did not
    assert not any(r["resolved"] for r in _records("base"))
    assert sum(r["resolved"] for r in _records("trained")) >= 1


def test_transcripts_show_the_real_model_s_own_tool_calls(page: str) -> None:
    assert "trained: seed" in page and "sft: seed" in page and "base: seed" in page
    assert "GRPO step 3 rollout" in page
    resolved = next(r for r in _records("trained") if r["resolved"])
    edit = next(
        call["function"]
        for message in resolved["messages"]
        for call in message.get("tool_calls") or []
        if call["function"]["name"] == "edit_file"
    )
    assert edit["name"] == "edit_file"
    assert "edit_file" in page and "policy.can_read" in page  # the model's fix, as it wrote it
