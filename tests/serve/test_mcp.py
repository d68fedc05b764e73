"""The MCP tools driven by the official SDK's own client, over stdio (`assistant mcp`) and streamable HTTP (`/mcp`)."""

from __future__ import annotations

import os
import sys

import anyio
import httpx
import httpx2
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from assistant.engine import Assistant
from assistant.settings import Settings
from tests.serve.test_http_api import INDEX, QUESTION, api_server

TOOLS = {"ask", "search_papers", "get_paper"}


async def _use(client: Client) -> dict:
    """List the tools and call each; what came back, for the test to check."""
    async with client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        answer = (await client.call_tool("ask", {"question": QUESTION, "k": 3})).structured_content
        found = (await client.call_tool("search_papers", {"query": "pruning spiking neural networks", "k": 5})).structured_content
        paper = (await client.call_tool("get_paper", {"paper_id": found["papers"][0]["paper_id"]})).structured_content
        missing = await client.call_tool("get_paper", {"paper_id": "nope"})
        filtered = (await client.call_tool("search_papers", {"query": "diffusion", "filters": {"status": ["Oral"]}})).structured_content
    return {"names": names, "answer": answer, "found": found, "paper": paper, "missing": missing, "filtered": filtered}


def _check(used: dict) -> None:
    assert used["names"] == TOOLS
    answer = used["answer"]
    assert "[1]" in answer["text"] and answer["citations"][0]["title"] and not answer["abstained"]
    assert "spiking" in used["found"]["papers"][0]["title"].lower() and used["found"]["papers"][0]["passage"]
    assert used["paper"]["abstract"] and used["paper"]["paper_id"] == used["found"]["papers"][0]["paper_id"]
    assert used["missing"].is_error and "No paper 'nope'" in used["missing"].content[0].text
    assert used["filtered"]["papers"] and all(p["status"] == "Oral" for p in used["filtered"]["papers"])


def test_the_tools_over_stdio(shipped_settings: Settings) -> None:
    env = {**os.environ, "INDEX_DIR": str(shipped_settings.index_dir), "CACHE_DIR": str(shipped_settings.cache_dir), "LLM_PROVIDER": "extractive"}
    server = StdioServerParameters(command=sys.executable, args=["-m", "assistant.cli", "mcp"], env=env)
    _check(anyio.run(_use, Client(server, read_timeout_seconds=120)))


def test_the_tools_over_http_behind_the_key(shipped_settings: Settings) -> None:
    key = "sk-mcp-91b2"
    with api_server(Assistant(shipped_settings.with_overrides(collection=INDEX, api_keys=key))) as base:
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                                "clientInfo": {"name": "test", "version": "0"}}}
        refused = httpx.post(f"{base}/mcp", json=hello, headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        keyed = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        _check(anyio.run(_use, Client(streamable_http_client(f"{base}/mcp", http_client=keyed))))
