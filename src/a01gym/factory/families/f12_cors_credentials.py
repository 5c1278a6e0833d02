"""F12: a CORS policy that lets any origin read the API with the user's credentials.

The app gets Starlette's ``CORSMiddleware`` with credentials allowed, from a module of its own
(``app/origins.py``, whose ``install`` ``main.py`` calls; not ``cors.py``: the task text names
no weakness, and the file list is part of it). Every app serves it, as the bug or as a
companion (``Family.every_app``): a module only some apps had was the file that set them apart
from their nearest app. The secure app lists its web front end (``config.FRONTEND_ORIGINS``);
the vulnerable one allows ``*`` (Starlette then reflects whatever ``Origin`` comes,
credentials included) or a regex without a dot boundary, whichever is one line of the drawn
structure (:data:`STRUCTURES`). Exploits judge the response headers of a simple and a
preflight request from attacker origins; regressions keep the front end's credentialed access.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, codetext, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R, frontend_origin
from a01gym.scenario.httptest import BodyContains, HttpTest, StatusIn, Step, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY"]

_EVIL = "https://evilexample.test"


STRUCTURES = ("main", "config", "regex", "literal")
"""Where the allowed origins are stated: a list in ``origins.py``; a ``CORS_ALLOW_ORIGINS`` setting
in ``config.py``; an escaped, whole-origin ``allow_origin_regex`` built in ``origins.py`` from
the front end's setting; or that regex written out as a literal, as many apps spell it. Each
structure's bug is one line of that structure: ``"*"`` added to the list (or, by the seed, a
regex for "preview" hosts beside it) or to the setting, or the regex widened to any host whose
name ends in the domain (no dot boundary). So a vulnerable app and a secure one of the same
structure differ by that line and nothing else, and the setting stays in use. The bug used to be
drawn apart from the structure: a regex bug in a ``main`` or ``regex`` app dropped the front
end's setting and the ``config`` import with it, and ``nearest_diff`` named its files at 2.8x
chance (seeds 31-34, 36-39; docs/families.md)."""

_DOC = "Cross-origin requests: the web front ends that may call the API with credentials."

_WIDE = r'r"https://.*example\.test"'
"""Any host ending in ``example.test``, the attacker's ``evilexample.test`` included."""


def _origins(mode: str, spec: Any, structure: str) -> str:
    if structure == "config" and mode in ("vuln", "secure"):
        return "allow_origins=list(config.CORS_ALLOW_ORIGINS)"
    if structure == "regex" and mode == "secure":
        return "allow_origin_regex=re.escape(config.FRONTEND_ORIGINS[0])"
    if structure == "regex" and mode == "vuln":  # the host dropped, the dot before the domain too
        domain = 'config.FRONTEND_ORIGINS[0].split(".", 1)[1]'
        return f'allow_origin_regex=r"https://.*" + re.escape({domain})'
    if structure == "literal" and mode == "secure":
        return f'allow_origin_regex=r"{re.escape(frontend_origin(spec))}"'
    if structure == "literal" and mode == "vuln":
        return f"allow_origin_regex={_WIDE}"
    if mode == "vuln" and spec.seed % 2:  # the list, and a regex for "preview" hosts beside it
        return f"allow_origins=list(config.FRONTEND_ORIGINS),\nallow_origin_regex={_WIDE}"
    if mode == "vuln":
        return 'allow_origins=[*config.FRONTEND_ORIGINS, "*"]'
    if mode == "prefix_regex":
        return 'allow_origin_regex=config.FRONTEND_ORIGINS[0].replace(".", r"\\.") + ".*"'
    if mode == "no_credentials":
        return 'allow_origins=["*"]'
    return "allow_origins=list(config.FRONTEND_ORIGINS)"


def _app(r: Renderer) -> FamilyApp:
    mode = r.v.mode("cors.policy")
    structure = checkforms.draw(r.spec, "cors.policy", STRUCTURES)
    config = f'FRONTEND_ORIGINS = ("{frontend_origin(r.spec)}",)'
    if structure == "config":
        allowed = '(*FRONTEND_ORIGINS, "*")' if mode == "vuln" else "FRONTEND_ORIGINS"
        config += f"\nCORS_ALLOW_ORIGINS = {allowed}"
    if mode == "deny":
        return FamilyApp(config=config)
    origins = _origins(mode, r.spec, structure)
    credentials = "False" if mode == "no_credentials" else "True"
    imports = "import re\n\n" if "re.escape" in origins else ""
    imports += "from fastapi import FastAPI\nfrom fastapi.middleware.cors import CORSMiddleware\n"
    if "config." in origins:
        imports += "\nfrom app import config\n"
    arguments = (
        f"CORSMiddleware,\n{origins},\nallow_credentials={credentials},\n"
        'allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],\n'
        'allow_headers=["Authorization", "Content-Type"],\n'
    )
    module = (
        f'"""{_DOC}"""\n\n{imports}\n\n'
        "def install(app: FastAPI) -> None:\n"
        '    """Add the CORS middleware to ``app``."""\n'
        f"    app.add_middleware(\n{codetext.indent(arguments, 8)}    )\n"
    )
    return FamilyApp(
        files={"app/origins.py": module}, config=config, main_setup=["origins.install(app)"]
    )


def _headers_test(
    test_id: str, kind: TestKind, actor: str, origin: str, *, preflight: bool, why: str
) -> HttpTest:
    expect: list[Any] = [
        BodyContains(value=f"access-control-allow-origin: {origin}"),
        BodyContains(value="access-control-allow-credentials: true"),
    ]
    if kind is TestKind.REGRESSION:
        expect.insert(0, StatusIn(statuses=[200]))
    headers = {"Origin": origin}
    if preflight:
        headers |= {
            "Access-Control-Request-Method": "PATCH",
            "Access-Control-Request-Headers": "content-type",
        }
    return HttpTest(
        id=test_id,
        kind=kind,
        description=why,
        steps=[
            Step(
                actor=actor,
                method="OPTIONS" if preflight else "GET",
                path="/users/me",
                headers=headers,
                expect=expect,
            )
        ],
    )


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    lookalike = frontend_origin(cast.spec).replace(
        ".example.test", ".example.test.evilexample.test"
    )
    e = TestKind.EXPLOIT
    return [
        _headers_test(
            f"{tag}.{site}.read",
            e,
            victim,
            _EVIL,
            preflight=False,
            why=f"a page on {_EVIL} reads {victim}'s account with their credentials",
        ),
        _headers_test(
            f"{tag}.{site}.preflight",
            e,
            victim,
            lookalike,
            preflight=True,
            why=f"a look-alike origin may send credentialed writes as {victim}",
        ),
    ]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    front = frontend_origin(cast.spec)
    return [
        _headers_test(
            "regression.cors_frontend",
            R,
            cast.victim,
            front,
            preflight=False,
            why="the web front end reads the API with credentials",
        ),
        _headers_test(
            "regression.cors_preflight",
            R,
            cast.peer,
            front,
            preflight=True,
            why="the web front end may send credentialed writes",
        ),
    ]


def _policy(spec: Any) -> list[str]:
    return [
        "Browsers may call the API with the user's credentials only from the web front end at "
        f"{frontend_origin(spec)}."
    ]


_NO_CREDENTIALS = vocabulary.Trap(
    name="no_credentials",
    doc="cross-origin requests no longer carry credentials, for the front end too",
    breaks_legitimate_use=True,
)
_PREFIX_REGEX = vocabulary.Trap(
    name="prefix_regex",
    doc="allowed origins matched by a regex without an end anchor",
)

FAMILY = Family(
    id="F12",
    title="CORS misconfiguration with credentials",
    cwes=("CWE-942", "CWE-346"),
    sites=("cors.policy",),
    traps=(vocabulary.DENY_ALL, _NO_CREDENTIALS, _PREFIX_REGEX),
    mapping="loose: CWE-942 maps to A05:2021 (Security Misconfiguration) and CWE-346 to A07:2021; "
    "the A01:2021 text lists CORS misconfiguration that allows API access from "
    "unauthorized origins, so the family is kept in the A01 catalog",
    cross_tenant=False,
    exploits=_exploits,
    app=_app,
    companion=True,
    every_app=True,
    regressions=_regressions,
    policy=_policy,
    hint_areas={"cors": "calls from browsers"},
)
