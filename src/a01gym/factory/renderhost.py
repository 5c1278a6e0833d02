"""What the app renderer's parts read from the one renderer that combines them.

The app is rendered by :class:`a01gym.factory.appgen._Renderer`, assembled from one mixin per
group of files (:mod:`appcore`, :mod:`apppolicy`, the route mixins); a family's ``app`` hook
and the data-access style (:mod:`a01gym.factory.styles`) render from it too. Its shared state
is :class:`Renderer`, the type those hooks and styles take; :class:`RenderHost`, the base of
every mixin, declares the same state for type checkers only, so the mixins do not repeat the
declaration, and adds nothing at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from a01gym.factory.appgen import Variant
    from a01gym.factory.families import Family, FamilyApp
    from a01gym.factory.spec import PolicyFeatures, ScenarioSpec

__all__ = ["RenderHost", "Renderer"]


class Renderer(Protocol):
    """The renderer's shared state: the spec, the variant (each site's mode), the family and
    what its hook added, the difficulty knobs, and the two helpers every part uses."""

    spec: ScenarioSpec
    v: Variant
    f: PolicyFeatures
    names: dict[str, object]
    """Template names of the spec's entity and domain (``$ent``, ``$url``, ...)."""
    family: Family
    extra: FamilyApp
    distance: str
    indirection: str

    def t(self, template: str, **extra: object) -> str:
        """``template`` dedented, with ``$names`` (and ``extra``) substituted."""
        ...

    def route(self, method: str, path: str) -> None:
        """Record ``METHOD path`` in the app's route inventory."""
        ...


class RenderHost:
    """Base of every renderer mixin: the state and helpers ``_Renderer`` provides."""

    if TYPE_CHECKING:
        spec: ScenarioSpec
        v: Variant
        f: PolicyFeatures
        names: dict[str, object]
        distance: str
        indirection: str
        family: Family
        _uses_ops: bool
        extra: FamilyApp

        def t(self, template: str, **extra: object) -> str: ...

        def route(self, method: str, path: str) -> None: ...
