"""Where a cold reset's CPU goes: CPU and page faults per reset of each process of the gateway's
tree, over one burst of cold resets through a real ``a01gym serve`` and the OpenEnv client.

The cold 512-burst's p99 is CPU-bound on two cores (``bench/scale.py``), and its wall clock
depends on whatever else the machine runs; CPU per reset does much less. Each process's
utime/stime and minor faults come from ``/proc/<pid>/stat`` before and after the burst, grouped
as the gateway, the zygote (with what it reaped), supervisors (PID 1 of their sandbox) and apps.

The workload is the factory-built bench cache (``bench/workload.py``), as in the cold burst of
``bench/scale.py``; the target is that burst's: server CPU per cold reset in units of the
calibration workload timed in the same run (``server_cpu_units_per_reset``).

    python bench/reset_cpu.py --sessions 128 --json-out runs/bench/reset_cpu.json
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import time
from pathlib import Path
from typing import Any

import psutil

import calibration
import report
import scale
import serving
import workload
from sessions import burst, close

TARGETS = {
    "burst_errors": ("<=", 0),
    # the cold burst's own bar (bench/scale.py), in units of the calibration workload timed in
    # this run: CPU time does not depend on the load, and the unit not on the machine's speed
    "server_cpu_units_per_reset": scale.TARGETS["burst_512_server_cpu_units_per_reset"],
}
_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
_KINDS = ("gateway", "zygote", "supervisor", "app")


def _kind(pid: int, ppid: int, gateway: int) -> str:
    if pid == gateway:
        return "gateway"
    if ppid == gateway:
        return "zygote"
    with open(f"/proc/{pid}/status") as status:
        nspid = next(line for line in status if line.startswith("NSpid:")).split()[-1]
    return "supervisor" if nspid == "1" else "app"


def _snapshot(gateway: int) -> dict[str, list[float]]:
    """Per kind: user ms, system ms, minor faults (reaped children included)."""
    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for proc in [psutil.Process(gateway), *psutil.Process(gateway).children(recursive=True)]:
        with contextlib.suppress(OSError, psutil.Error, StopIteration):  # exited meanwhile
            with open(f"/proc/{proc.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            row = totals[_kind(proc.pid, int(fields[1]), gateway)]
            row[0] += (int(fields[11]) + int(fields[13])) * _TICK_MS
            row[1] += (int(fields[12]) + int(fields[14])) * _TICK_MS
            row[2] += int(fields[7]) + int(fields[8])
    return totals


async def main(args: argparse.Namespace) -> dict[str, Any]:
    n = args.sessions
    cache = args.cache or await asyncio.to_thread(workload.factory_cache)
    options = ["--max-sessions", str(n + 16), "--max-sandboxes", str(n + 64)]
    options += ["--pool-size", "4", "--warm-spares", "0"]
    async with serving.gateway(
        cache,
        args.runs_dir,
        args=options,
        env={"A01GYM_GATEWAY__IDLE_TIMEOUT_S": "0"},
        stop_timeout_s=120,
    ) as served:
        await asyncio.sleep(3.0)  # the pool of four fills
        before = _snapshot(served.pid)
        envs, result = await burst(served.url, n, args.spread_s, "burst")
        after = _snapshot(served.pid)
        await close(envs)
    total = 0.0
    for kind in _KINDS:
        user, system, faults = (after[kind][i] - before[kind][i] for i in range(3))
        result[f"{kind}_cpu_ms_per_reset"] = round((user + system) / n, 2)
        result[f"{kind}_sys_ms_per_reset"] = round(system / n, 2)
        result[f"{kind}_minor_faults_per_reset"] = round(faults / n)
        total += user + system
    result["server_cpu_ms_per_reset"] = round(total / n, 2)
    result["calibration_ms"] = calibration.measure()
    result["server_cpu_units_per_reset"] = calibration.units(total / n, result["calibration_ms"])
    result["sessions"] = n
    result["cache"] = str(cache)
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=128, help="cold resets in the burst")
    parser.add_argument("--spread-s", type=float, default=4.0, help="the burst's resets span this")
    parser.add_argument(
        "--cache", type=Path, help="scenario source (default: the factory-built bench cache)"
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/a01gym-bench-runs"))
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    args = parser.parse_args()
    began = time.perf_counter()
    metrics = asyncio.run(main(args))
    report.emit(
        "reset_cpu",
        metrics,
        TARGETS,
        quick=False,
        began=began,
        json_out=args.json_out,
        calibration_ms=metrics["calibration_ms"],
    )


if __name__ == "__main__":
    cli()
