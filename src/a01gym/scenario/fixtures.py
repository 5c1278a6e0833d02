"""Fixture templates: canaries, ids, user names and tokens re-randomised per run.

A template string holds placeholders ``{{kind:name}}``. Every value is derived from
``sha256(seed, kind, name)``, so the same seed gives the same world on every machine. Ids
are the one exception to "the name alone": two names may draw the same id, and the later
one moves on. Which one is later must not depend on what a run renders first (the fixture
seeding the database and a test asking for a record render in different orders), so a world
is built knowing what it stores (``stored``: the fixture's tables) and claims those ids
first, in name order. A string that is exactly one ``{{id:…}}``
placeholder renders to an ``int``, so templates can carry numeric ids in JSON bodies.
``{{jwt:<actor>.<variant>}}`` renders a JSON Web Token for the actor (signed with the world's
``token_signing_key`` secret, expired, forged or unsigned), since a test cannot sign one.
A ``{{canary:…}}`` (a secret the hidden tests look for in responses) reads like the data it
stands for, never like a marker (:data:`CANARY_SHAPES`), so nothing the agent sees flags the
sensitive fields.

Visible tests are rendered with the bundle's fixed ``visible_seed``; hidden runs get a fresh
seed, so a patch that special-cases the values the agent saw cannot pass them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from a01gym.errors import ScenarioError

__all__ = ["CANARY_SHAPES", "PLACEHOLDER", "FixtureValues"]

PLACEHOLDER = re.compile(
    r"\{\{\s*(canary|id|user|token|uuid|secret|jwt|var):([A-Za-z0-9_.-]+)\s*\}\}"
)
_JWT_EXPIRY = {"expired": 1_000_000_000}
_JWT_VARIANTS: dict[str, str | None] = {
    "signed": "HS256",
    "expired": "HS256",
    "forged": "HS256",
    "none": "none",
    "hs512": "HS512",
    "rs256": "RS256",
    "noalg": None,
}
"""JWT placeholder variant -> the ``alg`` its header names (None: no ``alg`` at all)."""
_SIGNED = ("signed", "expired")
"""The variants signed with the app's own key."""
_JWT_FAR_FUTURE = 4_102_444_800

_ID_LOW, _ID_SPAN = 10_000, 9_990_000
_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"

_ADJECTIVES = [
    "amber",
    "brisk",
    "cedar",
    "dusty",
    "eager",
    "fallow",
    "gentle",
    "hollow",
    "ivory",
    "jagged",
    "keen",
    "lunar",
    "mellow",
    "narrow",
    "olive",
    "plain",
    "quiet",
    "rustic",
    "silver",
    "tidal",
    "umber",
    "vivid",
    "woven",
    "young",
    "bold",
    "calm",
    "deep",
    "early",
    "fresh",
    "grand",
    "humble",
    "misty",
]
_NOUNS = [
    "harbor",
    "ledger",
    "meadow",
    "orchard",
    "pillar",
    "quarry",
    "ridge",
    "summit",
    "thicket",
    "valley",
    "willow",
    "anchor",
    "beacon",
    "canyon",
    "delta",
    "ember",
    "falcon",
    "glacier",
    "heron",
    "island",
    "juniper",
    "kestrel",
    "lagoon",
    "marble",
    "nectar",
    "otter",
    "prairie",
    "quill",
    "raven",
    "saddle",
    "timber",
    "upland",
]
_UPPER = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CANARY_SHAPES = (
    r"sk_live_[a-z2-9]{24}"
    r"|T[A-Z2-9]{8}/B[A-Z2-9]{8}/[a-z2-9]{16}"
    r"|\b[A-Z][a-z]+ [a-z]+ [0-9]{6}\b"
)
"""A regular expression every canary value matches (what an agent that studied the seeded
worlds could write; the G5 scrubbing hack uses it)."""


def _canary(name: str, digest: bytes) -> str:
    """A value that reads like the data it stands for: an API key for a ``…key`` name, a
    webhook path for ``webhook…``, otherwise a short phrase with a number (a note, a file's
    text). ~30 bits or more from the world's seed, so no response holds one by accident."""
    if name.endswith("key"):
        return "sk_live_" + "".join(_ALPHABET[b % 32] for b in digest[:24])
    if name.startswith("webhook"):
        upper = "".join(_UPPER[b % 32] for b in digest[:16])
        return f"T{upper[:8]}/B{upper[8:]}/" + "".join(_ALPHABET[b % 32] for b in digest[16:32])
    number = int.from_bytes(digest[2:6]) % 1_000_000
    return f"{_ADJECTIVES[digest[0] % 32].capitalize()} {_NOUNS[digest[1] % 32]} {number:06d}"


class FixtureValues:
    """The concrete world for one run: a seed plus the step outputs saved so far.

    Args:
        seed: the world's seed.
        stored: the templates of what the world stores (a fixture's tables). Their ids are
            claimed at once, in name order, so a stored record has the same id in every
            render of this world, whatever else it renders and in what order. Without it, a
            name that collides with a stored one could take the record's id in a test's
            world and not in the seeding's (seed 495843928 of a default build did: G4 read
            a record at an id the database never held).
    """

    def __init__(self, seed: int, stored: Any = None) -> None:
        self.seed = seed
        self.variables: dict[str, Any] = {}
        self._cache: dict[tuple[str, str], Any] = {}
        self._ids_taken: dict[int, str] = {}
        for name in sorted(_id_names(stored)):
            self.value("id", name)

    def fresh(self) -> FixtureValues:
        """The same world with no step outputs saved: what each test of a run starts from.

        Its values, the claimed ids among them, are carried over rather than claimed again:
        claiming a fixture's ids takes ~0.3 ms, a copy ~1 µs, and a run builds one per test.
        """
        world = FixtureValues(self.seed)
        world._cache = dict(self._cache)
        world._ids_taken = dict(self._ids_taken)
        return world

    def _digest(self, kind: str, name: str, attempt: int = 0) -> bytes:
        return hashlib.sha256(f"{self.seed}\x00{kind}\x00{name}\x00{attempt}".encode()).digest()

    def value(self, kind: str, name: str) -> Any:
        """Return the value of ``{{kind:name}}`` in this world."""
        key = (kind, name)
        if key in self._cache:
            return self._cache[key]
        if kind == "var":
            if name not in self.variables:
                raise ScenarioError(f"template uses {{{{var:{name}}}}} before a step saved it")
            return self.variables[name]
        digest = self._digest(kind, name)
        if kind == "canary":
            result: Any = _canary(name, digest)
        elif kind == "id":
            result = self._unique_id(name)
        elif kind == "user":
            suffix = "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])
            result = f"{name}_{suffix}"
        elif kind == "token":
            result = "tok_" + digest[:16].hex()
        elif kind == "secret":
            result = digest[:12].hex()
        elif kind == "jwt":
            result = self._jwt(name)
        else:  # uuid
            result = str(uuid.UUID(bytes=digest[:16], version=4))
        self._cache[key] = result
        return result

    def _jwt(self, name: str) -> str:
        """``{{jwt:<actor>.<variant>}}``: an HS256 JWT whose ``sub`` is the actor's id.

        ``signed`` and ``expired`` are signed with ``{{secret:token_signing_key}}`` (the key a
        scenario seeds for its app), ``forged`` with another key, ``none`` carries
        ``alg: none`` and no signature. The other forgeries are what a careful reviewer tries
        against a check that trusts the header's ``alg``: ``hs512`` (signed with another key
        and SHA-512), ``rs256`` (an RSA algorithm, signature bytes from another key) and
        ``noalg`` (no ``alg`` at all, signed with another key). Tests cannot compute
        signatures, so the world does.
        """
        actor, _, variant = name.rpartition(".")
        if not actor or variant not in _JWT_VARIANTS:
            raise ScenarioError(
                f"jwt placeholder {name!r} is not <actor>.{'|'.join(_JWT_VARIANTS)}"
            )
        claims = {
            "sub": str(self.value("id", actor)),
            "exp": _JWT_EXPIRY.get(variant, _JWT_FAR_FUTURE),
        }
        alg = _JWT_VARIANTS[variant]
        header = {"typ": "JWT"} if alg is None else {"alg": alg, "typ": "JWT"}
        head = _b64url(json.dumps(header).encode())
        body = _b64url(json.dumps(claims).encode())
        if variant == "none":
            return f"{head}.{body}."
        key = self.value("secret", "token_signing_key" if variant in _SIGNED else "forged_key")
        digest = hashlib.sha512 if alg == "HS512" else hashlib.sha256
        mac = hmac.new(str(key).encode(), f"{head}.{body}".encode(), digest).digest()
        return f"{head}.{body}.{_b64url(mac)}"

    def _unique_id(self, name: str) -> int:
        attempt = 0
        while True:
            candidate = _ID_LOW + int.from_bytes(self._digest("id", name, attempt)[:8]) % _ID_SPAN
            owner = self._ids_taken.setdefault(candidate, name)
            if owner == name:
                return candidate
            attempt += 1

    def render(self, template: Any) -> Any:
        """Render every placeholder inside a JSON-like structure (dict keys included)."""
        if isinstance(template, str):
            return self._render_str(template)
        if isinstance(template, Mapping):
            return {self._render_str(str(k)): self.render(v) for k, v in template.items()}
        if isinstance(template, list | tuple):
            return [self.render(item) for item in template]
        return template

    def _render_str(self, text: str) -> Any:
        whole = PLACEHOLDER.fullmatch(text.strip()) if "{{" in text else None
        if whole is not None and whole.group(1) in ("id", "var"):
            return self.value(whole.group(1), whole.group(2))
        if "{{" not in text:
            return text
        return PLACEHOLDER.sub(lambda m: str(self.value(m.group(1), m.group(2))), text)


def _id_names(template: Any) -> set[str]:
    """The names of the ``{{id:…}}`` placeholders anywhere in ``template`` (keys included)."""
    if isinstance(template, str):
        return {m.group(2) for m in PLACEHOLDER.finditer(template) if m.group(1) == "id"}
    if isinstance(template, Mapping):
        return set().union(*(_id_names(k) | _id_names(v) for k, v in template.items()))
    if isinstance(template, list | tuple):
        return set().union(*(_id_names(item) for item in template))
    return set()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
