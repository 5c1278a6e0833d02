# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""Modules a companion family's app adds that no variant changes: the same text in every app
serving that family, whatever its bug (F18's :func:`browser` with or without the e-mail form
and the form-check decorator, as the app's form routes need them).

Why they are modules of their own: the ``nearest_diff`` probe (``factory/giveaways.py``)
compares an app with the most similar other app, chosen by how many files the two share word
for word. A family's broken router or check matches no other app's, so the app it was compared
with was chosen by the rest of the app and lacked the family's area about as often as any app
does (a third of F18's scenarios, seeds 31-34); there the family's files were new and the
probe named one of them. A file that every app serving the area shares makes those apps the
nearest. Over seeds 31-34 (docs/families.md, "A companion's shared module") F18 went from 5.39x
chance to 1.36x, F15 2.95x to 1.19x, F19 2.32x to 0.18x, F21 2.82x to 0.70x.
"""

from __future__ import annotations

__all__ = ["JWT_CODEC", "LISTINGS", "MONITOR_AGENT", "browser"]

JWT_CODEC = '''"""Base64url segments and HS256 signatures of API tokens (the runtime ships no JWT package)."""

import base64
import hashlib
import hmac


def b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hs256(key: bytes, head: str, body: str) -> str:
    return b64encode(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
'''
"""F15's ``app/jwt_codec.py``: the token encoding that ``app/tokens.py`` issues and checks with."""

_EMAIL_CHANGE = """

class EmailChange(BaseModel):
    email: str = Field(min_length=3, max_length=200)
"""


_FORM_CHECK = '''

def form_check(check: Callable[[Request], None]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Run ``check`` on the request before a form handler (which takes ``request``)."""

    def decorate(handler: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(handler)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check(kwargs["request"])
            return handler(*args, **kwargs)

        return wrapper

    return decorate

'''


def browser(email: bool, form_check: bool) -> str:
    """F18's ``app/browser.py``: the session-cookie sign-in of the browser UI's form routes, the
    e-mail form's body where the app serves that form, and the decorator that runs a form
    route's check where the app's form routes take it that way."""
    pydantic = "from pydantic import BaseModel, Field\n" if email else ""
    functools, callable_, any_ = (
        ("import functools\n", "from collections.abc import Callable\n", "from typing import Any\n")
        if form_check
        else ("", "", "")
    )
    shared = (
        "the session-cookie sign-in, the form bodies and the form check"
        if form_check
        else "the session-cookie sign-in and the form bodies"
    )
    return f'''"""What the browser UI's form routes share: {shared}."""

{functools}import sqlite3
{callable_}{any_}
from fastapi import Depends, HTTPException, Request, status
{pydantic}
from app import db, security
from app.security import CurrentUser
{_EMAIL_CHANGE if email else ""}{_FORM_CHECK if form_check else ""}

def cookie_user(request: Request, connection: sqlite3.Connection = Depends(db.get_db)) -> CurrentUser:
    token = request.cookies.get("session", "")
    user = security.user_for_token(connection, token) if token else None
    if user is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "sign in first")
    return user
'''


MONITOR_AGENT = '''"""What the status page tells the monitoring agent about the worker."""

NOT_REPORTED = ("ops_token",)


def worker_report(settings: dict[str, str]) -> dict[str, str]:
    """The worker's settings as the status page shows them: all but the agent's own token."""
    return {key: value for key, value in settings.items() if key not in NOT_REPORTED}
'''
"""F21's ``app/monitor_agent.py``: the status page's report of the worker's settings."""

LISTINGS = '''
"""The $ents a user owns, as the feed and the activity pages list them."""

import sqlite3
from typing import Any

from app import models


def owned_by(connection: sqlite3.Connection, owner_id: int) -> list[dict[str, Any]]:
    """``owner_id``'s $ents, oldest first."""
    rows = connection.execute("SELECT * FROM $ents WHERE owner_id = ? ORDER BY id", [owner_id])
    return [models.${Ent}Out.model_validate(dict(row)).model_dump() for row in rows.fetchall()]
'''
"""F19's ``app/listings.py`` (a template: the domain's records): the query both pages list with."""
