"""Grading benchmark: how long ``submit`` takes for a correct fix and for apps that misbehave.

A real ``a01gym serve`` process on the local backend, driven by the real OpenEnv client.
Each round resets an episode of the ``idor_notes`` fixture, writes the final ``app/main.py``
(or the reference fix) and times the ``submit`` step, grading included:

* ``fix_submit_ms_p50``: the reference fix (reward 1; this must not get slower);
* ``hang_submit_s``: middleware that sleeps on every request;
* ``crash_import_submit_s``: an app that exits while it is imported;
* ``crash_request_submit_s``: an app that dies on its first request to the API;
* ``fork_bomb_submit_s``: an app that fork-bombs while it is imported;
* ``bad_max_reward``: the highest reward any misbehaving app got (fail-closed: 0 or less).

Every ``*_submit_s`` is a median over ``--rounds``; the target (issue 11) is 15 s with the
default grading deadline (``A01GYM_GRADING__DEADLINE_S``). The misbehaving apps live in
``tests/fixtures/bad_apps/``.

    python bench/grading.py --quick --json-out runs/bench/grading.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from openenv.core.generic_client import GenericEnvClient

import report
import serving

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "idor_notes"
BAD_APPS = ROOT / "tests" / "fixtures" / "bad_apps"
BAD = ("hang", "crash_import", "crash_request", "fork_bomb")
TARGETS = {
    **{f"{name}_submit_s": ("<=", 15.0) for name in BAD},
    "bad_max_reward": ("<=", 0.0),
}


async def _episode(
    url: str, seed: int, files: dict[str, str], *, check: bool = False
) -> tuple[float, float]:
    """(submit seconds, reward) for one episode whose final files are ``files``; with
    ``check`` every write must succeed (a misbehaving app's write reports its failed start)."""
    async with GenericEnvClient(base_url=url, message_timeout_s=300) as env:
        await env.reset(seed=seed)
        for path, content in files.items():
            result = await env.step({"tool": "write_file", "path": path, "content": content})
            assert not check or result.observation["error"] is None, result.observation["error"]
        started = time.perf_counter()
        result = await env.step({"tool": "submit"})
        elapsed = time.perf_counter() - started
    assert result.done and result.reward is not None
    return elapsed, result.reward


def _reference_fix() -> dict[str, str]:
    from a01gym.scenario.bundle import Bundle

    files = Bundle.load(FIXTURE).hidden.reference_fix.files
    return {path: content for path, content in files.items() if content is not None}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="a01gym-bench-grading-") as runs:
        env = {"A01GYM_SANDBOX__POOL_SIZE": "4"}
        async with serving.gateway(FIXTURE, Path(runs), env=env) as served:
            url = served.url
            await asyncio.sleep(1.0)  # let the warm pool fill
            fix = _reference_fix()
            fix_ms, fix_rewards = [], []
            for i in range(args.fix_rounds):
                elapsed, reward = await _episode(url, 100 + i, fix, check=True)
                fix_ms.append(elapsed * 1000)
                fix_rewards.append(reward)
            metrics: dict[str, Any] = {
                "fix_submit_ms_p50": round(statistics.median(fix_ms), 1),
                "fix_submit_ms_max": round(max(fix_ms), 1),
                "fix_min_reward": min(fix_rewards),
            }
            bad_rewards: list[float] = []
            for name in args.apps:
                main_py = (BAD_APPS / f"{name}.py").read_text()
                times = []
                for i in range(args.rounds):
                    elapsed, reward = await _episode(url, 200 + i, {"app/main.py": main_py})
                    times.append(elapsed)
                    bad_rewards.append(reward)
                metrics[f"{name}_submit_s"] = round(statistics.median(times), 2)
                metrics[f"{name}_submit_s_max"] = round(max(times), 2)
            if bad_rewards:
                metrics["bad_max_reward"] = max(bad_rewards)
    return metrics


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 rounds per app (~2 min)")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument(
        "--apps", nargs="*", choices=BAD, default=list(BAD), help="misbehaving apps to time"
    )
    parser.add_argument("--rounds", type=int, help="rounds per misbehaving app (3 quick, 7)")
    parser.add_argument("--fix-rounds", type=int, help="rounds of the reference fix (10 quick, 30)")
    args = parser.parse_args()
    args.rounds = args.rounds or (3 if args.quick else 7)
    args.fix_rounds = args.fix_rounds or (10 if args.quick else 30)
    began = time.perf_counter()
    metrics = asyncio.run(main(args))
    targets = {k: v for k, v in TARGETS.items() if k in metrics}
    report.emit("grading", metrics, targets, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
