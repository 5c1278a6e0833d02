"""What the app renderer's mixins read from the one renderer that combines them.

The app is rendered by :class:`a01gym.factory.appgen._Renderer`, assembled from one mixin per
group of files (:mod:`appcore`, :mod:`apppolicy`, the route mixins). Each mixin reads the
renderer's state and helpers; declaring them once here, for type checkers only, keeps the
mixins from repeating the declaration and adds nothing at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["RenderHost"]


class RenderHost:
    """Base of every renderer mixin: the state and helpers ``_Renderer`` provides."""

    if TYPE_CHECKING:
        spec: Any
        v: Any
        f: Any
        names: dict[str, object]
        distance: str
        indirection: str
        family: Any
        _uses_ops: bool
        extra: Any

        def t(self, template: str, **extra: object) -> str: ...

        def route(self, method: str, path: str) -> None: ...
