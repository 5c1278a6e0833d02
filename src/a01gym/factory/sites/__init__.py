"""The shared skeleton's sites: one object per route (or shared function) and its check.

Every generated app serves the same skeleton (records, reports, users, files, admin, tenant
settings, a debug route), and each place where it makes an access decision is a named *site*
(``record.read``, ``admin.disable``, ...). A :class:`Site` owns what the test generator
needs to know about it whatever the family: how to attack it (its exploits, which
:mod:`~a01gym.factory.exploits` turns into hidden exploit tests and
:mod:`~a01gym.factory.guards` into guard tests), whether an attack from the other tenant
means anything, and whether it is a route the ``delete_route`` trap can remove. A family
breaks some of these sites (``Family.sites``) and may add attacks of its own at them
(``Family.extra_exploits``); sites that only one family's app has (redirects, CORS, share
links, ...) live with that family. The attacks are grouped by area: :mod:`.records` (the
record routes and their reports) and :mod:`.accounts` (users, administration, files,
settings, the debug route).
"""

from __future__ import annotations

from a01gym.factory.sites import accounts, records
from a01gym.factory.sites.attack import Attack, Exploits, Site

__all__ = ["SITES", "Attack", "Exploits", "Site", "site"]

SITES: dict[str, Site] = {s.id: s for s in (*records.SITES, *accounts.SITES)}
"""Every shared site by id, in the order the guard tests visit them."""


def site(site_id: str) -> Site:
    """The shared site called ``site_id``.

    Raises:
        ValueError: for a site the shared skeleton does not have (the message names it).
    """
    try:
        return SITES[site_id]
    except KeyError:
        raise ValueError(f"no exploit for site {site_id!r}") from None
