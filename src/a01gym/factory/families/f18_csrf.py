# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F18: cookie-authenticated form endpoints without a CSRF check (CWE-352).

The app gets ``app/routers/web.py``, the browser UI's form endpoints, authenticated by the
``session`` cookie (``app/browser.py``, :func:`plumbing.browser`): ``POST
/web/<records>/{id}/archive`` and ``POST /web/account/email``. The
secure app requires a double-submit token (the ``X-CSRF-Token`` header equal to the
``csrf_token`` cookie) on each; a broken route skips it, so a page on another site can make the
victim's browser change data; where no route is left secure, ``csrf_protect`` slips
(:data:`SLIPS`). Exploits send the victim's cookies (as a browser would) from a foreign origin
without the header, with a guessed token, and without the ``csrf_token`` cookie; the
``referer_check`` trap trusts a ``Referer`` that merely contains the front end's address, and
``token_present`` accepts any non-empty token (never compared with the cookie).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import plumbing, vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R, frontend_origin
from a01gym.scenario.httptest import DbCheck, HttpTest, StatusIn, Step, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY", "SLIPS"]


MECHANISMS = ("parameter", "route_dependencies", "call", "decorator")
"""How a form route runs its check: a ``Depends`` parameter, the route decorator's
``dependencies=[...]``, a call at the top of the handler, or a ``@browser.form_check(...)``
decorator. A route broken beside a secure one lacks the line that does it. The decorator lives
in ``app/browser.py``, where no bug is fixed: its eleven lines in the form router, in one app of
four, were a block the nearest app lacked, and ``nearest_diff`` found F18 at 2.04x chance over
seeds 31-40, 1.02x with it here (docs/families.md)."""

_CHECKS = {
    "secure": "csrf_protect",
    "slip": "csrf_protect",
    "referer_check": "referer_protect",
    "token_present": "csrf_header_present",
    "deny": "forms_disabled",
}


_RETURN = "\n        return\n    "
_SECURE_RULE = "if not cookie or not hmac.compare_digest(cookie, header):"
_FORMS_ONLY = 'if not request.headers.get("content-type", "").startswith(("application/x-www-form-urlencoded", "multipart/form-data")):'
_SAME_ORIGIN = (
    'if request.headers.get("referer", "").startswith(request.headers.get("origin") or "-"):'
)
SLIPS = {
    "or_for_and": ("", "if not cookie and not hmac.compare_digest(cookie, header):"),
    "forms_only": (_FORMS_ONLY + _RETURN, _SECURE_RULE),
    "same_origin": (_SAME_ORIGIN + _RETURN, _SECURE_RULE),
}
"""Where no form route is left secure, both keep calling ``csrf_protect``, which lets every
foreign post through by one slip drawn per app: ``and`` for ``or`` in its rule, only HTML form
bodies checked (a JSON or empty post passes), or a ``Referer`` on its own ``Origin`` taken for
the app's page (both name the foreign page). It used to drop the check, its import and its
calls, and the fix wrote them back (docs/families.md: F18's slips)."""


@dataclasses.dataclass(frozen=True)
class _Guard:
    """The lines one form route needs: decorator arguments and lines above it, a parameter,
    a first statement."""

    route_args: str = ""
    decorator: str = ""
    param: str = ""
    request: str = ""
    first: str = ""


def _guard(mechanism: str, mode: str) -> _Guard:
    check = _CHECKS.get(mode)
    if check is None:
        return _Guard(
            request="\n    request: Request," if mechanism in ("call", "decorator") else ""
        )
    if mechanism == "route_dependencies":
        return _Guard(route_args=f", dependencies=[Depends({check})]")
    if mechanism == "call":
        return _Guard(request="\n    request: Request,", first=f"\n    {check}(request)")
    if mechanism == "decorator":
        return _Guard(
            decorator=f"@browser.form_check({check})\n", request="\n    request: Request,"
        )
    return _Guard(param=f"\n    _: None = Depends({check}),")


def _app(r: Renderer) -> FamilyApp:
    handlers = []
    mechanism = checkforms.draw(r.spec, "csrf", MECHANISMS)
    modes = {site: r.v.mode(site) for site in FAMILY.sites if site not in r.v.removed}
    # no form route left secure: the broken ones keep the check, with the slip in it
    slip = "vuln" in modes.values() and "secure" not in modes.values()
    if slip:
        modes = {site: "slip" if mode == "vuln" else mode for site, mode in modes.items()}
    archive, email = (_guard(mechanism, modes.get(site, "")) for site in FAMILY.sites)
    if "csrf.archive" not in r.v.removed:
        r.route("POST", r.t("/web$url/{${ent}_id}/archive"))
        handlers.append(
            r.t(
                """
                @router.post("$url/{${ent}_id}/archive"$route_args)
                ${decorator}def archive_${ent}_form(
                    ${ent}_id: int,${request}
                    user: CurrentUser = Depends(browser.cookie_user),${guard}
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, Any]:${first}
                    records = repository.${Ent}Repository(connection)
                    $ent = records.get(${ent}_id)
                    if $ent is None or not policy.can_modify(user, $ent):
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                    records.set_status(${ent}_id, "$archived")
                    repository.audit(connection, user, "archive", f"$label {${ent}_id} (web)")
                    return {"id": ${ent}_id, "status": "$archived"}
                """,
                guard=archive.param,
                request=archive.request,
                decorator=archive.decorator,
                route_args=archive.route_args,
                first=archive.first,
            )
        )
    if "csrf.email" not in r.v.removed:
        r.route("POST", "/web/account/email")
        handlers.append(
            r.t(
                """
                @router.post("/account/email"$route_args)
                ${decorator}def change_email_form(
                    body: browser.EmailChange,${request}
                    user: CurrentUser = Depends(browser.cookie_user),${guard}
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, Any]:${first}
                    repository.UserRepository(connection).update(user.id, {"email": body.email})
                    return {"id": user.id, "email": body.email}
                """,
                guard=email.param,
                request=email.request,
                decorator=email.decorator,
                route_args=email.route_args,
                first=email.first,
            )
        )
    body = "\n\n\n".join(handlers)
    helpers = []
    if "csrf_protect" in body:
        early, rule = (
            SLIPS[checkforms.draw(r.spec, "csrf.slip", tuple(SLIPS))]
            if slip
            else ("", _SECURE_RULE)
        )
        helpers.append(
            r.t(
                '''
                def csrf_protect(request: Request) -> None:
                    """Double-submit check: the page echoes its csrf_token cookie in X-CSRF-Token."""
                    ${early}cookie = request.cookies.get("csrf_token", "")
                    header = request.headers.get("X-CSRF-Token", "")
                    $rule
                        raise HTTPException(status.HTTP_403_FORBIDDEN, "missing or wrong CSRF token")
                ''',
                early=early,
                rule=rule,
            )
        )
    if "csrf_header_present" in body:
        helpers.append(
            """def csrf_header_present(request: Request) -> None:
    if not request.headers.get("X-CSRF-Token"):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "missing CSRF token")"""
        )
    if "referer_protect" in body:
        helpers.append(
            """def referer_protect(request: Request) -> None:
    if config.FRONTEND_ORIGIN not in request.headers.get("referer", ""):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "cross-site form post")"""
        )
    if "forms_disabled" in body:
        helpers.append(
            """def forms_disabled(request: Request) -> None:"""
            if mechanism != "parameter"
            else """def forms_disabled() -> None:"""
        )
        helpers[-1] += """
    raise HTTPException(status.HTTP_403_FORBIDDEN, "form posts are disabled")"""
    head = r.t(
        '''
        """Form endpoints of the browser UI, authenticated by the session cookie."""

        ${functools}${hmac}import sqlite3
        ${callable}from typing import Any

        from fastapi import APIRouter, Depends, HTTPException, ${request}status

        from app import ${config}browser, db, models, policy, repository
        from app.security import CurrentUser

        router = APIRouter(prefix="/web", tags=["web"])
        ''',
        request="Request, " if "Request" in "".join(helpers + handlers) else "",
        functools="import functools\n" if "functools." in "".join(helpers) else "",
        callable="from collections.abc import Callable\n"
        if "Callable[" in "".join(helpers)
        else "",
        hmac="import hmac\n" if "hmac." in "".join(helpers) else "",
        config="config, " if "config." in "".join(helpers) else "",
    )
    r.route("GET", "/web/account")
    account = r.t(
        '''
        @router.get("/account", response_model=models.UserPrivate)
        def read_account_page(
            user: CurrentUser = Depends(browser.cookie_user),
            connection: sqlite3.Connection = Depends(db.get_db),
        ) -> dict[str, Any]:
            """The account page's data (a read: no form token needed)."""
            return repository.UserRepository(connection).get(user.id) or {}
        '''
    )
    text = "\n\n\n".join([head, *helpers, account, *handlers]) + "\n"
    # the setting only where a check reads it (the referer trap): a setting nobody reads points
    # at its file (factory/giveaways.py's unused_helper)
    uses_config = "config." in "".join(helpers)
    return FamilyApp(
        files={
            "app/routers/web.py": text,
            "app/browser.py": plumbing.browser("EmailChange" in body, "form_check(" in body),
        },
        routers=["web"],
        config=f'FRONTEND_ORIGIN = "{frontend_origin(r.spec)}"' if uses_config else "",
    )


def _post(cast: testkit.Cast, site: str, owner: str) -> tuple[str, Any, str, list[Any]]:
    if site == "csrf.archive":
        row = f"{owner}_private"
        return (
            f"/web{cast.url}/{testkit.id_of(row)}/archive",
            None,
            f"SELECT status FROM {cast.table} WHERE id = ?",
            [testkit.id_of(row)],
        )
    return (
        "/web/account/email",
        {"email": "new-address@example.test"},
        "SELECT email FROM users WHERE id = ?",
        [testkit.id_of(owner)],
    )


def _form_test(
    cast: testkit.Cast,
    test_id: str,
    kind: TestKind,
    site: str,
    owner: str,
    *,
    same_site: bool,
    why: str,
    token: str | None = None,
    csrf_cookie: bool = True,
) -> HttpTest:
    """A form post with ``owner``'s cookies; from a foreign page unless ``same_site``, with
    ``token`` in ``X-CSRF-Token`` (the page's own when same-site, none by default when not)."""
    path, body, sql, params = _post(cast, site, owner)
    csrf = testkit.placeholder("secret", f"csrf_{owner}")
    session = f"session={testkit.placeholder('token', owner)}"
    headers = {"Cookie": f"{session}; csrf_token={csrf}" if csrf_cookie else session}
    front = frontend_origin(cast.spec)
    if same_site:
        headers |= {"Origin": front, "Referer": f"{front}/records", "X-CSRF-Token": csrf}
    else:
        headers |= {
            "Origin": "https://evil.example",
            "Referer": f"https://evil.example/win?from={front}",
        }
        if token is not None:
            headers["X-CSRF-Token"] = token
    return HttpTest(
        id=test_id,
        kind=kind,
        description=why,
        steps=[
            Step(
                method="POST",
                path=path,
                headers=headers,
                json=body,
                expect=[StatusIn(statuses=[200])] if kind is TestKind.REGRESSION else [],
            )
        ],
        db_checks=[DbCheck(sql=sql, params=params, expect="changed")],
    )


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    posts: tuple[tuple[str, dict[str, Any], str], ...] = (
        ("", {}, "makes {}'s browser post the form"),
        (
            ".wrong_token",
            {"token": "a-guessed-token"},
            "posts {}'s form with a token that is not the cookie's",
        ),
        (
            ".no_cookie",
            {"csrf_cookie": False},
            "posts {}'s form with no csrf_token cookie and no token",
        ),
    )
    return [
        _form_test(
            cast,
            f"{tag}.{site}{suffix}",
            TestKind.EXPLOIT,
            site,
            victim,
            same_site=False,
            why="a foreign page " + why.format(victim),
            **extra,
        )
        for suffix, extra, why in posts
    ]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    return [
        _form_test(
            cast,
            f"regression.web_{site.split('.')[1]}",
            R,
            site,
            cast.peer,
            same_site=True,
            why="the web UI posts the form with its CSRF token",
        )
        for site in FAMILY.sites
    ]


def _policy(spec: Any) -> list[str]:
    return [
        "The browser UI's form endpoints (signed in by the session cookie) accept only posts "
        f"from the app's own pages at {frontend_origin(spec)}, which send the csrf_token "
        "cookie's value in the X-CSRF-Token header."
    ]


_REFERER_CHECK = vocabulary.Trap(
    name="referer_check",
    doc="a Referer that merely contains the front end's address accepted",
)
_TOKEN_PRESENT = vocabulary.Trap(
    name="token_present",
    doc="any non-empty CSRF token accepted, never compared with the cookie",
)

FAMILY = Family(
    id="F18",
    title="CSRF-able cookie-authenticated form endpoints",
    cwes=("CWE-352", "CWE-1275"),
    sites=("csrf.archive", "csrf.email"),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _REFERER_CHECK, _TOKEN_PRESENT),
    cross_tenant=False,
    exploits=_exploits,
    app=_app,
    companion=True,
    regressions=_regressions,
    policy=_policy,
    hint_areas={"csrf": "the browser UI's forms"},
)
