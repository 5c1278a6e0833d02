"""Dependency aliases: some handlers take their caller as ``user: security.SignedIn``, the
others as ``user: CurrentUser = Depends(security.current_user)``.

Every generated handler used to spell its authentication one way, so the handler a bug left
without its dependency, or with a weaker one, was the one sibling that lacked a name all the
others had. Over 8 builds of 300 drafts (``tools/giveaway_ties.py --seeds 28-35``,
``docs/results/giveaway-ties-tokens-2026-11-30.json``) ``sibling_asymmetry``
(:mod:`a01gym.factory.giveaways`) named the bug's file at 4.5x chance for F03 (a route
without authentication), 5.6x for F04 (an admin route that checks only sign-in) and 6.1x for
F19 (an optional user where one is required): reading names, not checks, found the bug.

Real FastAPI apps mix the two spellings: FastAPI's documentation recommends ``Annotated``
aliases, and older handlers keep ``Depends(...)``. Every draft's layout draws the share of
handlers that take the alias (``Layout.dependency_aliases``; a spec built by hand may keep 0),
and each handler is drawn by the spec's seed and the handler's name, never by its mode: the
vulnerable app, the reference fix and every trap spell one handler alike, so a reference fix
of a handler that takes the alias writes the alias. A handler keeps ``Depends`` where the
alias cannot stand (a parameter with a default before ``user``: Python would refuse the
signature). A handler wrapped in ``security.admin_only`` (the admin guard's ``decorator``
indirection) that takes the alias takes ``AdminUser`` instead of the wrapper: while only the
parameter changed, the admin route without the wrapper gave F04's bug away at an expected
rate of 0.31 in the scenarios of that indirection, against 0.05 where handlers depend on
``require_admin`` (seeds 28-31). The security module defines both aliases;
:mod:`a01gym.factory.prune` drops the ones no router uses. The rewrite reads the syntax tree
and edits lines; it never runs the code.
"""

from __future__ import annotations

import ast
import functools
import re

from a01gym.factory.codetext import spelled

__all__ = ["ALIASES", "apply"]

ALIASES = {"current_user": "SignedIn", "require_admin": "AdminUser"}
"""The security module's dependency -> the ``Annotated`` alias it defines for it."""

_PARAM = re.compile(
    r"^(?P<indent>[ \t]+)user: CurrentUser = Depends\(security\.(?P<dependency>\w+)\),$",
    re.MULTILINE,
)


def apply(seed: int, share: float, files: dict[str, str]) -> dict[str, str]:
    """``files`` with the chosen handlers of the routers taking their user by alias."""
    if share <= 0:
        return files
    return {
        path: _aliased(seed, share, text) if path.startswith("app/routers/") else text
        for path, text in files.items()
    }


@functools.lru_cache(maxsize=4096)
def _aliased(seed: int, share: float, text: str) -> str:
    """Memoised: a scenario renders its app 6-10 times (fixed, vulnerable, each trap), and most
    routers are the same text in all of them (uncached, the rewrite took a fifth of a
    compile's CPU time)."""
    if not any(m["dependency"] in ALIASES for m in _PARAM.finditer(text)):
        return text
    lines: list[str | None] = list(text.split("\n"))
    changed = False
    for node in ast.parse(text).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        positional = node.args.args
        first_default = len(positional) - len(node.args.defaults)
        for index, arg in enumerate(positional):
            if arg.arg != "user" or index != first_default:
                continue  # only the first defaulted parameter may lose its default
            match = _PARAM.match(lines[arg.lineno - 1] or "")
            if match is None or match["dependency"] not in ALIASES:
                continue
            if spelled(seed, "alias", share, node.name):
                alias = ALIASES[match["dependency"]]
                for decorator in node.decorator_list:
                    # the admin_only wrapper and a signed-in caller: an administrator instead
                    if ast.unparse(decorator) == "security.admin_only":
                        lines[decorator.lineno - 1] = None
                        alias = ALIASES["require_admin"]
                lines[arg.lineno - 1] = f"{match['indent']}user: security.{alias},"
                changed = True
    if not changed:
        return text
    out = "\n".join(line for line in lines if line is not None)
    if not re.search(r"\bCurrentUser\b", out.replace("from app.security import CurrentUser\n", "")):
        out = out.replace("from app.security import CurrentUser\n", "")
    return out
