"""Start a pod's command and probe its HTTP port from inside the pod's own network namespace.

Run (by ``test_chart_default.py``) as the entry of a ``bwrap --unshare-net`` sandbox:
``python podprobe.py PORT TOKEN -- ARGV...``. It spawns ARGV with the environment it was given
(the container's, unchanged), waits for ``/health``, then asks ``/schema`` without a token and
with ``TOKEN`` (as a bearer header and as the ``/t/<token>`` path prefix the stock OpenEnv client
can use), prints one JSON line of HTTP statuses, and stops the command with SIGTERM.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5):
            return 200
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def main() -> int:
    port, token, sep, *argv = sys.argv[1:]
    assert sep == "--", "usage: podprobe.py PORT TOKEN -- ARGV..."
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(argv)
    result: dict[str, object] = {"exited": None}
    try:
        deadline = time.monotonic() + 90
        while _status(base + "/health") != 200:
            if process.poll() is not None:
                result["exited"] = process.returncode
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        result["health"] = _status(base + "/health")
        result["schema_without_token"] = _status(base + "/schema")
        result["schema_wrong_token"] = _status(
            base + "/schema", {"Authorization": "Bearer not-the-token"}
        )
        result["schema_bearer"] = _status(base + "/schema", {"Authorization": f"Bearer {token}"})
        result["schema_path_token"] = _status(f"{base}/t/{token}/schema")
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
