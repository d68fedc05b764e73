"""One chat client for every OpenAI-protocol server: OpenAI, vLLM, llama.cpp, Ollama, LM Studio.

Built on the official `openai` SDK, which already retries connection errors,
429 and 5xx with exponential backoff (`LLM_MAX_RETRIES`) and never retries a
401 or 404. This module adds what the SDK leaves to callers: a deadline on the
whole streamed answer, detection of empty or truncated streams, and one plain
sentence per failure that is safe to show a user (it never contains the key).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai

from assistant.errors import ModelError

if TYPE_CHECKING:
    from assistant.local_model import LocalServer

log = logging.getLogger(__name__)

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
_PLACEHOLDER_KEY = "not-needed"  # local servers ignore the key, but the SDK wants one


@dataclass(frozen=True)
class ModelConfig:
    """Where a chat model lives and how to talk to it."""

    base_url: str | None  # None = OpenAI's own API
    model: str | None  # None = ask the server for its first model
    api_key: str | None
    temperature: float = 0.1
    max_tokens: int = 400
    timeout_s: float = 60.0
    max_retries: int = 2
    context_tokens: int = 3000  # prompt budget (cl100k_base) for sources, history and question
    refusals_final: bool = True  # whether its NO_ANSWER stands where retrieval has matched the question (see MODEL_REFUSALS)

    @property
    def server(self) -> str:
        """Where the model lives, for messages: never with the URL's user name or password."""
        return without_userinfo(self.base_url) if self.base_url else "api.openai.com"

    @property
    def max_answer_chars(self) -> int:
        """The longest answer accepted: a server that ignores `max_tokens` cannot flood the UI."""
        return max(4000, 8 * self.max_tokens)


def without_userinfo(url: str) -> str:
    """`url` with any `user:password@` removed."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class ChatModel:
    """Streams chat completions; thread-safe (the SDK client is).

    `server`, when given, is the local process behind `base_url`; `alive()`
    reports whether it still runs, so a crashed one is restarted.
    """

    def __init__(self, config: ModelConfig, server: LocalServer | None = None) -> None:
        self.config = config
        self.server = server
        self._client = openai.OpenAI(
            api_key=config.api_key or _PLACEHOLDER_KEY,
            base_url=config.base_url,
            timeout=openai.Timeout(config.timeout_s, connect=min(config.timeout_s, 10.0)),
            max_retries=config.max_retries,
        )
        self._model = config.model

    @property
    def name(self) -> str:
        """`model @ server`, for status lines and `Answer.model`."""
        return f"{self._model or '?'} @ {self.config.server}"

    @property
    def context_tokens(self) -> int:
        """How many prompt tokens this model should be given (its reading speed sets the wait)."""
        return self.config.context_tokens

    @property
    def refusals_final(self) -> bool:
        """Whether this model reads well enough that its NO_ANSWER stands where the E5 check matched the question."""
        return self.config.refusals_final

    def alive(self) -> bool:
        """False once the local server behind this model has died; a hosted model is always alive."""
        return self.server is None or not self.server.exited()

    def model_id(self) -> str:
        """The configured model, or the first one the server lists."""
        if self._model is None:
            try:
                models = self._client.models.list().data
            except openai.OpenAIError as exc:
                raise ModelError(self._explain(exc)) from exc
            if not models:
                raise ModelError(f"the server at {self.config.server} lists no models; set LLM_MODEL")
            self._model = models[0].id
        return self._model

    def ahead(self) -> int:
        """Answers the embedded model is writing or has queued (0 for a hosted model, which serves many at once)."""
        return self.server.ahead() if self.server else 0

    def stream(self, messages: list[dict[str, str]]) -> Iterator[str]:
        """Yield the answer's text as it arrives; raise `ModelError` on any failure.

        On the embedded model, questions take turns; LLM_TIMEOUT_S counts from a question's turn, so waiting
        behind another answer never cuts this one off.
        """
        with self.server.turn() if self.server else nullcontext():
            yield from self._stream(messages)

    def _stream(self, messages: list[dict[str, str]]) -> Iterator[str]:
        deadline = time.monotonic() + self.config.timeout_s
        model = self.model_id()
        received = 0
        finished = False
        try:
            response = self._client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                stream=True,
            )
            with response:
                for chunk in response:
                    if time.monotonic() > deadline:
                        raise ModelError(f"the model at {self.config.server} did not finish within {self.config.timeout_s:g} s (LLM_TIMEOUT_S)")
                    if not chunk.choices:
                        continue
                    choice = chunk.choices[0]
                    text = choice.delta.content if choice.delta else None
                    if text:
                        received += len(text)
                        if received > self.config.max_answer_chars:
                            raise ModelError(f"the answer passed {self.config.max_answer_chars} characters and was cut off (LLM_MAX_TOKENS)")
                        yield text
                    if choice.finish_reason:
                        finished = True
        except ModelError:
            raise
        except Exception as exc:  # the model boundary: transport, protocol or parsing, all become a fallback
            log.warning("model call failed: %s", type(exc).__name__)
            raise ModelError(self._explain(exc)) from exc
        if not received:
            raise ModelError(f"the model '{model}' at {self.config.server} returned an empty answer")
        if not finished:
            raise ModelError(f"the response stream from {self.config.server} stopped before the answer was complete")

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The whole answer as one string (used for rewriting follow-up questions)."""
        return "".join(self.stream(messages)).strip()

    def _explain(self, exc: BaseException) -> str:
        """One sentence a user can act on; the API key never appears in it."""
        values = {
            "server": self.config.server,
            "model": self._model or "?",
            "retries": self.config.max_retries,
            "timeout": f"{self.config.timeout_s:g}",
            "status": getattr(exc, "status_code", "?"),
            "cause": type(exc.__cause__ or exc).__name__,
        }
        for kind, message in _EXPLANATIONS:
            if isinstance(exc, kind):
                return message.format(**values)
        return "the model call to {server} failed ({cause})".format(**values)


# Most specific first: the SDK's status errors subclass APIStatusError, its timeout subclasses APIConnectionError.
_EXPLANATIONS: list[tuple[type[BaseException] | tuple[type[BaseException], ...], str]] = [
    (openai.AuthenticationError, "the server at {server} rejected the API key (HTTP 401); check OPENAI_API_KEY"),
    (openai.PermissionDeniedError, "the API key may not use model '{model}' at {server} (HTTP 403)"),
    (openai.NotFoundError, "model '{model}' was not found at {server} (HTTP 404); check LLM_MODEL and OPENAI_BASE_URL"),
    (openai.RateLimitError, "the server at {server} is rate-limiting requests (HTTP 429) after {retries} retries"),
    (openai.APIStatusError, "the server at {server} failed with HTTP {status} after {retries} retries"),
    (openai.APITimeoutError, "no response from {server} within {timeout} s (LLM_TIMEOUT_S)"),
    (openai.APIConnectionError, "cannot connect to {server} ({cause}); is the model server running?"),
    ((openai.APIResponseValidationError, json.JSONDecodeError, ValueError), "the server at {server} sent a response that is not valid OpenAI-protocol JSON"),
]
