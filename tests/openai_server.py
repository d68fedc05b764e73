"""A scripted OpenAI-protocol server for tests: real HTTP on 127.0.0.1, told how to behave per request.

It speaks `/v1/models` and `/v1/chat/completions` (plain JSON and SSE
streaming) and can fail in each way a real server does: refuse the key,
not know the model, rate-limit, crash, stall, send broken JSON, cut a stream
half-way, or answer with nothing. Every request body is recorded so tests can
assert on exactly what the client sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-model"


@dataclass
class Behaviour:
    """What the server does for one chat request."""

    kind: str = "ok"  # ok | status | invalid_json | cut_stream | empty | stall | pings (keep-alive comments, never an answer)
    text: str = "SpikePrune removes whole kernels of spiking networks [1]."
    status: int = 200
    delay_s: float = 0.0  # before the first byte (stall) or between stream pieces (and pings)
    retry_after: str | None = None  # a Retry-After header sent with a status


class _BurstServer(ThreadingHTTPServer):
    """Takes a burst of connections at once: with http.server's backlog of 5, the rest of a burst of 12 waited a
    second for the kernel to retry their connection."""

    request_queue_size = 128


@dataclass
class ScriptedServer:
    """Serve `script` in order (the last entry repeats); `requests` records each chat request body."""

    script: list[Behaviour] = field(default_factory=lambda: [Behaviour()])
    requests: list[dict[str, Any]] = field(default_factory=list)
    seen_auth: list[str] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)  # time.perf_counter() when each chat request arrived
    port: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd = _BurstServer(("127.0.0.1", self.port), self._handler())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def next_behaviour(self, body: dict[str, Any], auth: str, arrived: float) -> Behaviour:
        with self._lock:
            self.arrivals.append(arrived)
            self.requests.append(body)
            self.seen_auth.append(auth)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:  # noqa: N802
                arrived = time.perf_counter()
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                behaviour = server.next_behaviour(body, self.headers.get("Authorization", ""), arrived)
                if behaviour.kind == "stall":
                    time.sleep(behaviour.delay_s)
                if behaviour.kind == "status":
                    error = {"error": {"message": f"scripted {behaviour.status}", "type": "test", "code": behaviour.status}}
                    extra = {"Retry-After": behaviour.retry_after} if behaviour.retry_after else None
                    self._send(behaviour.status, json.dumps(error).encode(), headers=extra)
                elif behaviour.kind == "pings":
                    self._pings(behaviour)
                elif behaviour.kind == "invalid_json" and body.get("stream"):
                    self._send(200, b"data: {this is not json\n\n", "text/event-stream")
                elif behaviour.kind == "invalid_json":
                    self._send(200, b"{this is not json", "application/json")
                elif body.get("stream"):
                    self._stream(behaviour)
                else:
                    text = "" if behaviour.kind == "empty" else behaviour.text
                    self._send(200, json.dumps(_completion(text)).encode())

            def _pings(self, behaviour: Behaviour) -> None:
                """An SSE stream of keep-alive comments only, for up to a minute: bytes keep coming, an answer never does."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for _ in range(int(60 / max(behaviour.delay_s, 0.05))):
                        self.wfile.write(b": ping\n\n")
                        self.wfile.flush()
                        time.sleep(max(behaviour.delay_s, 0.05))
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream(self, behaviour: Behaviour) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                words = [] if behaviour.kind == "empty" else behaviour.text.split(" ")
                pieces = [w + " " for w in words[:-1]] + words[-1:]
                if behaviour.kind == "cut_stream":
                    pieces = pieces[: max(1, len(pieces) // 2)]
                try:
                    for piece in pieces:
                        self.wfile.write(f"data: {json.dumps(_chunk(piece, None))}\n\n".encode())
                        self.wfile.flush()
                        if behaviour.delay_s and behaviour.kind != "stall":
                            time.sleep(behaviour.delay_s)
                    if behaviour.kind == "cut_stream":
                        self.close_connection = True
                        return
                    self.wfile.write(f"data: {json.dumps(_chunk('', 'stop'))}\n\ndata: [DONE]\n\n".encode())
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "cmpl-test", "object": "chat.completion", "created": int(time.time()), "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _chunk(text: str, finish: str | None) -> dict[str, Any]:
    delta = {"role": "assistant", "content": text} if text else {}
    return {
        "id": "cmpl-test", "object": "chat.completion.chunk", "created": int(time.time()), "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
