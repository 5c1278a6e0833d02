"""Dead helpers are left out (``factory/prune.py``): nothing in a generated app is defined and
never used, in the skeleton's modules or where a bug stopped calling a check."""

from __future__ import annotations

import ast
import collections
import re
import subprocess
import sys
from pathlib import Path

from a01gym.factory import author, config, mutator, prune

_APP = {
    "app/security.py": '"""Auth."""\n\nimport functools\nimport hmac\nfrom typing import Any\n\n'
    "from app import db\n\nLIMIT = 3\nUNUSED_LIMIT = 4\n\n\n"
    "def current_user() -> Any:\n    return db.user(LIMIT)\n\n\n"
    "def admin_only(handler: Any) -> Any:\n    return functools.wraps(handler)(handler)\n\n\n"
    "def same(a: str, b: str) -> bool:\n    return hmac.compare_digest(a, b)\n",
    "app/redirects.py": '"""Where to go."""\n\n\ndef landing(target: str) -> str:\n'
    "    return target\n",
    "app/routers/users.py": "from app import security\n\n\n@router.get('/me')\n"
    "def read_me() -> object:\n    return security.current_user(), security.hmac\n",
}


def test_uncalled_functions_and_settings_go_with_the_imports_only_they_used() -> None:
    files = prune.prune(_APP)

    security = files["app/security.py"]
    assert "def current_user" in security and "LIMIT = 3" in security
    assert "admin_only" not in security and "UNUSED_LIMIT" not in security
    assert "def same" not in security
    assert "import functools" not in security  # only admin_only used it
    assert "import hmac" in security  # another module reaches it as security.hmac
    assert "\n\n\n\n" not in security  # what went leaves no gap
    # route handlers are the framework's to call; a module never loses all it defines
    assert files["app/routers/users.py"] == _APP["app/routers/users.py"]
    assert files["app/redirects.py"] == _APP["app/redirects.py"]
    ast.parse(security)


_DEFINED = re.compile(r"^(?:def|async def)\s+(\w+)|^([A-Z][A-Z0-9_]+)\s*=", re.MULTILINE)


def test_no_drafted_app_defines_what_it_never_uses_in_its_check_and_data_modules() -> None:
    """Every rendering (secure, vulnerable, each trap) of 42 drafts, two of every family."""
    requests = author.plan(config.FactoryConfig(count=42, seed=17))
    unused = collections.Counter()
    for request in requests:
        mutation = mutator.mutate(author.TemplateAuthor().draft(request))
        for rendered in (mutation.fixed, mutation.vulnerable, *mutation.traps.values()):
            counts = collections.Counter(re.findall(r"\w+", "\n".join(rendered.files.values())))
            for path, text in rendered.files.items():
                if path.count("/") != 1 or path in ("app/main.py", "app/redirects.py"):
                    continue
                for match in _DEFINED.finditer(text):
                    name = match.group(1) or match.group(2)
                    if counts[name] == 1:
                        unused[(request.family, path, name)] += 1
    assert not unused, unused


def test_no_rendering_names_what_it_does_not_define(tmp_path: Path) -> None:
    """Pruning and layouts rewrite code they never run, so a static check stands in for
    running it: ruff's undefined-name rule, and every ``module.name`` defined in that module,
    over every rendering of 42 drafts (two of every family, drawn layouts included). A sweep of
    40 drafts a family in both styles (9,800 renderings, seed 5) found one import a template
    left out (a records router whose guards alone used the policy), now fixed; and a name
    used only inside an f-string once lost its import.
    The deny-all trap is left out: its handlers raise where the check was, before code that
    reads what they no longer load (unreachable, rendered so before pruning existed)."""
    requests = author.plan(config.FactoryConfig(count=42, seed=23))
    for request in requests:
        mutation = mutator.mutate(author.TemplateAuthor().draft(request))
        renderings = {"fixed": mutation.fixed, "vulnerable": mutation.vulnerable}
        renderings |= {
            f"trap-{name}": app for name, app in mutation.traps.items() if name != "deny_all"
        }
        for name, rendered in renderings.items():
            for path, text in rendered.files.items():
                target = tmp_path / f"{request.index}-{name}" / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run(
        [str(ruff), "check", "--no-cache", "--isolated", "--select", "F821", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(list(tmp_path.rglob("*.py"))) > 42 * 2 * 20
    # and what ruff cannot see: ``module.name`` where the app's module no longer defines it
    missing = [
        (app.name, reference)
        for app in tmp_path.iterdir()
        for reference in _undefined_module_attributes(app)
    ]
    assert not missing, missing[:20]


def _undefined_module_attributes(app: Path) -> list[str]:
    defined: dict[str, set[str]] = {}
    for module in (app / "app").glob("*.py"):
        names: set[str] = set()
        for node in ast.parse(module.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        defined[module.stem] = names
    return [
        f"{path.relative_to(app)}: {node.value.id}.{node.attr}"
        for path in app.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in defined
        and node.value.id != path.stem
        and node.attr not in defined[node.value.id]
    ]
