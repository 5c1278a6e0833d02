"""The LLM author: asks any OpenAI-compatible endpoint for a JSON ``ScenarioSpec`` draft.

The prompt carries the request (family, domain, difficulty band, seed), the catalog of
supported families and sites, the canonical policy shapes and the spec's JSON schema. The first
request also asks for structured output (``response_format`` of type ``json_schema`` with the
spec's schema), so an endpoint that supports it can only answer with a well-formed spec; one
that refuses it (HTTP 400 or 422) is asked in plain JSON mode from then on. Either way the reply
is parsed and validated with the pydantic model (a schema cannot say which CWE fits which
family); on failure the validation errors are fed back and the model tries again, up to
``max_attempts``. Base URL, model and key come from the
config or from ``OPENAI_BASE_URL`` / ``A01GYM_LLM_MODEL`` / ``OPENAI_API_KEY``.

The LLM only drafts *data*: the app code and the tests are rendered by our own generator, the
code style and the companion families are drawn as the template author draws them, and every
draft still has to pass the gold gates in a sandbox.
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any

import openai
from pydantic import ValidationError

from a01gym.factory import domains, families, layoutdraw, styles
from a01gym.factory.author import AuthorError, DraftRequest, draw_companions
from a01gym.factory.config import LLMConfig
from a01gym.factory.spec import DECOY_KINDS, PolicyFeatures, ScenarioSpec, canonical_policy

__all__ = ["LLMAuthor"]

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)

_SPEC_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "ScenarioSpec",
        "description": "A scenario spec for the a01gym factory.",
        "schema": ScenarioSpec.model_json_schema(),
        "strict": False,  # the pydantic schema has defaults and optional fields
    },
}
"""Structured output: the endpoint constrains the reply to the spec's JSON schema."""


class _Refused(Exception):
    """The endpoint does not take a json_schema response format."""

    def __init__(self, status_code: int) -> None:
        super().__init__(status_code)
        self.status_code = status_code


def _validation_feedback(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors()[:12]:
        where = ".".join(str(p) for p in error["loc"]) or "(root)"
        lines.append(f"- {where}: {error['msg']}")
    return "\n".join(lines)


class LLMAuthor:
    """Drafts specs with an OpenAI-compatible chat model."""

    name = "llm"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.base_url = config.base_url or os.environ.get("OPENAI_BASE_URL")
        self.model = config.model or os.environ.get("A01GYM_LLM_MODEL")
        if not self.base_url or not self.model:
            missing = "base_url" if not self.base_url else "model"
            raise AuthorError(
                f"the LLM author needs author.llm.{missing}",
                hint="set it in the config or via OPENAI_BASE_URL / A01GYM_LLM_MODEL",
            )
        self.structured: bool | None = None
        """Whether the endpoint takes the json_schema response format (None: not asked yet)."""
        key = config.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=config.timeout_s, max_retries=0
        )

    def _prompt(self, request: DraftRequest) -> str:
        fam = families.family(request.family)
        example_domain = domains.domain(request.domain).model_dump(mode="json")
        policy = [r.model_dump(mode="json") for r in canonical_policy(PolicyFeatures())]
        return (
            "You write scenario specs for a security-training environment. Reply with ONE JSON "
            "object that validates against the JSON schema below, and nothing else.\n"
            f"Requirements: seed={request.seed}; bug.family={fam.id!r}; bug.cwe one of "
            f"{list(fam.cwes)}; bug.owasp='A01:2021'; bug.sites a non-empty subset of "
            f"{list(fam.sites)}; traps a non-empty subset of {list(fam.trap_names)} (plus "
            f"'fix_one_sibling' only with 2+ sites); decoys a subset of {list(DECOY_KINDS)}; "
            f"knobs.indirection one of {list(fam.indirections)}; difficulty band "
            f"{request.band!r} (easy: 1 site, route distance, hint 2-4; hard: several sites, "
            "service or repository distance, hint 0-1).\n"
            "Actors: exactly one 'anonymous' (no tenant), one 'admin', at least two 'user' "
            "actors in tenant 'a' and two in tenant 'b'; a 'support' actor exactly when the "
            "policy lets support read records, a 'manager' (with a tenant) exactly when the "
            "policy lets managers read.\n"
            "Policy: use this rule list, optionally adding 'support'/'manager' to the record "
            "read/list/export rules, dropping 'team_if_shared' from them, or dropping 'admin' "
            f"from record update/archive:\n{json.dumps(policy)}\n"
            "Invent a fresh domain in the shape of this example (other names and columns):\n"
            f"{json.dumps(example_domain)}\n"
            f"JSON schema:\n{json.dumps(ScenarioSpec.model_json_schema())}"
        )

    def _ask(self, messages: list[dict[str, str]]) -> str:
        """One completion: schema-constrained when the endpoint takes it, else JSON mode."""
        if self.structured is not False:
            try:
                content = self._complete(messages, _SPEC_FORMAT)
            except _Refused as exc:
                logger.info(
                    "%s refuses a json_schema response_format (HTTP %s); falling back to JSON "
                    "mode with parse-and-retry",
                    self.base_url,
                    exc.status_code,
                )
                self.structured = False
            else:
                self.structured = True
                return content
        return self._complete(messages, {"type": "json_object"})

    def _complete(self, messages: list[dict[str, str]], response_format: dict[str, Any]) -> str:
        try:
            response = self._client.chat.completions.create(
                model=self.model or "",
                messages=messages,  # type: ignore[arg-type]
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                response_format=response_format,  # type: ignore[arg-type]
            )
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if response_format is _SPEC_FORMAT and self.structured is None:
                raise _Refused(exc.status_code) from exc
            raise self._status_error(exc) from exc
        except openai.APIConnectionError as exc:
            raise AuthorError(
                f"LLM endpoint {self.base_url} is unreachable ({exc.__class__.__name__})",
                hint="check author.llm.base_url and that the server is running",
            ) from exc
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except openai.OpenAIError as exc:
            raise AuthorError(f"LLM request failed: {exc}") from exc
        content = response.choices[0].message.content if response.choices else None
        return content or ""

    def _status_error(self, exc: openai.APIStatusError) -> AuthorError:
        return AuthorError(
            f"LLM endpoint {self.base_url} answered HTTP {exc.status_code}: "
            f"{str(exc.message)[:200]}",
            hint="check the model name and the API key",
        )

    def draft(self, request: DraftRequest) -> ScenarioSpec:
        """Ask for a draft, validate it, feed errors back; give up after ``max_attempts``.

        Raises:
            AuthorError: unreachable endpoint, or no valid draft in ``max_attempts``; the
                reason names the last validation errors.
        """
        messages: list[dict[str, str]] = [{"role": "user", "content": self._prompt(request)}]
        problem = "no attempt made"
        for attempt in range(1, self.config.max_attempts + 1):
            content = self._ask(messages)
            messages.append({"role": "assistant", "content": content})
            try:
                data: Any = json.loads(_FENCE.sub("", content.strip()))
                if isinstance(data, dict):
                    data.pop("companions", None)  # ours, drawn below
                spec = ScenarioSpec.model_validate(data)
                mismatch = self._mismatch(request, spec)
                if mismatch:
                    raise ValueError(mismatch)
            except json.JSONDecodeError as exc:
                problem = f"reply is not JSON ({exc.msg} at char {exc.pos})"
            except ValidationError as exc:
                problem = "spec is invalid:\n" + _validation_feedback(exc)
            except ValueError as exc:
                problem = str(exc)
            else:
                logger.debug("LLM draft %d valid after %d attempt(s)", request.index, attempt)
                # the code style, the layout and the companion families are ours
                companions = draw_companions(
                    request.seed, spec.bug.family, {actor.role for actor in spec.actors}
                )
                spec = spec.model_copy(
                    update={"companions": companions, "layout": layoutdraw.draw(request.seed)}
                )
                return styles.restyled(spec, styles.draw(request.seed))
            logger.info("LLM draft %d attempt %d rejected: %s", request.index, attempt, problem)
            messages.append(
                {
                    "role": "user",
                    "content": f"That draft was rejected:\n{problem}\nReply with the corrected "
                    "JSON object only.",
                }
            )
        raise AuthorError(
            f"no valid draft after {self.config.max_attempts} attempts; last problem: {problem}"
        )

    @staticmethod
    def _mismatch(request: DraftRequest, spec: ScenarioSpec) -> str | None:
        if spec.bug.family != request.family:
            return f"bug.family must be {request.family!r}, got {spec.bug.family!r}"
        if spec.seed != request.seed:
            return f"seed must be {request.seed}, got {spec.seed}"
        return None
