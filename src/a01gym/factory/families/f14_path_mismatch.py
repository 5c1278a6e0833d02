# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F14: a path-prefix guard that misses the legacy aliases the admin router is mounted at.

An F14 app guards administration paths in a ``main.py`` middleware (a matcher in
``security.py``, its prefixes there or in ``config.py``) and mounts the admin router at legacy
alias prefixes too; each alias is a site the guard can miss. The app hook adds all of it to
the shared skeleton.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R, public_guide
from a01gym.scenario.httptest import HttpTest, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

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


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    prefix = LEGACY_PREFIXES[site]
    t = f"{tag}.{site}.{attacker}"
    return [
        testkit.read_test(
            f"{t}.audit",
            TestKind.EXPLOIT,
            attacker,
            f"{prefix}/audit",
            "audit",
            description=f"{attacker} reads the audit log through {prefix}",
        ),
        testkit.read_test(
            f"{t}.users",
            TestKind.EXPLOIT,
            attacker,
            f"{prefix}/users",
            f"{victim}_key",
            description=f"{attacker} lists accounts through {prefix}",
        ),
    ]


def _app(r: Renderer) -> FamilyApp:
    """The guard middleware, its matcher and the alias mounts (sites not removed)."""
    guard = _path_guard(r)
    deny = any(r.v.mode(s) == "deny" for s in LEGACY_PREFIXES)
    check = (
        '        return JSONResponse({"detail": "administration is disabled"}, status_code=403)\n'
        if deny
        else ""
    )
    middleware = r.t(
        '''
        @app.middleware("http")
        async def admin_guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            """Only administrators reach administration paths."""
            if security.is_admin_path(request.url.path):
        $check        user = security.user_from_request(request)
                if user is None:
                    return JSONResponse({"detail": "authentication required"}, status_code=401)
                if not user.is_admin:
                    return JSONResponse({"detail": "administrator role required"}, status_code=403)
            return await call_next(request)
        ''',
        check=check,
    )
    return FamilyApp(
        config=guard.config,
        security=guard.security,
        middleware=[middleware],
        admin_mounts=[p for s, p in LEGACY_PREFIXES.items() if s not in r.v.removed],
    )


_OVER_BLOCK = vocabulary.Trap(
    name="over_block",
    doc="the guard matches a bare prefix and blocks public pages that share it",
)

FAMILY = Family(
    id="F14",
    title="Guard/route path mismatch (legacy alias prefix)",
    cwes=("CWE-425", "CWE-706", "CWE-288"),
    sites=tuple(LEGACY_PREFIXES),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _OVER_BLOCK),
    indirections=("middleware",),
    regressions=_regressions,
    exploits=_exploits,
    app=_app,
    hint_areas={"guard": "the administration pages"},
    clause="admin.manage",
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


def _path_guard(r: Renderer) -> PathGuard:
    """The app's admin-path matcher: ``/admin`` and every alias prefix not left unguarded."""
    prefixes = ["/admin"] + [
        prefix
        for site, prefix in LEGACY_PREFIXES.items()
        if r.v.mode(site) not in ("vuln",)
        and not (r.v.mode(site) == "secure" and site in r.v.removed)
    ]
    over_block = any(r.v.mode(s) == "over_block" for s in LEGACY_PREFIXES)
    return path_guard(r.spec, prefixes, over_block)


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
