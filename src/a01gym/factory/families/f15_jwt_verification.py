# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F15: API tokens (JWT, HS256) whose signature or expiry is not verified.

The app gets ``app/tokens.py`` (on ``app/jwt_codec.py``, :data:`plumbing.JWT_CODEC`) and
``app/routers/api.py``: ``POST /api/v2/tokens`` issues a token for the signed-in user,
``/api/v2/me`` and ``/api/v2/<records>/{id}`` accept it. The sandbox has no JWT package, so
``tokens.py`` implements HS256 with the standard library; the signing key is a per-world secret
in the settings table. Sites: ``jwt.signature`` (the signature is not checked) and
``jwt.expiry`` (``exp`` is not checked). Exploits send tokens the world forges
(``{{jwt:alice.forged}}``, ``.none``, ``.expired``, ``.hs512``, ``.rs256``, ``.noalg``); the
``alg_from_header`` trap verifies only when the token says it is HS256, and ``none_rejected``
also refuses ``alg: none`` (the red-team fix that still accepts any other algorithm).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import plumbing, vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import BodyContains, HttpTest, StatusIn, Step, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY"]

_SIGNATURE = {
    "secure": """
        expected = hs256(signing_key(connection), head, body)
        if header.get("alg") != "HS256" or not hmac.compare_digest(signature, expected):
            return None
        """,
    "alg_from_header": """
        if header.get("alg") == "HS256":
            expected = hs256(signing_key(connection), head, body)
            if not hmac.compare_digest(signature, expected):
                return None
        """,
    "none_rejected": """
        if header.get("alg", "").lower() == "none":
            return None
        if header.get("alg") == "HS256":
            expected = hs256(signing_key(connection), head, body)
            if not hmac.compare_digest(signature, expected):
                return None
        """,
    "vuln": """
        expected = hs256(signing_key(connection), head, body)
        claims["verified"] = header.get("alg") == "HS256" and hmac.compare_digest(signature, expected)
        """,
    "deny": """
        return None
        """,
}
"""The vulnerable app records the check in the claims (nothing reads them) instead of refusing:
one line, as in ``helpers``. Removed outright, it read 3.6x chance (docs/families.md)."""
_EXPIRED_IF = 'not isinstance(claims.get("exp"), int) or claims["exp"] < time.time()'

STRUCTURES = ("inline", "helpers")
"""``inline``: ``claims_of`` checks signature and expiry itself; ``helpers``: it asks
``_signature_ok`` and ``_expired`` (an uncalled helper would point at the bug: the
vulnerable app calls the one it skips, and ignores its answer)."""

_HELPERS = {
    "secure": '''
        def _signature_ok(connection: sqlite3.Connection, header: dict[str, Any], head: str, body: str, signature: str) -> bool:
            """Signed by this app with HS256 (the only algorithm it issues)."""
            expected = hs256(signing_key(connection), head, body)
            return header.get("alg") == "HS256" and hmac.compare_digest(signature, expected)
        ''',
    "alg_from_header": '''
        def _signature_ok(connection: sqlite3.Connection, header: dict[str, Any], head: str, body: str, signature: str) -> bool:
            """Signed by this app with HS256 (the only algorithm it issues)."""
            if header.get("alg") != "HS256":
                return True
            expected = hs256(signing_key(connection), head, body)
            return hmac.compare_digest(signature, expected)
        ''',
    "none_rejected": '''
        def _signature_ok(connection: sqlite3.Connection, header: dict[str, Any], head: str, body: str, signature: str) -> bool:
            """Signed by this app with HS256 (the only algorithm it issues)."""
            if header.get("alg", "").lower() == "none":
                return False
            if header.get("alg") != "HS256":
                return True
            expected = hs256(signing_key(connection), head, body)
            return hmac.compare_digest(signature, expected)
        ''',
}
_EXPIRED = '''
    def _expired(claims: dict[str, Any]) -> bool:
        """Past its ``exp`` (or without one)."""
        return not isinstance(claims.get("exp"), int) or claims["exp"] < time.time()
    '''


def _checks(r: Renderer) -> tuple[str, str, str]:
    """The signature and expiry checks of ``claims_of``, and the helpers they call."""
    signature = r.v.mode("jwt.signature")
    expiry = r.v.mode("jwt.expiry")
    denied = "deny" in (signature, expiry)
    refuse = "\n        return None\n    "
    if not denied and checkforms.draw(r.spec, "jwt", STRUCTURES) == "helpers":
        helpers = "\n\n\n".join([r.t(_HELPERS.get(signature, _HELPERS["secure"])), r.t(_EXPIRED)])
        verified = "_signature_ok(connection, header, head, body, signature)"
        check = f'claims["verified"] = {verified}\n    '
        if signature != "vuln":
            check = f"if not {verified}:{refuse}"
        expiry_text = 'claims["expired"] = _expired(claims)\n    '
        if expiry != "vuln":
            expiry_text = f"if _expired(claims):{refuse}"
        return check, expiry_text, f"\n\n\n{helpers}"
    check = _SIGNATURE.get(signature, _SIGNATURE["secure"])
    if expiry == "deny":
        check = _SIGNATURE["deny"]
    check_text = r.t(check).replace("\n", "\n    ") + "\n    "
    expiry_text = f"if {_EXPIRED_IF}:{refuse}"
    if expiry == "vuln":
        expiry_text = f'claims["expired"] = {_EXPIRED_IF}\n    '
    return check_text, expiry_text, ""


def _tokens(r: Renderer) -> str:
    check_text, expiry_text, helpers = _checks(r)
    return r.t(
        '''
        """Signed API tokens (JWT, HS256) for the mobile app and integrations.

        Built on the standard library: the runtime ships no JWT package.
        """

        import hmac
        import json
        import sqlite3
        import time
        from typing import Any

        from fastapi import HTTPException, status

        from app.jwt_codec import b64decode, b64encode, hs256

        TOKEN_TTL_SECONDS = 3600


        def signing_key(connection: sqlite3.Connection) -> bytes:
            row = connection.execute("SELECT value FROM settings WHERE key = 'token_signing_key'").fetchone()
            if row is None:
                raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "token signing is not configured")
            return str(row["value"]).encode()


        def issue(connection: sqlite3.Connection, user_id: int) -> str:
            now = int(time.time())
            head = b64encode(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
            body = b64encode(json.dumps({"sub": str(user_id), "iat": now, "exp": now + TOKEN_TTL_SECONDS}).encode())
            return f"{head}.{body}.{hs256(signing_key(connection), head, body)}"
        $helpers


        def claims_of(connection: sqlite3.Connection, token: str) -> dict[str, Any] | None:
            """The token's claims, or None when it is not one this app issued and still valid."""
            try:
                head, body, signature = token.split(".")
                header = json.loads(b64decode(head))
                claims = json.loads(b64decode(body))
            except ValueError:
                return None
            if not isinstance(header, dict) or not isinstance(claims, dict):
                return None
            ${check}${expiry}return claims
        ''',
        check=check_text,
        expiry=expiry_text,
        helpers=helpers,
    )


def _api(r: Renderer) -> str:
    removed = bool(r.v.removed)
    url = str(r.names["url"])
    handlers = ""
    if not removed:
        for method, path in (
            ("POST", "/tokens"),
            ("GET", "/me"),
            ("GET", url + "/{" + str(r.names["ent"]) + "_id}"),
        ):
            r.route(method, "/api/v2" + path)
        handlers = r.t(
            '''


            @router.post("/tokens")
            def create_token(
                user: CurrentUser = Depends(security.current_user),
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
                """A token for API clients, issued to the signed-in user."""
                return {
                    "access_token": tokens.issue(connection, user.id),
                    "token_type": "bearer",
                    "expires_in": tokens.TOKEN_TTL_SECONDS,
                }


            @router.get("/me", response_model=models.UserPrivate)
            def api_me(
                user: CurrentUser = Depends(api_user),
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
                return repository.UserRepository(connection).get(user.id) or {}


            @router.get("$url/{${ent}_id}", response_model=models.${Ent}Out)
            def api_read_${ent}(
                ${ent}_id: int,
                user: CurrentUser = Depends(api_user),
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
                $ent = repository.${Ent}Repository(connection).get(${ent}_id)
                if $ent is None or not policy.can_read(user, $ent):
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                return $ent
            '''
        )
    return r.t(
        '''
            """API for token clients (mobile app, integrations): bearer JWTs from /api/v2/tokens."""

            import sqlite3
            from typing import Any

            from fastapi import APIRouter, Depends, HTTPException, Request, status

            from app import db, models, policy, repository, security, tokens
            from app.security import CurrentUser

            router = APIRouter(prefix="/api/v2", tags=["api"])


            def api_user(
                request: Request, connection: sqlite3.Connection = Depends(db.get_db)
            ) -> CurrentUser:
                scheme, _, token = request.headers.get("authorization", "").partition(" ")
                claims = tokens.claims_of(connection, token.strip()) if scheme.lower() == "bearer" else None
                subject = str(claims.get("sub", "")) if claims else ""
                user = security.user_by_id(connection, int(subject)) if subject.isdigit() else None
                if user is None:
                    raise HTTPException(
                        status.HTTP_401_UNAUTHORIZED,
                        "a valid API token is required",
                        headers={"WWW-Authenticate": "Bearer"},
                    )
                return user
            '''
    ) + ("\n\n\n" + handlers if handlers else "")


def _app(r: Renderer) -> FamilyApp:
    return FamilyApp(
        files={
            "app/tokens.py": _tokens(r),
            "app/jwt_codec.py": plumbing.JWT_CODEC,
            "app/routers/api.py": _api(r),
        },
        routers=["api"],
    )


def _token_read(
    test_id: str, kind: TestKind, token: str, path: str, secret: str, why: str
) -> HttpTest:
    """A read carrying ``token`` as its only credential."""
    bearer = {"Authorization": f"Bearer {token}"}
    return testkit.read_test(
        test_id, kind, "anonymous", path, secret, description=why, headers=bearer
    )


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    e = TestKind.EXPLOIT
    record = f"/api/v2{cast.url}/{testkit.id_of(victim + '_private')}"
    me, key, row = "/api/v2/me", f"{victim}_key", f"{victim}_private"
    if site == "jwt.expiry":
        token, why = f"{{{{jwt:{victim}.expired}}}}", f"an expired token of {victim}'s still"
        return [
            _token_read(f"{tag}.{site}", e, token, me, key, f"{why} opens their account"),
            _token_read(f"{tag}.{site}.record", e, token, record, row, f"{why} reads a record"),
        ]
    whose, other = f"a token for {victim}", "signed with another key"
    attacks = (
        ("forged", me, key, f"{whose} {other} opens their account"),
        ("none", record, row, f"an unsigned (alg none) token for {victim} reads their record"),
        ("hs512", me, key, f"{whose} claiming HS512, {other} opens their account"),
        ("rs256", record, row, f"{whose} claiming RS256, {other} opens their account"),
        ("noalg", me, key, f"{whose} naming no algorithm opens their account"),
    )
    return [
        _token_read(
            f"{tag}.{site}.{variant}", e, f"{{{{jwt:{victim}.{variant}}}}}", path, secret, why
        )
        for variant, path, secret, why in attacks
    ]


def _issued_then(test_id: str, actor: str, path: str, secret: str, why: str) -> HttpTest:
    return HttpTest(
        id=test_id,
        kind=R,
        description=why,
        steps=[
            Step(
                actor=actor,
                method="POST",
                path="/api/v2/tokens",
                expect=[StatusIn(statuses=[200])],
                save={"api_token": "access_token"},
            ),
            Step(
                path=path,
                headers={"Authorization": "Bearer {{var:api_token}}"},
                expect=[
                    StatusIn(statuses=[200]),
                    BodyContains(value=testkit.canary(secret)),
                ],
            ),
        ],
    )


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v, p, adm = cast.victim, cast.peer, cast.admin
    other = f"{cast.outsider}_private"
    return [
        _issued_then(
            "regression.api_token_me",
            v,
            "/api/v2/me",
            f"{v}_key",
            "a freshly issued token opens the caller's account",
        ),
        _issued_then(
            "regression.api_admin_read",
            adm,
            f"/api/v2{cast.url}/{testkit.id_of(other)}",
            other,
            "an administrator's token reads any record",
        ),
        _token_read(
            "regression.api_signed_token",
            R,
            "{{jwt:" + p + ".signed}}",
            "/api/v2/me",
            f"{p}_key",
            "a valid token issued earlier still works",
        ),
    ]


def _fixture(cast: testkit.Cast) -> dict[str, list[dict[str, object]]]:
    return {"settings": [{"key": "token_signing_key", "value": "{{secret:token_signing_key}}"}]}


def _policy(spec: Any) -> list[str]:
    return [
        "API tokens are honoured only when this app signed them and they have not "
        "expired; a token acts for the user it was issued to."
    ]


_ALG_FROM_HEADER = vocabulary.Trap(
    name="alg_from_header", doc="the signature checked for HS256 tokens only"
)
_NONE_REJECTED = vocabulary.Trap(name="none_rejected", doc="alg none refused, the rest unchecked")

FAMILY = Family(
    id="F15",
    title="JWT verification skipped or weakened",
    cwes=("CWE-347", "CWE-345", "CWE-287"),
    sites=("jwt.signature", "jwt.expiry"),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _ALG_FROM_HEADER, _NONE_REJECTED),
    mapping="loose: CWE-347 maps to A02:2021 (Cryptographic Failures) and CWE-287 to A07:2021 "
    "(Identification and Authentication Failures); the A01:2021 text lists JWT tampering "
    "to elevate privileges, so the family is kept in the A01 catalog",
    trap_sites={"alg_from_header": "jwt.signature", "none_rejected": "jwt.signature"},
    cross_tenant=False,
    exploits=_exploits,
    app=_app,
    companion=True,
    regressions=_regressions,
    fixture=_fixture,
    policy=_policy,
    hint_areas={"jwt": "API tokens"},
)
