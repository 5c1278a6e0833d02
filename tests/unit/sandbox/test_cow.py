"""The zygote's copy-on-write hygiene, run in a child interpreter (it freezes the gc)."""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = """
import json
from a01gym.sandbox.inside import cow

classes = cow._free_blocks()
keep = [bytes(n % 400) for n in range(200_000)]
del keep[::2]  # a hole in every other block, across many pools
before = sum(free for _, free in cow._free_blocks())
cow.prepare_for_fork()
after = sum(free for _, free in cow._free_blocks())
print(json.dumps({"sizes": [size for size, _ in classes], "before": before, "after": after}))
"""


def _run() -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout)


def test_fills_the_holes_that_children_would_allocate_into() -> None:
    result = _run()
    assert result["sizes"] == list(range(16, 513, 16))  # pymalloc's 32 size classes, parsed
    assert result["before"] > 50_000
    # What is left free sits in fresh pools (a few thousand blocks at most), which a child
    # fills densely.
    assert result["after"] < result["before"] / 10
