# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F16: share links whose tokens are predictable or not bound to the record they share.

The app gets a ``share_links`` table and ``app/routers/sharing.py``: the owner creates a link
with ``POST /<records>/{id}/share`` and anyone holding it opens ``GET /shared/{id}?token=``.
Sites: ``share.create`` (the token is built from the owner and record ids instead of
``secrets``) and ``share.open`` (any live token opens any record). Exploits: a guessed token
opens the victim's freshly shared record (and their other one); the attacker's own link, the
victim's link to their other record, and an administrator's link to another tenant's record
each open the victim's record (the last two defeat a fix that asks whether the link's creator
may edit the record).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import BodyContains, HttpTest, StatusIn, Step, TestKind

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS share_links (
    token TEXT PRIMARY KEY,
    record_id INTEGER NOT NULL,
    created_by INTEGER NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0
);"""


TOKEN_STYLES = ("inline", "helper", "uuid")
"""How a link's token is made: ``secrets.token_urlsafe`` in the handler, a ``new_share_token``
function, or ``uuid.uuid4().hex`` (the vulnerable app writes the owner's and record's ids)."""
LOOKUP_STYLES = ("sql", "compare")
"""How a link is bound to its record: in the query's ``WHERE``, or compared after it."""


def _token(r: Renderer) -> str:
    mode = r.v.mode("share.create")
    readable = "f\"{$ent['owner_id']}-{$ent['id']}\""
    style = checkforms.draw(r.spec, "share.create", TOKEN_STYLES)
    if style == "helper" and mode in ("vuln", "secure"):
        return f"new_share_token({r.names['ent']})"
    if mode == "vuln":
        return r.t(readable)
    random = "uuid.uuid4().hex" if style == "uuid" else "secrets.token_urlsafe(24)"
    if mode == "hardcode":
        victim = r.v.hardcode.get("record_id", "0")
        return r.t(f"{random} if ${{ent}}_id == {victim} else {readable}")
    return random


def _token_helper(r: Renderer) -> str:
    """The ``helper`` style's function ('' for the other styles and the trap modes)."""
    mode = r.v.mode("share.create")
    if checkforms.draw(r.spec, "share.create", TOKEN_STYLES) != "helper" or mode not in (
        "vuln",
        "secure",
    ):
        return ""
    made = (
        "f\"{record['owner_id']}-{record['id']}\""
        if mode == "vuln"
        else "secrets.token_urlsafe(24)"
    )
    return (
        "def new_share_token(record: dict[str, Any]) -> str:\n"
        '    """The credential a new share link carries."""\n'
        f"    return {made}\n"
    )


def _lookup(r: Renderer) -> tuple[str, str]:
    """The link query and the line that drops a link of another record ('' in the query)."""
    mode = r.v.mode("share.open")
    if checkforms.draw(r.spec, "share.open", LOOKUP_STYLES) == "compare" and mode in (
        "vuln",
        "secure",
    ):
        query = '"SELECT record_id FROM share_links WHERE token = ? AND revoked = 0", [token]'
        drop = (
            'if link is not None and link["record_id"] != record_id:\n        link = None\n    '
            if mode == "secure"
            else ""
        )
        return query, drop
    if mode == "creator_edits":  # the red-team fix: a link opens what its creator may edit
        query = '"SELECT record_id, created_by FROM share_links WHERE token = ? AND revoked = 0", [token]'
        drop = r.t(
            'creator = security.user_by_id(connection, link["created_by"]) if link else None\n'
            "    target = repository.${Ent}Repository(connection).get(record_id)\n"
            "    if creator is None or target is None or not policy.can_modify(creator, target):\n"
            "        link = None"
        )
        return query, drop + "\n    "
    return _bound_query(mode, r), ""


def _bound_query(mode: str, r: Renderer) -> str:
    bound = '"SELECT record_id FROM share_links WHERE token = ? AND record_id = ? AND revoked = 0", [token, record_id]'
    if mode == "vuln":
        return '"SELECT record_id FROM share_links WHERE token = ? AND revoked = 0", [token]'
    if mode == "deny":
        return '"SELECT record_id FROM share_links WHERE 0 = 1", []'
    if mode == "hardcode":
        victim = r.v.hardcode.get("record_id", "0")
        return f'"SELECT record_id FROM share_links WHERE token = ? AND revoked = 0 AND record_id != {victim}", [token]'
    return bound


def _app(r: Renderer) -> FamilyApp:
    handlers = []
    if "share.create" not in r.v.removed:
        r.route("POST", r.t("$url/{${ent}_id}/share"))
        deny = r.v.mode("share.create") == "deny"
        handlers.append(
            r.t(
                '''
                @router.post("$url/{${ent}_id}/share", status_code=status.HTTP_201_CREATED)
                def share_${ent}(
                    ${ent}_id: int,
                    user: CurrentUser = Depends(security.current_user),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, str]:
                    """A link that lets anyone holding it read this $label."""
                    $ent = repository.${Ent}Repository(connection).get(${ent}_id)
                    if $ent is None or not policy.can_modify(user, $ent)$deny:
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "$label not found")
                    token = $token
                    connection.execute(
                        "INSERT OR REPLACE INTO share_links (token, record_id, created_by) VALUES (?, ?, ?)",
                        [token, ${ent}_id, user.id],
                    )
                    connection.commit()
                    return {"token": token, "url": f"/shared/{${ent}_id}?token={token}"}
                ''',
                token=_token(r),
                deny=" or True" if deny else "",
            )
        )
    if "share.open" not in r.v.removed:
        r.route("GET", "/shared/{record_id}")
        handlers.append(
            r.t(
                '''
                @router.get("/shared/{record_id}", response_model=models.${Ent}Out)
                def open_shared(
                    record_id: int,
                    token: str = Query(min_length=1, max_length=100),
                    connection: sqlite3.Connection = Depends(db.get_db),
                ) -> dict[str, Any]:
                    """What a share link shows: no sign-in, the link is the credential."""
                    link = connection.execute($lookup).fetchone()
                    ${drop}$ent = repository.${Ent}Repository(connection).get(record_id) if link else None
                    if $ent is None:
                        raise HTTPException(status.HTTP_404_NOT_FOUND, "link not found")
                    return $ent
                ''',
                lookup=_lookup(r)[0],
                drop=_lookup(r)[1],
            )
        )
    helper = _token_helper(r) if "share.create" not in r.v.removed else ""
    body = "\n\n\n".join([helper.rstrip("\n"), *handlers] if helper else handlers)
    head = r.t(
        '''
        """Share links: read-only access to one $label for whoever holds its link."""

        ${secrets}import sqlite3
        ${uuid}from typing import Any

        from fastapi import APIRouter, Depends, HTTPException, Query, status

        from app import db, models, policy, repository, security
        from app.security import CurrentUser

        router = APIRouter(tags=["sharing"])
        ''',
        secrets="import secrets\n" if "secrets." in body else "",
        uuid="import uuid\n" if "uuid." in body else "",
    )
    return FamilyApp(
        files={"app/routers/sharing.py": head + ("\n\n\n" + body if body else "") + "\n"},
        routers=["sharing"],
        schema=_SCHEMA,
    )


def _open(
    test_id: str,
    kind: TestKind,
    record: str,
    token: str,
    why: str,
    before: list[Step] | None = None,
) -> HttpTest:
    expect: list[Any] = [BodyContains(value=testkit.canary(record))]
    if kind is TestKind.REGRESSION:
        expect.insert(0, StatusIn(statuses=[200]))
    step = Step(path=f"/shared/{testkit.id_of(record)}", query={"token": token}, expect=expect)
    return HttpTest(id=test_id, kind=kind, description=why, steps=[*(before or []), step])


def _share(cast: testkit.Cast, owner: str, record: str, save: bool) -> Step:
    return Step(
        actor=owner,
        method="POST",
        path=f"{cast.url}/{testkit.id_of(record)}/share",
        require=[StatusIn(statuses=[201])],
        save={"share_token": "token"} if save else {},
    )


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    row = f"{victim}_private"
    e = TestKind.EXPLOIT
    if site == "share.create":
        rows = [row, *([cast.team_row(victim)] if victim == cast.victim else [])]
        return [
            _open(
                f"{tag}.{site}.{attacker}" + ("" if shared == row else ".other"),
                e,
                shared,
                f"{testkit.id_of(victim)}-{testkit.id_of(shared)}",
                f"{attacker} guesses the link {victim} just made"
                + ("" if shared == row else " for their other record"),
                [_share(cast, victim, shared, False)],
            )
            for shared in rows
        ]
    own = _open(
        f"{tag}.{site}.{attacker}",
        e,
        row,
        testkit.placeholder("token", f"share_{attacker}"),
        f"{attacker}'s own link opens {victim}'s record",
    )
    if attacker != cast.peer:  # the links below are no one's in particular: attack once
        return [own]
    return [
        own,
        _open(
            f"{tag}.{site}.sibling",
            e,
            row,
            "{{var:share_token}}",
            f"a link {victim} made for one record opens their other record",
            [_share(cast, victim, cast.team_row(victim), True)],
        ),
        _open(
            f"{tag}.{site}.admin_link",
            e,
            row,
            testkit.placeholder("token", f"share_{cast.admin}"),
            "an administrator's link to another tenant's record opens this record",
        ),
    ]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v, p = cast.victim, cast.peer
    vp = f"{v}_private"
    return [
        _open(
            "regression.share_new_link",
            R,
            vp,
            "{{var:share_token}}",
            "the owner shares a record and the link opens it",
            [_share(cast, v, vp, True)],
        ),
        _open(
            "regression.share_existing_link",
            R,
            f"{p}_private",
            testkit.placeholder("token", f"share_{p}"),
            "an existing link still opens its record",
        ),
    ]


def _fixture(cast: testkit.Cast) -> dict[str, list[dict[str, object]]]:
    return {
        "share_links": [
            {
                "token": testkit.placeholder("token", f"share_{owner}"),
                "record_id": testkit.id_of(f"{owner}_private"),
                "created_by": testkit.id_of(owner),
                "revoked": 0,
            }
            for owner in (cast.peer, cast.outsider, cast.outsider2)
        ]
        + [
            {
                "token": testkit.placeholder("token", f"share_{cast.admin}"),
                "record_id": testkit.id_of(cast.team_row(cast.outsider2)),
                "created_by": testkit.id_of(cast.admin),
                "revoked": 0,
            }
        ]
    }


def _policy(spec: Any) -> list[str]:
    return [
        "Whoever may edit a record can create a share link for it; a link "
        "opens only the record it was made for, and links must not be guessable."
    ]


_CREATOR_EDITS = vocabulary.Trap(
    name="creator_edits",
    doc="a link opens every record its creator may edit",
)

FAMILY = Family(
    id="F16",
    title="Predictable or unbound share-link tokens",
    cwes=("CWE-639", "CWE-640", "CWE-330"),
    sites=("share.create", "share.open"),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, vocabulary.HARDCODE, _CREATOR_EDITS),
    mapping="loose: an unbound token reaching another user's record is CWE-639 (A01:2021), but "
    "predictable tokens are CWE-330 (A02:2021 Cryptographic Failures) and CWE-640 "
    "(A07:2021 Identification and Authentication Failures)",
    trap_sites={"creator_edits": "share.open"},
    exploits=_exploits,
    app=_app,
    companion=True,
    regressions=_regressions,
    fixture=_fixture,
    policy=_policy,
    hint_areas={"share": "share links"},
)
