"""Generated modules leave blank lines as a formatter would (``codetext.tidy``): a run of blank
lines where a template block rendered empty, or where a mode dropped a check, pointed at the
bug (issue 28: "odd blank lines sit where a check was removed")."""

from __future__ import annotations

import ast
import itertools
import re

import pytest

from a01gym.factory import author, config, mutator
from a01gym.factory.codetext import tidy

_LOOSE = re.compile(r"\n\n\n+[ \t]|\n\n\n\n")


def test_runs_collapse_to_one_in_a_block_and_two_at_top_level_but_not_inside_strings() -> None:
    source = (
        "class A:\n    def a(self) -> None:  \n        pass\n\n\n\n    def b(self) -> str:\n"
        '        return """one\n\n\n\ntwo"""\n\n\n\n\ndef c() -> None:\n    pass\n\n\n'
    )

    tidied = tidy(source)

    assert tidied == (
        "class A:\n    def a(self) -> None:\n        pass\n\n    def b(self) -> str:\n"
        '        return """one\n\n\n\ntwo"""\n\n\ndef c() -> None:\n    pass\n'
    )
    assert ast.dump(ast.parse(tidied)) == ast.dump(ast.parse(source))


@pytest.fixture(scope="module")
def renderings() -> list[tuple[str, str, str]]:
    """(family, path, text) of every Python module of every rendering (fixed, vulnerable, each
    trap) of 42 drafts, two of every family."""
    rendered_files = []
    for request in author.plan(config.FactoryConfig(count=42, seed=23)):
        mutation = mutator.mutate(author.TemplateAuthor().draft(request))
        for rendered in (mutation.fixed, mutation.vulnerable, *mutation.traps.values()):
            rendered_files += [
                (request.family, path, text)
                for path, text in rendered.files.items()
                if path.endswith(".py")
            ]
    return rendered_files


def test_no_rendering_of_any_family_has_a_loose_blank_line_run(
    renderings: list[tuple[str, str, str]],
) -> None:
    loose = [f"{family} {path}" for family, path, text in renderings if _LOOSE.search(text)]
    assert not loose


def _cramped(text: str) -> list[int]:
    """Lines of module- or class-level definitions with no blank line above them (a formatter
    leaves one in a class, two in a module), where they follow another statement of their body
    other than a docstring."""
    lines = text.splitlines()
    tree = ast.parse(text)
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    cramped = []
    for body in bodies:
        for before, statement in itertools.pairwise(body):
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(before, ast.Expr) and isinstance(before.value, ast.Constant):
                continue  # a class docstring may sit right above its first method
            first = min([statement.lineno] + [d.lineno for d in statement.decorator_list])
            above = lines[first - 2].strip()
            if above and not above.startswith("#"):
                cramped.append(first)
    return cramped


def test_no_rendering_of_any_family_has_a_definition_without_a_blank_line_above(
    renderings: list[tuple[str, str, str]],
) -> None:
    """F05's ``can_act_as`` property sat right under ``is_admin`` (no blank line) in the
    security module of the apps drawing that check's structure, about one app in seven."""
    assert _cramped("class A:\n    x = 1\n    def f(self) -> None:\n        pass\n") == [3]
    cramped = [
        f"{family} {path}:{row}" for family, path, text in renderings for row in _cramped(text)
    ]
    assert not cramped
