"""Data-access styles of a generated app: raw ``sqlite3`` or the SQLAlchemy 2.0 ORM.

A policy trained on one code style learns the style. Each scenario draws its style from its seed
(:func:`draw`), so every family appears in both. A style is one object with one method the
renderer calls once, after the skeleton and the family's modules are rendered:
:meth:`DataStyle.finish` takes the rendered files and returns the app in that style. The raw
``sqlite3`` style returns them as they are (the skeleton is written in it); the ORM style
(:mod:`~a01gym.factory.styles.orm`) writes its own data layer and moves the rest onto sessions.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer
    from a01gym.factory.spec import ScenarioSpec

__all__ = ["STYLES", "DataAccess", "DataStyle", "draw", "restyled", "style"]

DataAccess = Literal["sqlite3", "sqlalchemy"]

ORM_SHARE = 0.5
"""Share of template scenarios drawn in the ORM style."""


class DataStyle(Protocol):
    """How a generated app talks to its database."""

    name: DataAccess

    def finish(self, r: Renderer, files: dict[str, str]) -> dict[str, str]:
        """The app's files in this style, from the renderer ``r`` and its rendered ``files``."""
        ...


class SqliteStyle:
    """Plain SQL over ``sqlite3``: the skeleton's own style, returned unchanged."""

    name: DataAccess = "sqlite3"

    def finish(self, r: Renderer, files: dict[str, str]) -> dict[str, str]:
        """``files`` as rendered."""
        return files


def draw(seed: int) -> DataAccess:
    """The style of the spec drafted from ``seed``.

    A hash of its own, not the author's random stream: the other draws of a seed stay what they
    were, so a spec that draws ``sqlite3`` renders byte for byte as before styles existed.
    """
    digest = hashlib.sha256(f"{seed}\x00data_access".encode()).digest()
    return "sqlalchemy" if int.from_bytes(digest[:8]) / 2**64 < ORM_SHARE else "sqlite3"


def restyled(spec: ScenarioSpec, name: DataAccess) -> ScenarioSpec:
    """``spec`` in the data-access style ``name`` (everything else as drawn)."""
    return spec.model_copy(update={"knobs": spec.knobs.model_copy(update={"data_access": name})})


def style(name: DataAccess) -> DataStyle:
    """The style object called ``name``."""
    return STYLES[name]


def _styles() -> dict[str, DataStyle]:
    from a01gym.factory.styles.orm import OrmStyle

    return {"sqlite3": SqliteStyle(), "sqlalchemy": OrmStyle()}


STYLES: dict[str, DataStyle] = _styles()
