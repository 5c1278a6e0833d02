# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F11: sign-in and sign-out redirects that follow any target the link names (CWE-601).

The app gets ``app/routers/signin.py`` (``GET /auth/continue?next=`` after signing in and
``GET /auth/signout?return_to=``), the session routes (in ``app/routers/devices.py`` with
``Layout.sessions_router``, else beside the caller's own account in ``app/routers/me.py``: the
sign-in router has one shape in every app) and ``app/redirects.py``, whose
``is_trusted_target`` admits only the app's own paths
and pages on ``config.TRUSTED_REDIRECT_HOSTS``. A broken redirect skips that check; where no
redirect is left secure, both keep calling it and it lets every link through by one slip
(:data:`SLIPS`). Exploits are links the victim follows (the runner does
not follow redirects, so the ``Location`` header is judged, whatever the status); the
``prefix_allow`` trap (an allow-list by string prefix) is caught by a look-alike host.
"""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import BodyContains, HttpTest, StatusIn, Step, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY", "HELP_HOST", "SLIPS", "STRUCTURES"]

HELP_HOST = "help.example.test"
# site -> (path, query parameter, the default landing page)
_SITES = {
    "redirect.continue": ("/auth/continue", "next", None),
    "redirect.signout": ("/auth/signout", "return_to", "/admin-guide"),
}
_PAYLOADS = (
    ("https://evil.example/landing", "https://evil.example"),
    ("//evil.example/landing", "//evil.example"),
    (f"https://{HELP_HOST}.evil.example/landing", f"https://{HELP_HOST}.evil.example"),
)


STRUCTURES = ("inline", "guard")
"""How a handler asks ``redirects.is_trusted_target``: ``inline`` in its return (the target
when trusted, else the default), ``guard`` first (an untrusted target is dropped). The check
lives in ``app/redirects.py``, never in the router: with it in the router (two of the three
structures this replaced), a router that had it and one that had not differed by most of a
short file, and an app's vulnerable router matches no other app's, so its nearest app is drawn
without regard to that; the vulnerable app also dropped the check with its setting and import,
and the fix wrote them back. With both changes ``nearest_diff`` finds F11's file 12.0 times
(expected) in 98 scenarios against 17.0 before (seeds 31-37); its ratio to chance did not fall
(3.27x against 3.06x), since the fix now touches one file where it touched two or three
(docs/families.md)."""

_SECURE_RULE = 'parts.scheme in ("", "https") and parts.hostname in config.TRUSTED_REDIRECT_HOSTS'
SLIPS = {
    "or_for_and": 'parts.scheme in ("", "https") or parts.hostname in config.TRUSTED_REDIRECT_HOSTS',
    "http_only": 'parts.hostname in config.TRUSTED_REDIRECT_HOSTS or parts.scheme != "http"',
    "fast_path": _SECURE_RULE,
}
"""Where no redirect of the app is left secure, the vulnerable app keeps calling
``is_trusted_target``, which lets every link through by one slip drawn per app: ``or`` for
``and`` in its host rule, a rule that only refuses plain http, or a fast path that admits any
link starting with ``/`` or ``https://`` before the rule. A check that reads like the secure one,
never a helper or setting left unused, and three shapes of fix."""

_FAST_PATH = 'if target.startswith(("/", "https://")):\n        return True\n    '


def _target(mode: str, param: str, default: str, structure: str) -> str:
    if mode == "vuln" or (mode in ("secure", "slip") and structure == "guard"):
        return f"{param} or {default}"
    if mode == "deny":
        return default
    if mode == "prefix_allow":
        return (
            f'{param} if {param} and {param}.startswith(("/", f"https://{{config.TRUSTED_REDIRECT_HOSTS[0]}}")) '
            f'and not {param}.startswith("//") else {default}'
        )
    return f"{param} if {param} and redirects.is_trusted_target({param}) else {default}"


def _guard(mode: str, param: str, structure: str) -> str:
    if mode not in ("secure", "slip") or structure != "guard":
        return ""
    return f"if {param} and not redirects.is_trusted_target({param}):\n        {param} = None\n    "


_TRUSTED = '''
    """Where the browser may be sent: our own paths and trusted hosts only."""

    from urllib.parse import urlsplit

    from app import config


    def is_trusted_target(target: str) -> bool:
        """One of our own paths, or a page on a trusted host."""
        parts = urlsplit(target)
        ${fast}if parts.scheme or parts.netloc:
            return $rule
        return target.startswith("/") and "\\\\" not in target
    '''


def _app(r: Renderer) -> FamilyApp:
    handlers = []
    structure = checkforms.draw(r.spec, "redirect", STRUCTURES)
    modes = {site: r.v.mode(site) for site in _SITES if site not in r.v.removed}
    # no redirect left secure: the broken ones keep the check, with the slip in its rule
    slip = "secure" not in modes.values()
    if slip:
        modes = {site: "slip" if mode == "vuln" else mode for site, mode in modes.items()}
    for site, mode in modes.items():
        path, param, default = _SITES[site]
        r.route("GET", path)
        default_expr = "config.HOME_PATH" if default is None else "config.SIGNED_OUT_PATH"
        if site == "redirect.continue":
            handlers.append(
                r.t(
                    '''
                    @router.get("/continue")
                    def continue_after_sign_in(
                        next: str | None = None,
                        user: CurrentUser = Depends(security.current_user),
                    ) -> RedirectResponse:
                        """Where the browser lands once signed in (deep links carry ``next``)."""
                        ${guard}return RedirectResponse($target, status_code=status.HTTP_303_SEE_OTHER)
                    ''',
                    target=_target(mode, param, default_expr, structure),
                    guard=_guard(mode, param, structure),
                )
            )
        else:
            handlers.append(
                r.t(
                    '''
                    @router.get("/signout")
                    def sign_out(
                        request: Request,
                        return_to: str | None = None,
                        user: CurrentUser = Depends(security.current_user),
                        connection: sqlite3.Connection = Depends(db.get_db),
                    ) -> RedirectResponse:
                        """End this session and send the browser back where the page asked."""
                        connection.execute("DELETE FROM sessions WHERE token = ?", [security.bearer_token(request)])
                        connection.commit()
                        ${guard}return RedirectResponse($target, status_code=status.HTTP_303_SEE_OTHER)
                    ''',
                    target=_target(mode, param, default_expr, structure),
                    guard=_guard(mode, param, structure),
                )
            )
    r.route("GET", "/auth/session")
    r.route("GET", "/auth/sessions")
    r.route("POST", "/auth/signout-everywhere")
    sessions = textwrap.dedent(
        '''
        @router.get("${auth}/session")
        def read_session(
            user: CurrentUser = Depends(security.current_user),
            connection: sqlite3.Connection = Depends(db.get_db),
        ) -> dict[str, Any]:
            """Who the browser is signed in as, and on how many devices."""
            active = connection.execute("SELECT COUNT(*) FROM sessions WHERE user_id = ?", [user.id]).fetchone()[0]
            return {"username": user.username, "role": user.role, "active_sessions": active}


        @router.get("${auth}/sessions")
        def list_sessions(
            user: CurrentUser = Depends(security.current_user),
            connection: sqlite3.Connection = Depends(db.get_db),
        ) -> list[dict[str, str]]:
            """The caller's active sessions, tokens shortened so the page never shows one whole."""
            rows = connection.execute("SELECT token FROM sessions WHERE user_id = ? ORDER BY token", [user.id])
            return [{"session": row["token"][:6] + "..."} for row in rows.fetchall()]


        @router.post("${auth}/signout-everywhere", status_code=status.HTTP_204_NO_CONTENT)
        def sign_out_everywhere(
            user: CurrentUser = Depends(security.current_user),
            connection: sqlite3.Connection = Depends(db.get_db),
        ) -> Response:
            """End every session of the caller (a lost phone, a shared computer)."""
            connection.execute("DELETE FROM sessions WHERE user_id = ?", [user.id])
            connection.commit()
            return Response(status_code=status.HTTP_204_NO_CONTENT)
        '''
    )
    # the sessions stay in the sign-in router only where it has no redirect left to serve
    place = ("devices" if r.spec.layout.sessions_router else "me") if handlers else "signin"
    files: dict[str, str] = {}
    own_account: list[str] = []
    if handlers:
        files["app/routers/signin.py"] = _module(_SIGNIN_DOC, "auth", "\n\n\n".join(handlers))
    if place == "me":
        own_account.append(r.t(sessions, auth="/auth"))
    else:
        body = r.t(sessions, auth="")
        files[f"app/routers/{place}.py"] = _module(_SESSIONS_DOC, "sessions", body)
    routers = ["signin", *(["devices"] * (place == "devices"))]
    if {"secure", "slip"} & set(modes.values()):
        drawn = checkforms.draw(r.spec, "redirect.slip", tuple(SLIPS)) if slip else ""
        fast = _FAST_PATH if drawn == "fast_path" else ""
        files["app/redirects.py"] = (
            r.t(_TRUSTED, fast=fast, rule=SLIPS.get(drawn, _SECURE_RULE)) + "\n"
        )
    return FamilyApp(
        files=files,
        routers=routers,
        own_account=own_account,
        config=r.t(
            """
            HOME_PATH = "$url"
            SIGNED_OUT_PATH = "/admin-guide"
            TRUSTED_REDIRECT_HOSTS = ("$host",)
            """,
            host=HELP_HOST,
        ),
    )


_SIGNIN_DOC = "Signing in and out: where the browser goes afterwards."
_SESSIONS_DOC = "The caller's sessions: who the browser is signed in as, and on which devices."


def _module(doc: str, tag: str, body: str) -> str:
    """A router module under ``/auth`` holding ``body``, importing what the body uses."""
    fastapi = [
        "APIRouter",
        *(n for n in ("Depends", "Request", "Response", "status") if re.search(rf"\b{n}\b", body)),
    ]
    modules = [m for m in ("config", "db", "redirects", "security") if f"{m}." in body]
    stdlib = [
        *(["import sqlite3"] * ("sqlite3." in body)),
        *(["from typing import Any"] * bool(re.search(r"\bAny\b", body))),
    ]
    head = "\n".join(
        [
            f'"""{doc}"""',
            "",
            *([*stdlib, ""] if stdlib else []),
            f"from fastapi import {', '.join(fastapi)}",
            *(["from fastapi.responses import RedirectResponse"] * ("RedirectResponse" in body)),
            "",
            f"from app import {', '.join(modules)}",
            "from app.security import CurrentUser",
            "",
            f'router = APIRouter(prefix="/auth", tags=["{tag}"])',
        ]
    )
    return head + "\n\n\n" + body + "\n"


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    path, param, _ = _SITES[site]
    return [
        HttpTest(
            id=f"{tag}.{site}.{index}",
            kind=TestKind.EXPLOIT,
            description=f"{victim} follows a crafted link and lands on {host}",
            steps=[
                Step(
                    actor=victim,
                    path=path,
                    query={param: payload},
                    expect=[BodyContains(value=f"location: {host}")],
                )
            ],
        )
        for index, (payload, host) in enumerate(_PAYLOADS)
    ]


def _redirect(
    test_id: str, actor: str, path: str, query: dict[str, str], location: str, why: str
) -> HttpTest:
    return HttpTest(
        id=test_id,
        kind=R,
        description=why,
        steps=[
            Step(
                actor=actor,
                path=path,
                query=query,
                expect=[StatusIn(statuses=[303]), BodyContains(value=f"location: {location}")],
            )
        ],
    )


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v, p = cast.victim, cast.peer
    deep = f"{cast.url}/{testkit.id_of(v + '_private')}?tab=2"
    help_page = f"https://{HELP_HOST}/guide/getting-started"
    return [
        _redirect(
            "regression.redirect_deep_link",
            v,
            "/auth/continue",
            {"next": deep},
            deep,
            "a deep link survives signing in",
        ),
        _redirect(
            "regression.redirect_help",
            p,
            "/auth/continue",
            {"next": help_page},
            help_page,
            "the help site is a trusted target",
        ),
        _redirect(
            "regression.redirect_home",
            v,
            "/auth/continue",
            {},
            cast.url,
            "without a target the browser lands on the home page",
        ),
        _redirect(
            "regression.signout_back",
            p,
            "/auth/signout",
            {"return_to": "/health"},
            "/health",
            "signing out returns to the page that asked",
        ),
    ]


def _policy(spec: Any) -> list[str]:
    return [
        "After signing in or out, the browser "
        f"is sent only to the app's own paths or to https://{HELP_HOST}; any other target "
        "lands on the default page.",
        "Signed-in users see and end only their own sessions.",
    ]


_PREFIX_ALLOW = vocabulary.Trap(
    name="prefix_allow",
    doc="redirect targets allowed by string prefix",
)

FAMILY = Family(
    id="F11",
    title="Open redirect after sign-in or sign-out",
    cwes=("CWE-601",),
    sites=tuple(_SITES),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _PREFIX_ALLOW),
    cross_tenant=False,
    regressions=_regressions,
    exploits=_exploits,
    app=_app,
    companion=True,
    policy=_policy,
    hint_areas={"redirect": "signing in and out"},
)
