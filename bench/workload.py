"""The scenarios the runtime and scale benchmarks serve: a factory-built cache, not the fixture.

Users train on what the factory builds (every family, both data-access styles), and a reset of a
random scenario from such a cache costs what a trainer's sampler pays, which one small fixture
app served over and over does not show. :func:`factory_cache` builds ``count`` candidates (two
per family at the default 40) with the default factory config and no held-out split, so a reset
with no filter may draw any of them, and keeps the result under ``~/.cache/a01gym/bench``.
The directory's name carries a digest of the factory's and the scenario format's source, so a
change there builds a fresh cache instead of serving one the code no longer writes.
:class:`Moves` are the steps a scripted agent takes in whatever scenario a reset drew, read
from its first observation (its files and actors), as an agent would.

    python bench/workload.py   # build (or find) the cache and print its path and mix
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["Moves", "cache_mix", "factory_cache"]


def _code_digest() -> str:
    """sha256 (12 hex digits) of the sources that decide what a built cache holds.

    Read from the ``a01gym`` package this process imports, not from this checkout's ``src``:
    ``tools/bench_ab.py`` runs these benches against another commit's code (``PYTHONPATH``),
    which must build its own cache, not serve one written by this tree's factory.
    """
    import a01gym

    package = Path(a01gym.__file__).resolve().parent
    digest = hashlib.sha256()
    for folder in (package / "factory", package / "scenario"):
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "a01gym" / "bench"


def factory_cache(count: int = 40, seed: int = 0, home: Path | None = None) -> Path:
    """A factory-built cache of ~``count`` scenarios, all in the train split; built once.

    A finished build leaves a ``built.json`` beside the cache; a folder without it (an
    interrupted build) is built again from scratch.
    """
    from a01gym.factory import pipeline

    folder = (home or _home()) / f"factory-{count}-{seed}-{_code_digest()}"
    cache = folder / "cache"
    if (folder / "built.json").exists():
        return cache
    shutil.rmtree(folder, ignore_errors=True)
    summary = pipeline.build_demo(
        cache, count=count, seed=seed, split={"eval_domains": [], "eval_families": []}
    )
    if summary.admitted < count // 2:
        raise RuntimeError(f"the bench cache admitted {summary.admitted} of {count}: {summary}")
    (folder / "built.json").write_text(summary.model_dump_json(indent=2) + "\n")
    return cache


def cache_mix(cache: Path) -> dict[str, Any]:
    """What the cache holds: scenarios, and their count per family and per data-access style."""
    from a01gym.scenario.cache import ScenarioCache

    index = ScenarioCache(cache)
    entries = index.entries()
    styles = collections.Counter(
        index.load(e.hash).hidden.labels.get("data_access", "sqlite3") for e in entries
    )
    return {
        "scenarios": len(entries),
        "families": len({e.family for e in entries}),
        "data_access": dict(sorted(styles.items())),
    }


@dataclasses.dataclass(frozen=True)
class Moves:
    """Actions that work in the scenario of a first observation (its ``result``)."""

    entry: str
    """The app's entry module (``app/main.py``), which every scenario has and an agent reads."""
    other: str
    """Another Python file of the workspace."""
    actor: str
    """A signed-in actor."""

    @classmethod
    def of(cls, first: dict[str, Any]) -> Moves:
        result = first["result"]
        python = [f["path"] for f in result["files"] if f["path"].endswith(".py")]
        entry = "app/main.py" if "app/main.py" in python else python[0]
        others = [p for p in python if p != entry and not p.endswith("__init__.py")]
        named = [a["name"] for a in result["actors"] if a["name"] != "anonymous"]
        return cls(entry=entry, other=(others or [entry])[-1], actor=named[0])

    def read(self) -> dict[str, Any]:
        return {"tool": "read_file", "path": self.entry}

    def request(self, actor: str | None = None) -> dict[str, Any]:
        """A GET of the health route, which every app serves, with an actor's credentials."""
        return {
            "tool": "http_request",
            "method": "GET",
            "path": "/health",
            "actor": actor or self.actor,
        }

    def script(self) -> list[dict[str, Any]]:
        """An episode's worth of looking around, then ``submit`` (~7 steps)."""
        return [
            {"tool": "list_files"},
            self.read(),
            {"tool": "search", "pattern": "def "},
            self.request(),
            self.request("anonymous"),
            {"tool": "read_file", "path": self.other},
            {"tool": "submit"},
        ]

    def edit(self, content: str) -> dict[str, Any]:
        """Rewrite the entry module (read as ``content``) with a comment added: a change, so
        grading loads a changed workspace and restarts the app."""
        return {"tool": "write_file", "path": self.entry, "content": content + "\n# reviewed\n"}


if __name__ == "__main__":
    built = factory_cache()
    print(json.dumps({"cache": str(built), **cache_mix(built)}, indent=2))
