"""The LLM author against a small local OpenAI-compatible server that returns canned drafts.

This checks the *wiring* (client, JSON parsing, pydantic validation, retries with the errors
fed back, error reporting), not the quality of any model: the server replays fixed replies.
The server binds 127.0.0.1 on a free port and is shut down through its handle.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a01gym.factory import author, config, styles
from a01gym.factory.author import AuthorError, DraftRequest
from a01gym.factory.config import LLMConfig
from a01gym.factory.llm_author import LLMAuthor
from a01gym.factory.spec import ScenarioSpec


class _FakeOpenAI:
    """Replays ``replies`` (one per chat completion) and records the requests.

    With ``refuse_schema`` set to a status (400, 422) it answers a ``json_schema`` response
    format with that error, as servers without structured output do.
    """

    def __init__(self, replies: list[str], refuse_schema: int | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                fake.requests.append(json.loads(self.rfile.read(length)))
                kind = fake.requests[-1].get("response_format", {}).get("type")
                if refuse_schema and kind == "json_schema":
                    error = {"error": {"message": "response_format json_schema unsupported"}}
                    self._send(refuse_schema, json.dumps(error).encode())
                    return
                content = fake.replies.pop(0) if fake.replies else "{}"
                body = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "canned",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                    }
                ).encode()
                self._send(200, body)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> _FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def request_and_valid_draft() -> Iterator[tuple[DraftRequest, str]]:
    request = author.plan(config.FactoryConfig(count=1, families=["F01"]))[0]
    yield request, author.TemplateAuthor().draft(request).model_dump_json()


def _llm(base_url: str, attempts: int = 3) -> LLMAuthor:
    return LLMAuthor(LLMConfig(base_url=base_url, model="canned", max_attempts=attempts))


def test_invalid_draft_is_retried_with_the_errors_fed_back(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    request, valid = request_and_valid_draft
    wrong = json.loads(valid)
    wrong["bug"]["cwe"] = "CWE-22"
    with _FakeOpenAI(["not json at all", json.dumps(wrong), valid]) as server:
        spec = _llm(server.base_url).draft(request)
    assert spec.bug.family == "F01" and spec.seed == request.seed
    assert len(server.requests) == 3
    second_feedback = server.requests[1]["messages"][-1]["content"]
    third_feedback = server.requests[2]["messages"][-1]["content"]
    assert "not JSON" in second_feedback
    assert "bug" in third_feedback and "does not fit F01" in third_feedback
    assert server.requests[0]["model"] == "canned"


def test_never_valid_drafts_are_rejected_with_the_last_reason(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    request, valid = request_and_valid_draft
    wrong = json.loads(valid)
    del wrong["domain"]
    with _FakeOpenAI([json.dumps(wrong)] * 2) as server, pytest.raises(AuthorError) as info:
        _llm(server.base_url, attempts=2).draft(request)
    assert len(server.requests) == 2
    assert "no valid draft after 2 attempts" in info.value.reason
    assert "domain" in info.value.reason


def test_draft_for_the_wrong_family_is_refused(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    request, _ = request_and_valid_draft
    other = author.TemplateAuthor().draft(
        author.plan(config.FactoryConfig(count=1, families=["F10"]))[0]
    )
    with (
        _FakeOpenAI([other.model_dump_json()]) as server,
        pytest.raises(AuthorError, match=r"bug\.family must be 'F01'"),
    ):
        _llm(server.base_url, attempts=1).draft(request)


def test_unreachable_endpoint_gives_a_clear_error(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    request, _ = request_and_valid_draft
    with _FakeOpenAI([]) as server:
        url = server.base_url  # a port that is free again once the server stops
    with pytest.raises(AuthorError, match="unreachable") as info:
        _llm(url).draft(request)
    assert "base_url" in str(info.value)


def test_missing_model_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A01GYM_LLM_MODEL", raising=False)
    with pytest.raises(AuthorError, match=r"author\.llm\.model"):
        LLMAuthor(LLMConfig(base_url="http://127.0.0.1:9/v1"))


def test_llm_author_satisfies_the_protocol() -> None:
    assert isinstance(_llm("http://127.0.0.1:9/v1"), author.Author)


async def test_build_records_llm_rejections_with_their_reason(
    tmp_path: Any, request_and_valid_draft: tuple[DraftRequest, str]
) -> None:
    """End to end through the pipeline (gates off): a never-valid draft lands in the index."""
    from a01gym.factory import pipeline
    from a01gym.factory.cache import ScenarioCache

    with _FakeOpenAI(["[1, 2, 3]"] * 4) as server:
        cfg = config.FactoryConfig.model_validate(
            {
                "count": 2,
                "families": ["F01"],
                "author": {
                    "kind": "llm",
                    "llm": {"base_url": server.base_url, "model": "canned", "max_attempts": 2},
                },
                "gates": {"enabled": False},
            }
        )
        summary = await pipeline.build(cfg, tmp_path / "cache")
    assert summary.admitted == 0 and summary.rejected == 2
    rejections = ScenarioCache(tmp_path / "cache").rejections()
    assert [r.stage for r in rejections] == ["author", "author"]
    assert all("no valid draft after 2 attempts" in r.reason for r in rejections)
    assert {r.model for r in rejections} == {"canned"}
    assert summary.per_family["F01"].reasons == {"author: no valid draft after 2 attempts": 2}


def test_structured_output_is_requested_with_the_spec_schema(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    request, valid = request_and_valid_draft
    with _FakeOpenAI([valid]) as server:
        llm = _llm(server.base_url)
        spec = llm.draft(request)
    assert spec.seed == request.seed
    [sent] = server.requests
    response_format = sent["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "ScenarioSpec"
    assert response_format["json_schema"]["schema"] == ScenarioSpec.model_json_schema()
    assert llm.structured is True


@pytest.mark.parametrize("status", [400, 422])
def test_endpoint_without_structured_output_falls_back_to_parse_and_retry(
    request_and_valid_draft: tuple[DraftRequest, str], status: int
) -> None:
    request, valid = request_and_valid_draft
    with _FakeOpenAI(["not json", valid, valid], refuse_schema=status) as server:
        llm = _llm(server.base_url)
        first = llm.draft(request)
        second = llm.draft(request)
    assert first == second and first.seed == request.seed
    kinds = [r["response_format"]["type"] for r in server.requests]
    # Asked once with the schema, refused, then JSON mode: a bad reply, its feedback, a good
    # one; the next draft does not ask for the schema again.
    assert kinds == ["json_schema", "json_object", "json_object", "json_object"]
    assert "not JSON" in server.requests[2]["messages"][-1]["content"]
    assert llm.structured is False


def test_other_errors_are_not_mistaken_for_a_missing_feature(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    """Once structured output worked, a later 400 is an error, not a reason to fall back."""
    request, valid = request_and_valid_draft
    with _FakeOpenAI([valid], refuse_schema=400) as server:
        llm = _llm(server.base_url)
        llm.structured = True
        with pytest.raises(AuthorError, match="answered HTTP 400"):
            llm.draft(request)
    assert len(server.requests) == 1


def test_the_data_access_style_is_drawn_from_the_seed_not_written_by_the_model(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    request, valid = request_and_valid_draft
    drawn = styles.draw(request.seed)
    written = json.loads(valid)
    written["knobs"]["data_access"] = "sqlite3" if drawn == "sqlalchemy" else "sqlalchemy"
    with _FakeOpenAI([json.dumps(written)]) as server:
        spec = _llm(server.base_url).draft(request)
    assert spec.knobs.data_access == drawn


def test_the_companions_are_drawn_from_the_seed_whatever_the_model_writes(
    request_and_valid_draft: tuple[DraftRequest, str],
) -> None:
    """A model's companions are dropped before validation (an impossible one, F20 without a
    manager actor or the bug's own family, costs no retry) and ours are drawn as the template
    author draws them."""
    request, valid = request_and_valid_draft
    written = json.loads(valid)
    written["companions"] = [written["bug"]["family"], "F20", "F20"]
    with _FakeOpenAI([json.dumps(written)]) as server:
        spec = _llm(server.base_url).draft(request)
    assert len(server.requests) == 1
    roles = {actor.role for actor in spec.actors}
    assert spec.companions == author.draw_companions(request.seed, spec.bug.family, roles)
    assert spec.companions
