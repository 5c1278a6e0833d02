"""F14: a path-prefix guard that misses the legacy aliases the admin router is mounted at."""

from __future__ import annotations

import dataclasses
from typing import Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R, public_guide
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY", "GUARDS", "LEGACY_PREFIXES", "PathGuard", "path_guard"]

LEGACY_PREFIXES = {"guard.v1": "/api/v1/admin", "guard.legacy": "/v1/admin"}
"""Site -> the alias prefix the admin router is also mounted at."""


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    adm = cast.admin
    tests = public_guide(cast)
    tests.append(
        testkit.read_test(
            "regression.admin_audit",
            R,
            adm,
            "/admin/audit",
            "audit",
            description="an administrator reads the audit log",
        )
    )
    for site, prefix in LEGACY_PREFIXES.items():
        tests.append(
            testkit.read_test(
                f"regression.admin_alias.{site}",
                R,
                adm,
                f"{prefix}/audit",
                "audit",
                description=f"documented clients still use {prefix}",
            )
        )
    return tests


FAMILY = Family(
    "F14",
    "Guard/route path mismatch (legacy alias prefix)",
    "CWE-425",
    ("CWE-425", "CWE-706", "CWE-288"),
    OWASP_A01,
    tuple(LEGACY_PREFIXES),
    ("deny_all", "delete_route", "over_block"),
    indirections=("middleware",),
    regressions=_regressions,
)


# -- how the guard matches administration paths (drawn per scenario) ------------------------
GUARDS = ("prefixes", "segments", "config")
"""``prefixes``: a prefix tuple in ``security.py``; ``segments``: leading path segments
compared as tuples; ``config``: the prefix tuple is a setting in ``config.py``."""


@dataclasses.dataclass(frozen=True)
class PathGuard:
    """The guard's code: ``security`` lines (the matcher) and ``config`` lines (a setting)."""

    security: str
    config: str = ""


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def path_guard(spec: Any, prefixes: list[str], over_block: bool) -> PathGuard:
    """``spec``'s admin-path matcher guarding ``prefixes`` (``over_block``: a bare
    ``startswith`` that also catches ``/admin-guide``, whatever the drawn guard)."""
    drawn = checkforms.draw(spec, "guard.paths", GUARDS)
    quoted = _tuple([f'"{prefix}"' for prefix in prefixes])
    doc = '    """Paths the admin guard middleware protects."""\n'
    if over_block:
        match = "any(path.startswith(prefix) for prefix in ADMIN_PREFIXES)"
    elif drawn == "segments":
        mounts = _tuple(
            [_tuple([f'"{part}"' for part in p.strip("/").split("/")]) for p in prefixes]
        )
        return PathGuard(
            f"ADMIN_MOUNTS = {mounts}\n\n\n"
            "def is_admin_path(path: str) -> bool:\n"
            + doc
            + '    parts = tuple(path.strip("/").split("/"))\n'
            "    return any(parts[: len(mount)] == mount for mount in ADMIN_MOUNTS)"
        )
    elif drawn == "config":
        return PathGuard(
            "def is_admin_path(path: str) -> bool:\n" + doc + "    return any(\n"
            '        path == prefix or path.startswith(prefix + "/") '
            "for prefix in config.ADMIN_PATH_PREFIXES\n"
            "    )",
            config=f"ADMIN_PATH_PREFIXES: tuple[str, ...] = {quoted}",
        )
    else:
        match = 'any(path == prefix or path.startswith(prefix + "/") for prefix in ADMIN_PREFIXES)'
    return PathGuard(
        f"ADMIN_PREFIXES = {quoted}\n\n\ndef is_admin_path(path: str) -> bool:\n"
        + doc
        + f"    return {match}"
    )
