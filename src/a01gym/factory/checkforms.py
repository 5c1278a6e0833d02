"""Where an access check lives and how it is written, drawn per scenario.

One family's check is the same decision in every app (refuse a caller when *condition*), but
real code states it in many ways: an explicit comparison in the handler, a predicate the
handler asks, or a guard function that raises. If every app wrote it the same way, the
reference fix would always be the same patch in the same place, and an agent could learn the
patch instead of the policy (issue 13, "structural diversity"). Each form changes a line of
a different kind (``if …:``, ``return …``, ``… = …``), so the fix's shape differs with it.

The form is drawn from the scenario's seed and the site, so the vulnerable app, the reference
fix and every trap of one scenario use the same form; only the condition differs by mode.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from a01gym.factory.codetext import block, indent

__all__ = ["FORMS", "PLAIN_FORMS", "Guard", "draw"]

FORMS = ("inline", "predicate", "raiser", "dependency")
"""``inline``: ``if cond: raise`` in the handler; ``predicate``: a module-level function
returning the condition, which the handler tests; ``raiser``: a module-level guard that
computes the condition and raises, which the handler calls; ``dependency``: a FastAPI
dependency that returns the caller when the condition does not hold (the handler takes its
user from it, and has no check of its own)."""

PLAIN_FORMS = FORMS[:3]
"""The forms for checks that need more than FastAPI can inject (no ``dependency``)."""


def draw(
    spec: Any, site: str, forms: tuple[str, ...] = FORMS, weights: tuple[int, ...] = ()
) -> str:
    """The form of ``site``'s check in ``spec``'s app (stable for a seed); ``weights``, if
    given, one per form, make some forms likelier than others."""
    rng = random.Random(f"checkform\x00{spec.seed}\x00{site}")
    return rng.choices(forms, weights)[0] if weights else rng.choice(forms)


@dataclasses.dataclass(frozen=True)
class Guard:
    """One refusal check: ``raise HTTPException(status, detail)`` when ``condition`` holds.

    ``name`` names the helper (predicate or raiser), ``params`` its signature and ``args``
    the handler's call; ``purpose`` is the helper's docstring. ``dependency`` is the
    signature of the ``dependency`` form (its ``user`` parameter declares the dependency it
    refines), ``user_type`` what it returns.
    """

    form: str
    name: str
    params: str
    args: str
    status: str
    detail: str
    purpose: str
    dependency: str = ""
    user_type: str = "CurrentUser"

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"unknown check form {self.form!r}; known: {', '.join(FORMS)}")
        if self.form == "dependency" and not self.dependency:
            raise ValueError(f"{self.name}: the dependency form needs the dependency's signature")

    def _raise(self) -> str:
        return f'raise HTTPException(status.{self.status}, "{self.detail}")'

    def helper(self, condition: str) -> str:
        """Module-level code the form needs ('' for ``inline``)."""
        if self.form == "predicate":
            return block(
                '''
                def $name($params) -> bool:
                    """$purpose"""
                    return $condition
                ''',
                name=self.name,
                params=self.params,
                purpose=self.purpose,
                condition=condition,
            )
        if self.form == "raiser":
            return block(
                '''
                def $name($params) -> None:
                    """$purpose"""
                    refused = $condition
                    if refused:
                        $raise_
                ''',
                name=self.name,
                params=self.params,
                purpose=self.purpose,
                condition=condition,
                raise_=self._raise(),
            )
        if self.form == "dependency":
            return block(
                '''
                def $name($params) -> $user_type:
                    """$purpose"""
                    if not ($condition):
                        return user
                    $raise_
                ''',
                name=self.name,
                params=self.dependency,
                user_type=self.user_type,
                purpose=self.purpose,
                condition=condition,
                raise_=self._raise(),
            )
        return ""

    def user_dependency(self, default: str) -> str:
        """What the handler's ``user`` parameter depends on."""
        return self.name if self.form == "dependency" else default

    def check(self, condition: str, spaces: int = 0) -> str:
        """The handler's lines (indented by ``spaces``; '' for ``dependency``)."""
        if self.form == "dependency":
            return ""
        if self.form == "predicate":
            text = f"if {self.name}({self.args}):\n    {self._raise()}"
        elif self.form == "raiser":
            text = f"{self.name}({self.args})"
        else:
            text = f"if {condition}:\n    {self._raise()}"
        return indent(text, spaces).lstrip(" ") if spaces else text
