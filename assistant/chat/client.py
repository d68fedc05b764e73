"""One chat client for every OpenAI-protocol server: OpenAI, vLLM, llama.cpp, Ollama, LM Studio.

Built on the official `openai` SDK. This module adds what the SDK leaves to
callers: one wall-clock deadline (`LLM_TIMEOUT_S`, a `Deadline` for all of a
question's model calls) — connecting, retries of connection errors, 429 and 5xx with backoff and
`Retry-After` (`LLM_MAX_RETRIES`; never a 401 or 404), and streaming, enforced
by a watchdog even when a server sends only keep-alive pings or a byte at a
time — detection of empty or truncated streams, and one plain sentence per
failure that is safe to show a user (it never contains the key).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import openai

from assistant.errors import ModelError
from assistant.infra.deadline import Deadline

if TYPE_CHECKING:
    from assistant.chat.local_server import LocalServer

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
    schema_format: Literal["json_schema", "json_object"] = "json_schema"  # how a JSON schema is sent: OpenAI's `json_schema`, or llama-cpp-python's `json_object` + schema

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
            max_retries=0,  # retried here, within the question's deadline
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

    def stream(self, messages: list[dict[str, str]], deadline: Deadline | None = None, schema: dict | None = None) -> Iterator[str]:
        """Yield the answer's text as it arrives; raise `ModelError` on any failure.

        `deadline` is the question's (shared by all its model calls); without one, this call gets
        LLM_TIMEOUT_S of its own. On the embedded model, questions take turns, and waiting behind another
        answer is not counted. `schema`: the reply must be JSON of this shape (the server enforces it).
        """
        deadline = deadline or Deadline(self.config.timeout_s)
        queued = time.monotonic()
        with self.server.turn() if self.server else nullcontext():
            deadline.begin(waited=time.monotonic() - queued)
            attempt = 0
            while True:
                if deadline.left() <= 0:
                    raise ModelError(self._late(deadline))
                try:
                    yield from self._attempt(messages, deadline, schema)
                    return
                except _Retry as retry:
                    attempt += 1
                    wait = min(retry.after if retry.after is not None else 0.5 * 2 ** (attempt - 1), 20.0)
                    if attempt > self.config.max_retries or wait >= deadline.left():
                        raise ModelError(self._explain(retry.cause, attempt - 1)) from retry.cause
                    log.info("model call failed (%s); retry %d in %.1f s", type(retry.cause).__name__, attempt, wait)
                    time.sleep(wait)

    def _late(self, deadline: Deadline) -> str:
        return (
            f"the model at {self.config.server} did not finish within {deadline.seconds:g} s (LLM_TIMEOUT_S; "
            f"stopped after {deadline.elapsed:.1f} s)"
        )

    def _attempt(self, messages: list[dict[str, str]], deadline: Deadline, schema: dict | None = None) -> Iterator[str]:
        """One request; `_Retry` if it failed in a way worth retrying before any text arrived."""
        model = self.model_id()
        received = 0
        finished = False
        timed_out = threading.Event()
        watchdog: threading.Timer | None = None
        try:
            left = max(deadline.left(), 0.01)
            response = self._client.with_options(timeout=openai.Timeout(left, connect=min(left, 10.0))).chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                stream=True,
                **({"response_format": self._response_format(schema)} if schema else {}),  # type: ignore[arg-type]
            )
            # pings and one-byte trickles keep a read timeout from firing: the watchdog closes the stream at the deadline
            watchdog = threading.Timer(deadline.left(), lambda: (timed_out.set(), response.close()))
            watchdog.daemon = True
            watchdog.start()
            with response:
                for chunk in response:
                    if deadline.left() <= 0:
                        timed_out.set()
                        break
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
            if not timed_out.is_set() and not received and _retryable(exc):
                raise _Retry(exc, _retry_after(exc)) from exc
            if not timed_out.is_set():
                log.warning("model call failed: %s", type(exc).__name__)
                raise ModelError(self._explain(exc, 0)) from exc
        finally:
            if watchdog is not None:
                watchdog.cancel()
        if timed_out.is_set() or (not finished and deadline.left() <= 0):
            raise ModelError(self._late(deadline))
        if not received:
            raise ModelError(f"the model '{model}' at {self.config.server} returned an empty answer")
        if not finished:
            raise ModelError(f"the response stream from {self.config.server} stopped before the answer was complete")

    def complete(self, messages: list[dict[str, str]], deadline: Deadline | None = None, schema: dict | None = None) -> str:
        """The whole answer as one string, for a caller that does not stream."""
        return "".join(self.stream(messages, deadline, schema)).strip()

    def _response_format(self, schema: dict) -> dict:
        if self.config.schema_format == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}

    def _explain(self, exc: BaseException, retries: int | None = None) -> str:
        """One sentence a user can act on; the API key never appears in it."""
        values = {
            "server": self.config.server,
            "model": self._model or "?",
            "retries": self.config.max_retries if retries is None else retries,
            "timeout": f"{self.config.timeout_s:g}",
            "status": getattr(exc, "status_code", "?"),
            "cause": type(exc.__cause__ or exc).__name__,
        }
        for kind, message in _EXPLANATIONS:
            if isinstance(exc, kind):
                return message.format(**values)
        return "the model call to {server} failed ({cause})".format(**values)


class _Retry(Exception):
    """A failed attempt worth repeating (connection, 429, 5xx, before any text); `after` is the server's Retry-After."""

    def __init__(self, cause: BaseException, after: float | None) -> None:
        super().__init__(str(cause))
        self.cause, self.after = cause, after


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)


def _retry_after(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds, when it sent one as a number."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


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
