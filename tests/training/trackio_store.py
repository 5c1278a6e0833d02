"""Read a run's Trackio store from a fresh interpreter.

Trackio reads ``TRACKIO_DIR`` once, when it is imported, so a test process that has already
read one run's store (or imported Trackio for any reason) would read that store again, not the
one asked for. Each read therefore runs in its own ``python -c``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_READER = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage
runs = SQLiteStorage.get_runs("a01gym")
run = sys.argv[1] or (runs[-1] if runs else None)
print(json.dumps({"runs": runs, "logs": SQLiteStorage.get_logs("a01gym", run) if run else []}))
"""


def read_logs(trackio_dir: Path, run: str | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """The store's run names and the rows logged by ``run`` (default: the last run)."""
    done = subprocess.run(
        [sys.executable, "-c", _READER, run or ""],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "TRACKIO_DIR": str(trackio_dir)},
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["runs"], result["logs"]
