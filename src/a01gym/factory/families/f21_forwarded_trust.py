"""F21: an operations endpoint that takes a forwarding header's word that a caller is local.

The catalogue's F05 lists ``X-Forwarded-For == "127.0.0.1"`` as an "internal" check: this
family is that variant on a route of its own. The app gets ``app/routers/ops.py`` (on
``app/monitor_agent.py``, :data:`plumbing.MONITOR_AGENT`), the status
page of its monitoring agent, which returns the worker's settings (the service key among
them) and whether ``X-Forwarded-For`` or ``X-Real-IP`` names a local address
(``_from_this_host``, in every app). The agent presents the operations token (a ``settings``
row); the vulnerable app also lets in any request that helper vouches for, which any client
can make it do. Exploits send those headers as a signed-in user and anonymously; the
regression is the agent's own read with the token. The ``x_real_ip`` trap ignores the first
header and keeps trusting the second.

The helper is in the secure app too, and only the refusal's condition differs: when it was
code only the vulnerable app had, ``nearest_diff`` named ``ops.py`` for F21 at 3.45x chance
over seeds 31-36 once the policy no longer merged into the security module
(docs/families.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import testkit
from a01gym.factory.families import plumbing, vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY"]

_SITE = "ops.status"
_TOKEN = "{{secret:ops_token}}"
_TRUSTED = {"x_real_ip": ("X-Real-IP",)}
"""Mode -> the headers whose first address the helper reads, where not both."""
_BELIEVED = ("vuln", "x_real_ip")
"""Modes whose refusal takes the helper's word."""

_INTERNAL = '''
LOCAL_ADDRESSES = ("127.0.0.1", "::1")


def _from_this_host(request: Request) -> bool:
    """Whether the forwarding headers name this host (reported on the status page)."""
    for header in $headers:
        if request.headers.get(header, "").split(",")[0].strip() in LOCAL_ADDRESSES:
            return True
    return False
'''

_HEAD = '''
"""Operations endpoints for the monitoring agent."""

import hmac
import sqlite3
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, status

from app import db, monitor_agent

router = APIRouter(prefix="/ops", tags=["ops"])
'''

_ROUTE = '''
def _is_monitor(request: Request, settings: dict[str, str]) -> bool:
    """The monitoring agent presents the operations token."""
    token = request.headers.get("X-Ops-Token", "")
    return bool(token) and hmac.compare_digest(token, settings.get("ops_token", ""))


@router.get("/status")
def ops_status(
    request: Request,
    connection: sqlite3.Connection = Depends(db.get_db),
) -> dict[str, Any]:
    """Service status and the worker's settings, for the monitoring agent."""
    rows = connection.execute("SELECT key, value FROM settings ORDER BY key").fetchall()
    settings = {row["key"]: row["value"] for row in rows}
    if $refuse:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "operators only")
    return {
        "status": "ok",
        "local": _from_this_host(request),
        "worker": monitor_agent.worker_report(settings),
    }
'''


def _app(r: Renderer) -> FamilyApp:
    mode = r.v.mode(_SITE)
    parts = [r.t(_HEAD)]
    if _SITE not in r.v.removed:
        r.route("GET", "/ops/status")
        trusted = _TRUSTED.get(mode, ("X-Forwarded-For", "X-Real-IP"))
        quoted = ", ".join(f'"{header}"' for header in trusted)
        headers = f"({quoted},)" if len(trusted) == 1 else f"({quoted})"
        parts.append(r.t(_INTERNAL, headers=headers))
        refuse = "not _is_monitor(request, settings)"
        if mode in _BELIEVED:
            refuse = "not (_from_this_host(request) or _is_monitor(request, settings))"
        if mode == vocabulary.Mode.DENY:
            refuse = "True"
        parts.append(r.t(_ROUTE, refuse=refuse))
    files = {"app/routers/ops.py": "\n\n\n".join(parts) + "\n"}
    if _SITE not in r.v.removed:
        files["app/monitor_agent.py"] = plumbing.MONITOR_AGENT
    return FamilyApp(files=files, routers=["ops"])


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    t, e = f"{tag}.{site}.{attacker}", TestKind.EXPLOIT
    local = "127.0.0.1"
    attacks = (  # the attacker's own last: a visible reproduction never copies a hidden test
        (f"{t}.anon", "anonymous", {"X-Forwarded-For": f"{local}, 203.0.113.9"}, "unsigned"),
        (f"{t}.forwarded", attacker, {"X-Forwarded-For": local}, "claiming to be local"),
        (f"{t}.real_ip", attacker, {"X-Real-IP": local}, "claiming a local address"),
    )
    return [
        testkit.read_test(
            test_id,
            e,
            actor,
            "/ops/status",
            "service_key",
            headers=headers,
            description=f"{actor}, {how}, reads the worker's service key on the status page",
        )
        for test_id, actor, headers, how in attacks
    ]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    return [
        testkit.read_test(
            "regression.ops_monitor",
            R,
            "anonymous",
            "/ops/status",
            "service_key",
            headers={"X-Ops-Token": _TOKEN},
            description="the monitoring agent reads the status page with the operations token",
        )
    ]


def _fixture(cast: testkit.Cast) -> dict[str, list[dict[str, object]]]:
    return {"settings": [{"key": "ops_token", "value": _TOKEN}]}


def _policy(spec: Any) -> list[str]:
    return [
        "Only the monitoring agent, which presents the operations token, may read the "
        "operations status page."
    ]


_X_REAL_IP = vocabulary.Trap(
    name="x_real_ip", doc="X-Forwarded-For no longer trusted, X-Real-IP still is"
)

FAMILY = Family(
    id="F21",
    title="Internal-caller check that trusts forwarding headers",
    cwes=("CWE-807", "CWE-290"),
    sites=(_SITE,),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _X_REAL_IP),
    mapping="loose: CWE-807 maps to A04:2021 (Insecure Design) and CWE-290 to A07:2021 "
    "(Identification and Authentication Failures); the A01:2021 text lists bypassing access "
    "control checks by modifying the request, so the family is kept in the A01 catalog",
    cross_tenant=False,
    exploits=_exploits,
    app=_app,
    companion=True,
    regressions=_regressions,
    fixture=_fixture,
    policy=_policy,
    hint_areas={"ops": "the operations endpoints"},
)
