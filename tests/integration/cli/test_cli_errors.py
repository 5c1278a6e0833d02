"""Exit codes and messages of the installed ``a01gym`` script.

0 success and ``-h``/``--help``; 2 when typer cannot parse the command line, a value outside
an option's fixed choices included (usage printed; a bare ``a01gym`` prints help and exits 2,
click's convention); 1 for anything a01gym itself rejects, as one ``error: …`` line saying what
to do; never a traceback.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"
Run = Callable[..., subprocess.CompletedProcess[str]]


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    return lines[0]


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["serve", "-h"], ["factory", "--help"]])
def test_help_exits_zero(a01gym: Run, args: list[str]) -> None:
    done = a01gym(*args)
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [[], ["factory"], ["sandbox"]])
def test_a_bare_group_prints_help_and_exits_two(a01gym: Run, args: list[str]) -> None:
    done = a01gym(*args)
    assert done.returncode == 2
    assert "Usage:" in done.stdout and "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["serve", "--bogus"], "No such option: --bogus"),
        (["factory", "show"], "Missing argument"),
        (["eval", "--concurrency", "zero"], "Invalid value for '--concurrency'"),
        (["nosuchcommand"], "No such command"),
    ],
)
def test_usage_errors_print_the_usage_and_exit_two(
    a01gym: Run, args: list[str], problem: str
) -> None:
    done = a01gym(*args)
    assert done.returncode == 2, done.stderr
    assert "Usage: a01gym" in done.stderr and problem in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (["serve", "--backend", "nosuch"], ["local", "docker", "kubernetes"]),
        (["serve", "--backend", "podman"], ["local", "docker", "kubernetes"]),
        (
            ["eval", "--agent", "nosuch"],
            ["noop", "deny-all", "reference", "solver", "openai", "local"],
        ),
        (["factory", "build", "--author", "nosuch"], ["template", "llm"]),
        (["factory", "list", "/nonexistent", "--split", "nosuch"], ["train", "eval"]),
        (["factory", "list", "/nonexistent", "--difficulty", "nosuch"], ["easy", "medium", "hard"]),
        (["factory", "stats", "/nonexistent", "--split", "nosuch"], ["train", "eval"]),
        (["--log-format", "nosuch", "version"], ["text", "json"]),
    ],
)
def test_a_value_outside_the_choices_is_a_usage_error_naming_them(
    a01gym: Run, args: list[str], choices: list[str]
) -> None:
    done = a01gym(*args)
    assert done.returncode == 2, done.stderr
    assert "Usage: a01gym" in done.stderr and "Traceback" not in done.stderr
    problem = " ".join(done.stderr.replace("│", " ").split())  # unwrapped from its box
    assert re.search(r"'(nosuch|podman)' is not one of", problem), done.stderr
    assert all(f"'{choice}'" in problem for choice in choices), done.stderr


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["factory", "list", "/nonexistent"], {}, "no scenario cache at /nonexistent"),
        (["factory", "show", "/nonexistent", "abcdef12"], {}, "a01gym factory build"),
        (["serve", "--port", "99999"], {}, "'--port': Input should be less than or equal"),
        (["serve"], {"A01GYM_GATEWAY__PORT": "99999"}, "'A01GYM_GATEWAY__PORT'"),
        (["serve"], {"A01GYM_GATEWAY__BACKEND": "podman"}, "'A01GYM_GATEWAY__BACKEND'"),
        (["serve"], {}, "no scenario cache given"),
        (["serve", "--cache", "/nonexistent"], {}, "a01gym factory build --config"),
        (["eval", "--episodes", "0", "--cache", str(FIXTURE)], {}, "'--episodes'"),
        (["eval", "--episodes", "all"], {}, "'all' lists the scenarios of --cache"),
        (["eval", "--cache", "/nonexistent"], {}, "a01gym factory build --config"),
        (["eval", "--cache", str(FIXTURE), "--split", "nosuch"], {}, "has no 'nosuch' scenarios"),
        (["play", "--cache", "/nonexistent"], {}, "a01gym factory build --config"),
        (["analyze", "/nonexistent"], {}, "/nonexistent does not exist"),
        (["factory", "build", "--from-feedback", "/nonexistent.yaml"], {}, "a01gym analyze"),
    ],
)
def test_errors_are_one_line_and_exit_one(
    a01gym: Run, args: list[str], env: dict[str, str], expected: str
) -> None:
    done = a01gym(*args, env=env)
    assert done.returncode == 1, done.stderr
    assert expected in _one_error_line(done.stderr)


def test_an_empty_cache_folder_is_refused_at_serve_start(a01gym: Run, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = a01gym("serve", "--cache", str(tmp_path / "empty"))
    assert done.returncode == 1
    assert "a01gym factory build" in _one_error_line(done.stderr)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("gatway:\n  port: 9000\n", "unknown section 'gatway'"),
        ("gateway:\n  prot: 9000\n", "did you mean 'port'?"),
    ],
)
def test_a_misspelt_config_file_names_the_nearest_valid_name(
    a01gym: Run, tmp_path: Path, content: str, expected: str
) -> None:
    config = tmp_path / "a01gym.yaml"
    config.write_text(content)
    done = a01gym("serve", "--cache", str(FIXTURE), env={"A01GYM_CONFIG": str(config)})
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert expected in line and "A01GYM_GATEWAY__PROT" not in line


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--url", "http://127.0.0.1:9"],
        [
            "eval",
            "--agent",
            "openai",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--cache",
            str(FIXTURE),
            "--split",
            "train",
        ],
    ],
    ids=["gateway", "model"],
)
def test_eval_fails_in_seconds_when_an_endpoint_is_unreachable(
    a01gym: Run, tmp_path: Path, args: list[str]
) -> None:
    started = time.monotonic()
    done = a01gym(*args, "--out", str(tmp_path / "out"))
    assert done.returncode == 1, done.stderr
    assert "cannot reach http://127.0.0.1:9" in _one_error_line(done.stderr)
    # ~0.5 s (gateway) and ~1 s (model) of CPU, see bench/cli.py; the bound only has to catch retry
    # loops and default client timeouts (minutes), so it allows for a loaded test machine.
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out").exists()  # no empty run folder, no table of zeros


def test_serve_help_shows_the_real_defaults(a01gym: Run) -> None:
    done = a01gym("serve", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "8000, or A01GYM_GATEWAY__PORT" in text
    assert re.search(r"\d+ \(from free memory\), or A01GYM_GATEWAY__MAX_SESSIONS", text)
    assert "[default: 0]" not in text


def test_serve_port_zero_binds_a_free_port_and_prints_it(served: str) -> None:
    # the fixture read the URL from serve's own line and checked it is not :0 or :8000
    assert httpx.get(f"{served}/health", timeout=10).status_code == 200
