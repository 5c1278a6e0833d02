"""Dependency aliases (``factory/aliases.py``): handlers mix ``user: security.SignedIn`` with
``Depends(security.current_user)``, each handler spelled alike in the vulnerable app, the
reference fix and every trap, and the security module keeps only the aliases in use."""

from __future__ import annotations

import ast
import collections
import difflib

from a01gym.factory import aliases, author, compiler, config, giveaways, layoutdraw, mutator
from a01gym.factory.layoutspec import Layout

_ROUTER = '''"""Records."""

import sqlite3

from fastapi import APIRouter, Depends

from app import db, security
from app.security import CurrentUser

router = APIRouter()


@router.get("/a")
def read_a(
    user: CurrentUser = Depends(security.current_user),
    connection: sqlite3.Connection = Depends(db.get_db),
) -> int:
    return user.id


@router.get("/b")
def read_b(
    tenant_id: int | None = None,
    user: CurrentUser = Depends(security.require_admin),
) -> int:
    return user.id


@router.get("/c")
def read_c(
    user: CurrentUser | None = Depends(security.optional_user),
) -> int:
    return 0
'''


def _spec(family: str, share: float, seed: int = 28):
    for request in author.plan(config.FactoryConfig(count=200, seed=seed)):
        spec = author.TemplateAuthor().draft(request)
        if spec.bug.family == family:
            layout = spec.layout.model_copy(update={"dependency_aliases": share})
            return spec.model_copy(update={"layout": layout})
    raise AssertionError(f"no {family} draft")


def test_the_alias_replaces_the_parameter_only_where_python_accepts_it() -> None:
    out = aliases.apply(1, 1.0, {"app/routers/records.py": _ROUTER})["app/routers/records.py"]

    ast.parse(out)
    assert "    user: security.SignedIn,\n    connection" in out
    # a defaulted parameter before it: dropping the default would be a syntax error
    assert "user: CurrentUser = Depends(security.require_admin)" in out
    # only the two checks have aliases; an optional caller stays as it is
    assert "Depends(security.optional_user)" in out
    # untouched outside the routers, and with a share of 0
    assert aliases.apply(1, 1.0, {"app/main.py": _ROUTER})["app/main.py"] == _ROUTER
    assert aliases.apply(1, 0.0, {"app/routers/records.py": _ROUTER}) == {
        "app/routers/records.py": _ROUTER
    }


def test_an_unused_current_user_import_goes_with_the_last_parameter_that_named_it() -> None:
    router = _ROUTER.replace("tenant_id: int | None = None,\n", "").replace(
        "CurrentUser | None = Depends(security.optional_user)",
        "int = 0",
    )

    out = aliases.apply(1, 1.0, {"app/routers/records.py": router})["app/routers/records.py"]

    assert "CurrentUser" not in out
    assert "user: security.AdminUser," in out
    ast.parse(out)


def test_a_handler_wrapped_in_admin_only_takes_an_administrator_instead() -> None:
    wrapped = _ROUTER.replace('@router.get("/a")\n', '@router.get("/a")\n@security.admin_only\n')

    out = aliases.apply(1, 1.0, {"app/routers/records.py": wrapped})["app/routers/records.py"]

    assert "admin_only" not in out
    assert '@router.get("/a")\ndef read_a(\n    user: security.AdminUser,' in out
    # not chosen: the wrapper and the dependency stay as written
    assert aliases.apply(1, 0.0, {"app/routers/records.py": wrapped}) == {
        "app/routers/records.py": wrapped
    }


def _user_lines_changed(mutation: mutator.Mutation) -> int:
    """Lines declaring a handler's ``user`` that the reference fix adds or removes."""
    return sum(
        line.startswith(("+    user", "-    user"))
        for path, fixed in mutation.fixed.files.items()
        for line in difflib.unified_diff(
            mutation.vulnerable.files.get(path, "").splitlines(), fixed.splitlines(), n=0
        )
    )


def test_handlers_are_drawn_by_name_so_every_rendering_spells_them_alike() -> None:
    # F03 removes a route's authentication: the reference fix must restore it in the
    # handler's own spelling and change nothing else
    for share in (0.5, 1.0):
        spec = _spec("F03", share)
        plain = spec.model_copy(update={"layout": Layout()})
        changed = _user_lines_changed(mutator.mutate(spec))
        assert changed == _user_lines_changed(mutator.mutate(plain)) >= 1


def test_drafts_mix_both_spellings_and_the_security_module_keeps_only_used_aliases() -> None:
    seen: collections.Counter[str] = collections.Counter()
    for request in author.plan(config.FactoryConfig(count=40, seed=29)):
        spec = author.TemplateAuthor().draft(request)
        files = giveaways.python_files(compiler.compile_bundle(spec))
        security = files[f"app/{spec.layout.security}.py"]
        routers = "".join(t for p, t in files.items() if f"/{spec.layout.routers}/" in p)
        for alias in aliases.ALIASES.values():
            used = f".{alias}," in routers
            assert (f"{alias} = Annotated[" in security) == used, (spec.seed, alias)
            seen[alias] += used
        if spec.layout.dependency_aliases == 0:
            assert "Annotated" not in security
        elif 0 < spec.layout.dependency_aliases < 1 and ".SignedIn," in routers:
            seen["mixed"] += "Depends(" + spec.layout.security + ".current_user)" in routers
    assert seen["SignedIn"] >= 10 and seen["AdminUser"] >= 3 and seen["mixed"] >= 5


def test_every_draft_draws_a_share_and_a_spec_without_one_keeps_depends() -> None:
    shares = collections.Counter(
        author.TemplateAuthor().draft(r).layout.dependency_aliases
        for r in author.plan(config.FactoryConfig(count=80, seed=7))
    )

    assert set(shares) == set(layoutdraw.SPELLING_SHARES)
    assert Layout().dependency_aliases == 0.0
