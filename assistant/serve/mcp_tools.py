"""The assistant as Model Context Protocol tools, for agents and desktop assistants.

Three tools, on the official `mcp` SDK: `ask` (a cited answer), `search_papers` (ranked papers with the passage
that matched) and `get_paper` (one paper whole). `assistant mcp` serves them over stdio; `assistant serve` mounts
the same server at `/mcp` (streamable HTTP), behind `API_KEYS` when they are set. Each tool runs the engine in a
worker thread, so one slow answer does not hold the others.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from assistant.engine import Filters, call_options
from assistant.errors import AssistantError
from assistant.ingest.papers import Paper
from assistant.serve.access import WRONG_KEY, key_accepted
from assistant.serve.errors import ApiError
from assistant.serve.indexes import Indexes
from assistant.serve.replies import answer_fields

INSTRUCTIONS = (
    "Answers questions about the research-paper abstracts in this index (ICML 2024 by default), each claim cited with "
    "[n] to a paper listed in `citations`. Use `ask` for a question, `search_papers` to find papers on a topic, "
    "`get_paper` for one paper's abstract, authors and links. An answer with `abstained: true` means the index has no "
    "paper that answers; `partial: true` means the cited abstract lacks part of what was asked."
)


def _papers(papers: list[Paper]) -> list[dict[str, Any]]:
    return [{"paper_id": p.paper_id, "title": p.title or p.label, "authors": p.authors or [], "status": p.status, "url": p.url,
             "score": round(p.score, 4), "passage": p.snippet} for p in papers]


async def _run(call: Any) -> Any:
    """`call()` in a worker thread; an engine or request error becomes the tool's error, in words."""
    try:
        return await anyio.to_thread.run_sync(call)
    except (AssistantError, ApiError) as exc:
        raise ToolError(getattr(exc, "message", None) or str(exc)) from exc


def build(indexes: Indexes) -> MCPServer:
    """The MCP server over `indexes` (the same the HTTP routes answer from)."""
    server = MCPServer(name="paper-assistant", instructions=INSTRUCTIONS)

    def target(index: str | None) -> Any:
        return indexes.get(index) if index else indexes.default

    @server.tool(description="Answer a question from the abstracts, every claim cited [n]; says so when the index has no paper on it.")
    async def ask(question: str, index: str | None = None, k: int | None = None, filters: Filters | None = None) -> dict[str, Any]:
        def answer() -> dict[str, Any]:
            found = target(index).ask(question, options=call_options(None, k, filters))
            return {"text": found.text, **answer_fields(found)}

        return await _run(answer)

    @server.tool(description="Papers of the index on a topic, best first, each with the passage that matched.")
    async def search_papers(query: str, index: str | None = None, k: int = 10, filters: Filters | None = None) -> dict[str, Any]:
        return {"papers": await _run(lambda: _papers(target(index).search(query, k=k, filters=filters).papers))}

    @server.tool(description="One paper of the index by its paper_id: title, authors, status, links and the whole abstract.")
    async def get_paper(paper_id: str, index: str | None = None) -> dict[str, Any]:
        found = await _run(lambda: target(index).paper(paper_id))
        if found is None:
            raise ToolError(f"No paper '{paper_id}' in this index; search_papers lists paper ids.")
        return found.to_dict()

    return server


def http_app(server: MCPServer, keys: list[str], host: str) -> ASGIApp:
    """The streamable-HTTP endpoint of `server`, answering only requests with one of `keys` (when any are set).

    Bound to a loopback address, the SDK's DNS-rebinding protection stays on; on another interface the keys guard it.
    """
    security = None if host in ("127.0.0.1", "localhost", "::1") else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    endpoint = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=host).routes[0].app
    return KeyedEndpoint(endpoint, keys)


class KeyedEndpoint:
    """An ASGI app that answers 401 unless the request carries one of `keys` (a class: Starlette routes call functions
    with a request, but hand an ASGI app the raw scope)."""

    def __init__(self, app: ASGIApp, keys: list[str]) -> None:
        self.app, self.keys = app, keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not key_accepted(dict(scope["headers"]).get(b"authorization", b"").decode("latin-1"), self.keys):
            await WRONG_KEY.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)
