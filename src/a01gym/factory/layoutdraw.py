"""Which layout each draft gets: module names, merges and the mixes of spellings, drawn per seed.

A stream of its own (:func:`draw`): the rest of a draft is the same whatever layout it draws,
and each draw added after the rest keeps the draws before it, so a new knob leaves every
earlier layout as it was and a build before and after it compares like with like.
:mod:`a01gym.factory.layout` rewrites the rendered app to the layout drawn here.
"""

from __future__ import annotations

import hashlib
import random
import typing

from a01gym.factory.layoutspec import AREA_NAMES, Layout

__all__ = [
    "ACCOUNT_ACTIVITY_SHARE",
    "LAYOUT_SHARE",
    "OWNER_IN_TENANT_SHARE",
    "SESSIONS_ROUTER_SHARE",
    "SPELLING_SHARES",
    "draw",
]

LAYOUT_SHARE = 0.8
"""Share of template drafts whose module names are drawn; the rest keep the skeleton's own,
which stays the most common single set of names (the others are each rarer)."""

SPELLING_SHARES = (0.25, 0.5, 0.75)
"""The shares of functions taking the second spelling that every draft picks from, for each
mix (callers by alias, :mod:`a01gym.factory.aliases`; refusals by number,
:mod:`a01gym.factory.statuses`), the skeleton's names too: with one spelling everywhere, the
function lacking it is the bug (with one spelling of the caller under the skeleton's names,
3.5 of F04's 9.8 expected ``sibling_asymmetry`` hits on seeds 28-31 came from 9 of 60)."""

OWNER_IN_TENANT_SHARE = 0.75
"""Share of drafts whose policy pins every owner check to the caller's tenant
(``Layout.owner_in_tenant``), so a predicate pruned with the bug does not leave ``can_modify``
the one without ``tenant_id``: F02 2.41x chance -> 2.10x at 0.5, 1.85x at 0.75, over seeds
28-35 (``tools/giveaway_ties.py``; docs/families.md). At 1.0 every app spells it alike again."""

ACCOUNT_ACTIVITY_SHARE = 0.5
"""Share of drafts whose own-account router also serves the caller's recent actions
(``Layout.account_activity``): variety in a module no bug is fixed in. When a flag instead
moved the own account in or out of the users router (where F09 is fixed), and the sessions in
or out of the sign-in router (F11), ``nearest_diff`` found F09 at 3.3x chance and F11 at 3.7x
over seeds 31-34; with both routers of one shape and no variety in their place, F09 0.0x and
F11 0.7x, but F12, F15, F20 and F21 above 2x (2.3x-3.1x): apps more alike give a one-line
bug away. With this variety F20 1.0x and F21 1.6x (docs/families.md)."""

SESSIONS_ROUTER_SHARE = 0.5
"""Share of drafts that serve the caller's sessions from a router of their own
(``Layout.sessions_router``); the rest serve them beside the caller's own account, from the
own-account router every app has. Either way the sign-in router keeps its two redirects, too
few handlers for one to stand out among its siblings: with its five handlers, where one of the
three session handlers took its caller by alias and the rest by ``Depends``, that spelling
made the sign-in router the odd module, and F11 is fixed there: ``sibling_asymmetry`` found
F11's file at 2.06x chance over 16 builds (``tools/giveaway_ties.py --seeds 28-43``), 0.88x
with this router. Nor does the flag change the shape of a module a bug is fixed in: when it
added or took the session block from the sign-in router, ``nearest_diff`` named that router
(where F11 is fixed) in 12% of the apps that had one (seeds 31-32; docs/families.md)."""

_DRAWN_LAST = ("me", "devices")
"""Router spellings drawn after the rest (the sessions router's with its flag): a draw added
after the rest keeps the draws before it."""


def draw(seed: int) -> Layout:
    """The layout of the spec drafted from ``seed``."""
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}\x00layout".encode()).digest()[:8]))
    if rng.random() >= LAYOUT_SHARE:
        # the skeleton's names; its handlers mix the spellings like any other app's
        return Layout(**_mixes(rng), sessions_router=rng.random() < SESSIONS_ROUTER_SHARE)

    def spelling(field: str) -> str:
        return rng.choice(typing.get_args(Layout.model_fields[field].annotation))

    names = {field: spelling(field) for field in ("routers", "security", "policy", "repository")}
    # the retired policy merge's draw, kept so that every later draw of a seed stays as it was:
    # merged, the security module differed from its nearest app's by the whole policy, and
    # nearest_diff found F05 there at 2.71x chance and F02 at 2.37x (seeds 31-40;
    # docs/families.md)
    rng.random()
    storage_in_repository = rng.random() < 0.4
    areas = {
        old: rng.choice(spellings)
        for old, spellings in AREA_NAMES.items()
        if old not in _DRAWN_LAST
    }
    names["tokens"] = spelling("tokens")
    mixes = _mixes(rng)
    areas["me"] = rng.choice(AREA_NAMES["me"])
    sessions_router = rng.random() < SESSIONS_ROUTER_SHARE
    if sessions_router:
        areas["devices"] = rng.choice(AREA_NAMES["devices"])
    return Layout(
        **names,
        **mixes,
        sessions_router=sessions_router,
        storage_in_repository=storage_in_repository,
        areas={old: new for old, new in areas.items() if new != old},
    )


def _mixes(rng: random.Random) -> dict[str, typing.Any]:
    """What every layout draws, the skeleton's names too, after its names (in the order they
    were added, for the same reason)."""
    return {
        "dependency_aliases": rng.choice(SPELLING_SHARES),
        "status_numbers": rng.choice(SPELLING_SHARES),
        "owner_in_tenant": rng.random() < OWNER_IN_TENANT_SHARE,
        "account_activity": rng.random() < ACCOUNT_ACTIVITY_SHARE,
    }
