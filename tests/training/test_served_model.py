"""Every OpenAI-compatible path against a real model served by ``transformers serve``.

The eval agent (``--agent openai``), the LLM author (structured output) and the expert had only
met stub servers. Here the packaged SmolLM2-135M-Instruct (a real pretrained model: its GGUF
file from PyPI, sha256-checked, converted by :mod:`a01gym.training.models`) is served by
transformers' own OpenAI-compatible server on 127.0.0.1, and each path makes a few real calls:

* the eval agent plays one real episode to the hidden grade (replies it cannot parse are sent
  back with the parser's reason; after two actions it submits);
* the LLM author asks for one draft with the spec's JSON schema (or falls back to JSON mode when
  the server refuses it); a 135M model's draft is refused with the validation reason, which is
  the author's contract for a bad draft;
* the expert answers an episode's ``ask_expert`` through the gateway.

What a real small model does on each path is printed (``-s``) for the learning issue's notes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import onefamily
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import packaged_models

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, model name) of ``transformers serve`` on the converted SmolLM2 directory."""
    from a01gym.training import models

    directory = models.resolve_model(str(packaged_models.fetch("smollm2-135m")))
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    command = [
        str(Path(sys.executable).with_name("transformers")),
        "serve",
        directory,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            time.sleep(1)
        else:
            pytest.fail(f"transformers serve did not answer in 900 s:\n{log.read_text()[-3000:]}")
        yield f"http://127.0.0.1:{port}/v1", directory
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("served-model") / "cache"
    onefamily.build(path, count=2)
    return path


def test_the_openai_eval_agent_plays_a_served_real_model_to_the_hidden_grade(
    served: tuple[str, str], cache: Path, tmp_path: Path
) -> None:
    from a01gym.cli.background import gateway_thread
    from a01gym.training import agents
    from a01gym.training import eval as evaluation

    base_url, model = served

    def make_agent() -> agents.OpenAIAgent:
        return agents.OpenAIAgent(
            model=model, base_url=base_url, temperature=0.0, max_tokens=96, max_turns=2
        )

    async def preflight() -> None:
        probe = make_agent()
        try:
            await probe.check_endpoint(timeout_s=60)  # it cannot list its models: goes on
        finally:
            await probe.aclose()

    asyncio.run(preflight())
    with gateway_thread(cache, tmp_path / "runs") as url:
        (record,) = asyncio.run(
            evaluation.run_eval(
                url,
                make_agent,
                evaluation.jobs_for(1, seed=0),
                agent_name="openai",
                concurrency=1,
                split="train",
            )
        )
    print(
        f"\nopenai agent on SmolLM2: reward {record.reward}, steps {record.steps}, "
        f"invalid {record.invalid_actions}, {record.seconds:.0f} s"
    )
    assert record.error is None
    assert record.reward is not None and -1.0 <= record.reward <= 1.0
    assert record.breakdown is not None and {"security", "regression"} <= set(record.breakdown)
    assert 1 <= record.steps <= 3  # two actions at most, then submit
    messages = record.messages or []
    replies = [m for m in messages if m["role"] == "assistant"]
    print(f"its first reply: {replies[0]['content'][:300]!r}" if replies else "no reply")
    assert replies, "the model's raw replies are saved with the episode"
    # every reply that was not an action went back to the model with the parser's reason
    errors = [m for m in messages if m["role"] == "user" and m["content"].startswith("Error: ")]
    # the other replies were actions (the last step is a submit, the model's or the agent's own)
    assert len(replies) - len(errors) in (record.steps - 1, record.steps)


def test_the_llm_author_asks_a_served_real_model_for_a_schema_shaped_draft(
    served: tuple[str, str],
) -> None:
    from a01gym.factory import author, config
    from a01gym.factory.author import AuthorError
    from a01gym.factory.llm_author import LLMAuthor

    base_url, model = served
    llm = LLMAuthor(
        config.LLMConfig(
            base_url=base_url, model=model, max_attempts=1, max_tokens=256, timeout_s=600
        )
    )
    request = author.plan(config.FactoryConfig(count=1, families=["F01"]))[0]
    try:
        spec = llm.draft(request)
    except AuthorError as exc:
        print(f"\nLLM author on SmolLM2 (structured={llm.structured}): refused: {exc}")
        assert "draft" in str(exc).lower() or "valid" in str(exc).lower(), exc
    else:
        print(f"\nLLM author on SmolLM2 (structured={llm.structured}): a valid spec")
        assert spec.bug.family == "F01" and spec.seed == request.seed
    assert llm.structured is not None  # the server's answer to the schema was decided


def test_the_expert_answers_an_episode_from_a_served_real_model(
    served: tuple[str, str],
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    from a01gym import config
    from a01gym.cli.background import gateway_thread
    from a01gym.training import session

    base_url, model = served
    for key, value in {
        "BASE_URL": base_url,
        "MODEL": model,
        "TIMEOUT_S": "300",
        "MAX_TOKENS": "48",
        "MAX_PROMPT_CHARS": "4000",  # a small model's context, and seconds of CPU prefill
    }.items():
        monkeypatch.setenv(f"A01GYM_EXPERT__{key}", value)
    config.get_settings.cache_clear()  # the gateway reads them through the process settings
    request.addfinalizer(config.get_settings.cache_clear)  # after monkeypatch's undo

    async def ask(url: str) -> tuple[str, str]:
        episode = session.EpisodeSession(url, message_timeout_s=600)
        try:
            await episode.reset(seed=0, split="train", expert=True, agent="served-expert")
            answer = await episode.step(
                session.tool_action("ask_expert", {"question": "Which file checks access?"})
            )
            await episode.step(session.tool_action("submit", {}))
            return answer, str(episode.reward)
        finally:
            await episode.close()

    with gateway_thread(cache, tmp_path / "runs") as url:
        answer, reward = asyncio.run(ask(url))
    print(f"\nexpert on SmolLM2 answered: {answer[:300]!r}; reward after submit {reward}")
    assert not answer.startswith("error"), answer
    assert answer.strip()
