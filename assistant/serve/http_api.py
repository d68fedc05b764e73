"""The HTTP face of the engine: an OpenAI-compatible chat endpoint and a JSON API, on the app the UI mounts into.

`/v1/chat/completions` lets any OpenAI client (the `openai` SDK, Open WebUI,
LibreChat, LiteLLM) ask the assistant: each index is a "model", the reply's
content is the answer with [n] markers, and the cited papers travel beside it
as `citations`, the same list whether streamed (in the last chunk) or not.
`/api/*` serves scripts the `Answer` itself. Every error, including a
refused key, comes back in OpenAI's error shape, never as a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assistant.answer.result import Answer, reference
from assistant.answer.table import MARKDOWN_HEAD
from assistant.engine import Assistant, message_text
from assistant.infra.version import VERSION
from assistant.ingest.chunking import count_tokens
from assistant.options import AskOptions
from assistant.serve import mcp_tools
from assistant.serve.access import require_key
from assistant.serve.errors import ApiError, from_engine
from assistant.serve.indexes import Indexes
from assistant.serve.replies import answer_fields

log = logging.getLogger(__name__)

GUARDED = ("/v1", "/api")  # the machine-facing routes: keys, body limits and error shapes apply to these


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        return message_text([part.model_dump() for part in self.content] if isinstance(self.content, list) else self.content)


class Options(AskOptions):
    """The options a request may set for one answer: every `AskOptions` field, and OpenAI's names where one exists."""

    model_config = ConfigDict(extra="ignore")
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="OpenAI's name for llm_temperature.")
    max_tokens: int | None = Field(None, ge=16, le=8192, description="OpenAI's name for llm_max_tokens.")
    max_completion_tokens: int | None = Field(None, ge=16, le=8192, description="OpenAI's newer name for llm_max_tokens.")

    def ask_options(self, provider: str) -> AskOptions:
        """The engine's options: OpenAI's names override the engine's own where both are given.

        `provider` is the server's own (`Assistant.provider`): a request may ask for it or `extractive`, never
        for another one (`auto` included: it could start the embedded model on a server its operator set to quote).
        """
        if self.llm_provider not in (None, "extractive", provider):
            raise ApiError(400, f"This server answers with '{provider}'; a request may set llm_provider to 'extractive' only.", param="llm_provider")
        chosen = self.model_dump(include=set(AskOptions.model_fields), exclude_none=True)
        openai_names = {"llm_temperature": self.temperature, "llm_max_tokens": self.max_completion_tokens or self.max_tokens}
        return AskOptions.model_validate({**chosen, **{key: value for key, value in openai_names.items() if value is not None}})


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: bool = False


class ChatRequest(Options):
    model: str = Field(..., min_length=1, max_length=200, description="The index to ask (GET /v1/models).")
    messages: list[ChatMessage] = Field(..., min_length=1, max_length=200)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int | None = Field(None, ge=1, le=1, description="Only one answer per request.")
    references: bool | None = Field(None, description="End the content with the cited papers' references (default API_REFERENCES).")


class AskRequest(Options):
    question: str = Field(..., max_length=100_000)
    history: list[str | dict[str, Any]] = Field(default_factory=list, max_length=200, description="Earlier turns: strings or {role, content}.")
    index: str | None = Field(None, description="The index to ask; default COLLECTION.")


REFERENCES = "References:"


def references_block(answer: Answer) -> str:
    """The cited papers as a person reads them in any chat client, after the answer, one Markdown list item each."""
    lines = [f"- {reference(number, paper)}" for number, paper in enumerate(answer.citations, start=1)]
    return f"\n\n{REFERENCES}\n" + "\n".join(lines) if lines else ""


def table_block(answer: Answer) -> str:
    """The answer's comparison table in Markdown, after its text, for clients that show the content only."""
    return f"\n\n{answer.table.markdown()}" if answer.table else ""


def without_references(text: str) -> str:
    """An earlier answer as the client sends it back, without the table and references this server appended."""
    head, found, _ = text.rpartition(f"\n\n{REFERENCES}\n")
    text = head if found else text
    head, found, _ = text.rpartition(f"\n\n{MARKDOWN_HEAD}")
    return head if found else text


def conversation(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]]:
    """The question (the last user message) and the turns before it; system messages are not obeyed, so dropped."""
    if messages[-1].role != "user":
        raise ApiError(400, "The last message must be the user's question.", param="messages")
    history = [{"role": m.role, "content": without_references(m.text()) if m.role == "assistant" else m.text()}
               for m in messages[:-1] if m.role in ("user", "assistant") and m.text().strip()]
    return messages[-1].text(), history


def usage(messages: list[ChatMessage], content: str) -> dict[str, int]:
    """Tokens (cl100k_base) of the messages the client sent and of the content it got back."""
    prompt, completion = sum(count_tokens(m.text()) for m in messages), count_tokens(content)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class Completion:
    """What one chat completion shares across its chunks: ids, timestamp, the request it answers and what it asked for."""

    def __init__(self, request: ChatRequest, references: bool) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = request.model
        self.messages = request.messages
        self.references = references
        self.include_usage = bool(request.stream_options and request.stream_options.include_usage)

    def tail(self, answer: Answer) -> str:
        """What follows the answer's text: its comparison table if it has one, then its references unless turned off."""
        return table_block(answer) + (references_block(answer) if self.references else "")

    def content(self, answer: Answer) -> str:
        """The answer's text and its tail: the same streamed or not."""
        return answer.text + self.tail(answer)

    def body(self, answer: Answer) -> dict[str, Any]:
        content = self.content(answer)
        return {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage(self.messages, content), **answer_fields(answer),
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return self.event(choices=[{"index": 0, "delta": delta, "finish_reason": finish}], **extra)

    def event(self, **fields: Any) -> str:
        """One server-sent chunk of this completion."""
        data = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model, **fields}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def sse(completion: Completion, first: object, rest: Iterator[object]) -> Iterator[str]:
    """Server-sent events: the role, each text piece as it comes, then a last chunk carrying the citations, then [DONE].

    Clients show the content only, so no `Evidence` comes first and the answer numbers its citations from [1]. The
    content is the same as unstreamed: the answer's text, then its references when asked for.
    """
    yield completion.chunk({"role": "assistant", "content": ""})
    piece = first
    held = ""  # whitespace at the end of a piece waits for more text: the answer's own text ends without it
    try:
        while True:
            if isinstance(piece, Answer):
                block = completion.tail(piece)
                if block:
                    yield completion.chunk({"content": block})
                yield completion.chunk({}, "stop", **answer_fields(piece))
                if completion.include_usage:  # OpenAI's last chunk: no choices, the usage
                    yield completion.event(choices=[], usage=usage(completion.messages, completion.content(piece)))
                break
            if isinstance(piece, str) and piece:
                text = (held + piece).rstrip()
                held = (held + piece)[len(text):]
                if text:
                    yield completion.chunk({"content": text})
            piece = next(rest)
    except Exception as exc:  # headers are sent: the error goes in the stream, as OpenAI does
        yield f"data: {json.dumps(from_engine(exc).body())}\n\n"
    yield "data: [DONE]\n\n"


class BodyLimit:
    """ASGI middleware: a request body must arrive within `timeout` seconds, and to the guarded routes be no larger
    than `limit` bytes.

    Guarded routes have their body read here, up to the limit, and handed on whole (413 when larger, 408 when
    slower), so a chunked upload without a length is bounded too. Elsewhere (the UI's routes) a body that stalls
    reads as the client going away, so a client that sends part of a body holds no connection.
    """

    def __init__(self, app: ASGIApp, limit: int, timeout: float) -> None:
        self.app, self.limit, self.timeout = app, limit, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not scope["path"].startswith(GUARDED):
            await self.app(scope, self._timed(receive), send)
            return
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if not length.isdigit() or int(length) > self.limit:
            await _too_large(self.limit).response()(scope, receive, send)
            return
        try:
            body = await asyncio.wait_for(self._read(receive), self.timeout)
        except asyncio.TimeoutError:
            slow = ApiError(408, f"The request body did not arrive within {self.timeout:g} s (API_BODY_TIMEOUT_S).", code="request_timeout")
            await slow.response()(scope, receive, send)
            return
        if body is None:
            return  # the client went away
        if len(body) > self.limit:
            await _too_large(self.limit).response()(scope, receive, send)
            return
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if handed:
                return await receive()
            handed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body, or its first bytes past the limit; None if the client went away."""
        body, more = b"", True
        while more and len(body) <= self.limit:
            message = await receive()
            if message["type"] != "http.request":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
        return body

    def _timed(self, receive: Receive) -> Receive:
        """`receive` that reports a disconnect when the body stalls; once the body is complete it waits as long as it must
        (a streaming response listens on it for the client leaving)."""
        complete = False

        async def timed() -> Message:
            nonlocal complete
            if complete:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except asyncio.TimeoutError:
                complete = True
                return {"type": "http.disconnect"}
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        return timed


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"The request body is larger than {limit} bytes (API_MAX_BODY_BYTES).", code="request_too_large")


def create_app(assistant: Assistant) -> FastAPI:
    """The FastAPI app serving `/v1`, `/api` and `/mcp` for `assistant`'s store; the UI is mounted into it by `ui.app`."""
    settings = assistant.settings
    indexes = Indexes(assistant)
    keys = settings.api_key_list()
    guard = [Depends(require_key(keys))]
    # With keys the schema is served behind them and the browsable docs are off: their page could not send a key.
    docs = {"docs_url": None, "redoc_url": None, "openapi_url": None} if keys else {}
    tools = mcp_tools.build(indexes)
    mcp_endpoint = mcp_tools.http_app(tools, keys, settings.ui_host)  # creates the session manager the lifespan runs

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with tools.session_manager.run():
            yield

    app = FastAPI(title="Paper assistant", version=VERSION, description=__doc__, lifespan=lifespan, **docs)
    app.router.routes.append(Route("/mcp", endpoint=mcp_endpoint, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(BodyLimit, limit=settings.api_max_body_bytes, timeout=settings.api_body_timeout_s)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = [str(part) for part in first.get("loc", ()) if part != "body"]
        message = f"{'.'.join(where) or 'body'}: {first.get('msg', 'invalid request')}"
        return ApiError(400, message, param=".".join(where) or None).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if not request.url.path.startswith(GUARDED):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
        return ApiError(exc.status_code, str(exc.detail)).response()

    v1 = APIRouter(prefix="/v1", dependencies=guard, tags=["OpenAI-compatible"])
    api = APIRouter(prefix="/api", dependencies=guard, tags=["JSON API"])

    @v1.get("/models")
    def list_models() -> dict[str, Any]:
        """Each index with a complete build, as a model."""
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "paper-assistant"} for name in indexes.names()]}

    @v1.post("/chat/completions", response_model=None)
    def chat_completions(request: ChatRequest) -> dict[str, Any] | StreamingResponse:
        """Answer the last user message from the index named by `model`, with citations; `stream` for SSE."""
        target = indexes.get(request.model)
        question, history = conversation(request.messages)
        stream = target.stream(question, history, options=request.ask_options(target.provider), evidence=False)
        completion = Completion(request, settings.api_references if request.references is None else request.references)
        try:
            if request.stream:
                first = next(stream)  # a bad question fails here, as a 400, before any byte is sent
                return StreamingResponse(sse(completion, first, stream), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
            answer = [piece for piece in stream if isinstance(piece, Answer)][-1]
        except ApiError:
            raise
        except Exception as exc:
            raise from_engine(exc) from exc
        return completion.body(answer)

    @api.post("/ask")
    def ask(request: AskRequest) -> dict[str, Any]:
        """The full `Answer` (as `assistant ask --json` prints it)."""
        target = indexes.get(request.index) if request.index else indexes.default
        try:
            return target.ask(request.question, request.history, options=request.ask_options(target.provider)).to_dict()
        except Exception as exc:
            raise from_engine(exc) from exc

    @api.get("/papers/{paper_id}")
    def paper(paper_id: str, index: str | None = None) -> dict[str, Any]:
        """One paper of the index: its abstract, title, authors and links."""
        target = indexes.get(index) if index else indexes.default
        try:
            found = target.paper(paper_id)
        except Exception as exc:
            raise from_engine(exc) from exc
        if found is None:
            raise ApiError(404, f"No paper '{paper_id}' in index '{target.settings.collection}'.", param="paper_id", code="paper_not_found")
        return found.to_dict()

    @api.get("/health")
    def health() -> dict[str, Any]:
        """Whether the index answers: its name, papers, the model that writes answers, when it was built; 503 if its store is damaged."""
        try:
            assistant.check_store()
            manifest = assistant.manifest
        except Exception as exc:
            raise from_engine(exc) from exc
        return {
            "status": "ok", "index": manifest.index, "indexes": indexes.names(), "papers": manifest.papers, "chunks": manifest.chunks,
            "built_at": manifest.built_at, "embed_model": manifest.embed_model, "model": assistant.answering_model(),
            "provider": assistant.provider, "version": VERSION,
        }

    if keys:
        @app.api_route("/openapi.json", methods=["GET", "HEAD"], dependencies=guard, include_in_schema=False)
        def schema() -> dict[str, Any]:
            return app.openapi()

    app.include_router(v1)
    app.include_router(api)
    app.state.indexes = indexes  # the UI mounted into this app answers from the same assistants
    return app
