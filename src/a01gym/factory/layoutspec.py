"""``Layout``: what an app's shared modules are called and which of them share a file.

Part of :class:`~a01gym.factory.spec.ScenarioSpec` (``spec.layout``), a module of its own
because it is a concept of its own: :mod:`a01gym.factory.layout` draws one per seed and
rewrites the rendered app to it, and the hidden labels record it so reports can compare paths
across apps (``layout.canonical``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["AREA_NAMES", "Layout"]


AREA_NAMES: dict[str, tuple[str, ...]] = {
    "admin": ("admin", "backoffice", "console"),
    "api": ("api", "integrations", "partners"),
    "devices": ("devices", "active_sessions", "session_list"),
    "feed": ("feed", "activity", "timeline"),
    "files": ("files", "uploads", "attachments"),
    "internal": ("internal", "system", "maintenance"),
    "me": ("me", "myself", "self_service"),
    "members": ("members", "roster", "membership"),
    "ops": ("ops", "monitoring", "probes"),
    "public": ("public", "site", "meta"),
    "records": ("records", "items", "entries"),
    "reports": ("reports", "exports", "printouts"),
    "sharing": ("sharing", "links", "shares"),
    "signin": ("signin", "login", "sessions"),
    "tenant": ("tenant", "organization", "workspace"),
    "users": ("users", "people", "directory", "colleagues", "personnel"),
    "web": ("web", "forms", "frontend"),
}
"""Each router module's spellings, the skeleton's first: common names for the same area in real
apps. No spelling is another module's (of the package or of ``app``), so a rename never clashes;
none is a word the policy uses often (``page``, ``team``, ``role``, ``user``, ``account``,
``profile``), which would draw a keyword search to that router whatever holds the bug.
``users`` itself is one: it stays the skeleton's name, and the more other spellings it has the
less often an app keeps it. ``accounts`` and ``profiles`` were spellings too, and the policy's
lines on private account fields, the account holder's own changes, the administration pages
("accounts, roles, audit log") and public profiles named them: ``policy_keywords`` found F09,
fixed in the users router, at 2.52x chance over 16 builds (``tools/giveaway_ties.py --seeds
28-43``), 1.61x with ``colleagues`` and ``personnel`` in their place."""


_RETIRED_FLAGS = ("account_router", "policy_in_security")
"""Layout flags earlier versions drew (docs/families.md): the own account's router, now in
every app, and the policy merged into the security module, retired for giving F05 and F02
away."""


class Layout(BaseModel):
    """What the skeleton's shared modules are called, and which of them share a file
    (:mod:`a01gym.factory.layout` rewrites the rendered app to it). The defaults are the
    skeleton as rendered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    routers: Literal["routers", "routes", "endpoints", "views"] = Field(
        "routers", description="The package holding one router module per area."
    )
    security: Literal["security", "auth", "deps", "identity"] = Field(
        "security", description="Authentication and role checks."
    )
    policy: Literal["policy", "permissions", "access", "rules"] = Field(
        "policy", description="Who may do what to a record."
    )
    repository: Literal["repository", "queries", "store", "crud"] = Field(
        "repository", description="The data access functions."
    )
    tokens: Literal["tokens", "bearer", "signing"] = Field(
        "tokens",
        description="The API token module, where an app that has one issues and reads its "
        "tokens (no spelling but the skeleton's shares a word with the policy's token rule).",
    )
    storage_in_repository: bool = Field(
        False, description="File storage lives in the repository module."
    )
    dependency_aliases: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of route handlers that take their caller by the security module's "
        "Annotated alias (user: security.SignedIn) instead of Depends(security.current_user); "
        "each handler is drawn by name (a01gym.factory.aliases).",
    )
    status_numbers: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of functions that refuse with HTTPException(403, ...) instead of "
        "HTTPException(status.HTTP_403_FORBIDDEN, ...); each function is drawn by name "
        "(a01gym.factory.statuses).",
    )
    owner_in_tenant: bool = Field(
        False,
        description="The policy's owner checks also compare the record's tenant with the "
        "caller's: the same decision (an owner belongs to the tenant of every record they own), "
        "spelled as defence in depth (a01gym.factory.apppolicy).",
    )
    account_activity: bool = Field(
        False,
        description="The caller's own account also serves the caller's recent actions from the "
        "audit log (GET /users/me/activity).",
    )
    sessions_router: bool = Field(
        False,
        description="The caller's sessions (GET /auth/session, GET /auth/sessions, POST "
        "/auth/signout-everywhere) are served from a router module of their own "
        "(app/routers/devices.py) instead of the caller's own-account router (app/routers/me.py); "
        "the sign-in router keeps its redirects either way.",
    )
    areas: dict[str, str] = Field(
        default_factory=dict,
        description="Router modules this app names otherwise than the skeleton: the skeleton's "
        "name -> one of its spellings in AREA_NAMES.",
    )

    @model_validator(mode="before")
    @classmethod
    def _without_retired(cls, data: Any) -> Any:
        """A layout recorded before a flag was retired (a cache's ``labels["layout"]``, which the
        giveaway gate reads for every scenario in the cache) still loads: the retired flags
        named no file of their own, so the paths compare as they did."""
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if key not in _RETIRED_FLAGS}
        return data

    @field_validator("areas")
    @classmethod
    def _known_spellings(cls, areas: dict[str, str]) -> dict[str, str]:
        for old, new in areas.items():
            if new not in AREA_NAMES.get(old, ()) or new == old:
                raise ValueError(
                    f"areas[{old!r}] must be another spelling of a router module, one of "
                    f"{list(AREA_NAMES.get(old, ()))[1:]}; got {new!r}"
                )
        return dict(sorted(areas.items()))

    @property
    def skeleton_names(self) -> bool:
        """Whether every module keeps the skeleton's name and file (the spelling shares are
        not names: they leave every path as it is; the sessions router is rendered, never
        renamed, under the skeleton's names)."""
        spellings = {
            "dependency_aliases": 0.0,
            "status_numbers": 0.0,
            "owner_in_tenant": False,
            "account_activity": False,
            "sessions_router": False,
        }
        return self.model_copy(update=spellings) == Layout()

    def __hash__(self) -> int:  # frozen models hash their fields, and a dict has no hash
        return hash(self.model_dump_json())
