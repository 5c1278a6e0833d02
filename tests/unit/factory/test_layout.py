"""The skeleton's layout (``factory/layout.py``): renamed and merged modules give an app that
still imports, routes and fixes the same, and a file that uses a module's name otherwise is
refused, not broken."""

from __future__ import annotations

import ast
import collections
import typing

import pytest
from pydantic import ValidationError

from a01gym.factory import author, compiler, config, layout, mutator
from a01gym.factory.layoutspec import AREA_NAMES, Layout

_SOURCE = {
    "app/security.py": '"""Auth."""\n\nfrom app import db\n\n\ndef current_user() -> str:\n'
    "    return db.user()\n",
    "app/policy.py": '"""Who may read.\n\nPolicy: owners read."""\n\nfrom typing import Any\n\n'
    "from app import security\nfrom app.security import current_user\n\n\n"
    "def can_read(record: dict[str, Any]) -> bool:\n"
    "    return record['owner'] == security.current_user() == current_user()\n",
    "app/routers/records.py": '"""Records (each handler asks policy.can_read)."""\n\n'
    "from app import db, policy, security\n\n\ndef read() -> bool:\n"
    "    return policy.can_read(db.row()) and bool(security.current_user())\n",
    "app/main.py": "from app.routers import records\n",
}


def test_renamed_modules_move_with_their_imports_references_and_docstrings() -> None:
    files = layout.apply(
        Layout(routers="endpoints", security="auth", policy="rules", repository="crud"), _SOURCE
    )

    assert sorted(files) == [
        "app/auth.py",
        "app/endpoints/records.py",
        "app/main.py",
        "app/rules.py",
    ]
    router = files["app/endpoints/records.py"]
    assert "from app import auth, db, rules" in router
    assert "rules.can_read(db.row()) and bool(auth.current_user())" in router
    assert "(each handler asks rules.can_read)" in router
    assert "from app.auth import current_user" in files["app/rules.py"]
    assert files["app/main.py"] == "from app.endpoints import records\n"
    for text in files.values():
        ast.parse(text)


def test_a_merged_module_joins_its_host_and_its_importers_follow() -> None:
    files = layout.apply(Layout(security="deps"), layout.merge(_SOURCE, "policy", "security"))

    assert "app/policy.py" not in files
    merged = files["app/deps.py"]
    # one import block, no import of itself, the prefixes into itself dropped
    assert "from typing import Any\n\nfrom app import db\n" in merged
    assert "import security" not in merged and "from app.security" not in merged
    assert "return record['owner'] == current_user() == current_user()" in merged
    assert "# Policy: owners read." in merged  # the merged module's docstring, as a comment
    router = files["app/routers/records.py"]
    assert "from app import db, deps\n" in router
    assert "deps.can_read(db.row()) and bool(deps.current_user())" in router
    ast.parse(merged)


def test_a_module_name_used_as_a_variable_is_refused_with_file_and_line() -> None:
    source = dict(_SOURCE)
    source["app/routers/users.py"] = "from app import security\n\n\nsecurity = None\n"

    with pytest.raises(layout.LayoutError, match=r"app/routers/users.py:4: 'security'"):
        layout.apply(Layout(security="auth"), source)


def test_the_token_module_moves_with_its_importers_and_a_name_in_use_is_refused() -> None:
    source = dict(_SOURCE)
    source["app/tokens.py"] = '"""Signed API tokens."""\n\n\ndef issue() -> str:\n    return "t"\n'
    source["app/routers/api.py"] = (
        "from app import db, tokens\n\n\ndef token() -> str:\n"
        "    return tokens.issue() + db.row()\n"
    )

    files = layout.apply(Layout(tokens="signing"), source)

    assert "app/tokens.py" not in files and "app/signing.py" in files
    assert "from app import db, signing\n" in files["app/routers/api.py"]
    assert "return signing.issue() + db.row()" in files["app/routers/api.py"]
    # a file that already uses the new name for something else is refused, not shadowed
    source["app/routers/api.py"] += "\n\ndef bearer() -> str:\n    return tokens.issue()\n"
    with pytest.raises(layout.LayoutError, match=r"api.py: module 'tokens' cannot become 'bearer'"):
        layout.apply(Layout(tokens="bearer"), source)


def test_renamed_router_modules_move_and_the_app_imports_them_by_their_new_names() -> None:
    source = dict(_SOURCE)
    source["app/routers/users.py"] = '"""Profiles."""\n\nrouter = object()\n'
    source["app/main.py"] = (
        "from app.routers import records, users\nfrom app.routers.users import router\n\n"
        "app = [records.router, users.router, router]\n"
    )

    files = layout.apply(
        Layout(routers="endpoints", areas={"users": "people", "records": "entries"}), source
    )

    assert "app/endpoints/people.py" in files and "app/endpoints/entries.py" in files
    assert not any(p.endswith(("/users.py", "/records.py")) for p in files)
    assert files["app/main.py"] == (
        "from app.endpoints import entries, people\nfrom app.endpoints.people import router\n\n"
        "app = [entries.router, people.router, router]\n"
    )
    # a module that never imports a router is not touched, though it says "records"
    assert files["app/endpoints/entries.py"] == source["app/routers/records.py"]


def test_a_router_renamed_to_a_name_the_importer_already_uses_is_refused() -> None:
    source = dict(_SOURCE)
    source["app/main.py"] = "from app.routers import records\n\nentries = [records.router]\n"

    with pytest.raises(layout.LayoutError, match=r"app/main.py: router module 'records'"):
        layout.apply(Layout(areas={"records": "entries"}), source)


def test_router_spellings_are_distinct_and_never_another_modules_name() -> None:
    spellings = [name for names in AREA_NAMES.values() for name in names]
    modules = {
        name
        for field in ("routers", "security", "policy", "repository", "tokens")
        for name in typing.get_args(Layout.model_fields[field].annotation)
    }
    app_modules = {"config", "db", "main", "models", "tables", "tokens", "redirects", "services"}

    assert len(spellings) == len(set(spellings))
    assert all(names[0] == old for old, names in AREA_NAMES.items())
    assert not set(spellings) & (modules | app_modules | {"storage"})
    with pytest.raises(ValidationError, match="another spelling of a router module"):
        Layout(areas={"users": "admin"})


def test_canonical_maps_a_layouts_paths_back_to_the_skeletons() -> None:
    drawn = Layout(
        routers="views",
        security="identity",
        policy="access",
        repository="store",
        tokens="bearer",
        areas={"users": "people"},
    )

    assert layout.canonical(drawn, "app/views/people.py") == "app/routers/users.py"
    assert layout.canonical(drawn, "app/bearer.py") == "app/tokens.py"
    assert layout.canonical(drawn, "app/views/admin.py") == "app/routers/admin.py"
    assert layout.canonical(drawn, "app/identity.py") == "app/security.py"
    assert layout.canonical(drawn, "app/store.py") == "app/repository.py"
    assert layout.canonical(drawn, "app/config.py") == "app/config.py"


def test_drafts_draw_varied_layouts_and_every_one_renders_and_fixes_in_its_own_paths() -> None:
    requests = author.plan(config.FactoryConfig(count=63, seed=11))
    specs = [author.TemplateAuthor().draft(r) for r in requests]
    drawn = collections.Counter(s.layout.skeleton_names for s in specs)

    # most drafts draw a layout, the skeleton's own stays common
    assert drawn[False] > 0.6 * len(specs) and drawn[True] > 0.05 * len(specs)
    assert len({s.layout for s in specs}) > 30
    users = collections.Counter(s.layout.areas.get("users", "users") for s in specs)
    assert len(users) == len(AREA_NAMES["users"]) and users["users"] < 0.6 * len(specs)
    spellings = typing.get_args(Layout.model_fields["tokens"].annotation)
    assert {s.layout.tokens for s in specs} == set(spellings)
    for spec in specs[:21]:
        bundle = compiler.compile_bundle(spec)
        paths = set(bundle.workspace)
        assert f"app/{spec.layout.security}.py" in paths
        assert f"app/{spec.layout.repository}.py" in paths
        assert any(p.startswith(f"app/{spec.layout.routers}/") for p in paths)
        for old in spec.layout.areas:
            assert f"app/{spec.layout.routers}/{old}.py" not in paths
        assert ("app/storage.py" in paths) != spec.layout.storage_in_repository
        # the fix edits the app's own paths, never adds one
        assert set(bundle.hidden.reference_fix.files) <= paths
        for path, content in bundle.workspace.items():
            if path.endswith(".py"):
                ast.parse(content.decode())
        # the hidden side records the layout; the agent's side never names it
        assert Layout.model_validate_json(bundle.hidden.labels["layout"]) == spec.layout


def test_the_layout_changes_paths_never_the_vulnerable_and_fixed_code() -> None:
    spec = author.TemplateAuthor().draft(author.plan(config.FactoryConfig(count=1, seed=3))[0])
    default = spec.model_copy(update={"layout": Layout()})
    drawn = spec.model_copy(
        update={
            "layout": Layout(
                security="auth",
                repository="crud",
                routers="routes",
                areas={"records": "items", "users": "people", "admin": "console"},
            )
        }
    )

    plain, moved = mutator.mutate(default), mutator.mutate(drawn)

    assert moved.vulnerable.routes == plain.vulnerable.routes
    assert moved.fixed.routes == plain.fixed.routes
    paths = {layout.canonical(drawn.layout, p) for p in moved.vulnerable.files}
    assert paths == set(plain.vulnerable.files)
    # the bug sits in the same module, under its new name
    fixed_in = {
        layout.canonical(drawn.layout, p)
        for p, text in moved.fixed.files.items()
        if moved.vulnerable.files[p] != text
    }
    assert fixed_in == {p for p, t in plain.fixed.files.items() if plain.vulnerable.files[p] != t}


def test_a_layout_recorded_with_a_retired_flag_still_loads_and_an_unknown_field_does_not() -> None:
    """The giveaway gate reads every cached scenario's recorded layout; a cache built before a
    flag was retired must not stop the next build."""
    old = '{"security": "deps", "policy_in_security": true, "account_router": false}'
    assert Layout.model_validate_json(old) == Layout(security="deps")
    with pytest.raises(ValidationError):
        Layout.model_validate_json('{"security": "deps", "policy_in_securty": true}')
