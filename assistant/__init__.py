"""Grounded question answering over research-paper abstracts.

    from assistant import ask
    answer = ask("Is there work on pruning spiking neural networks?")
    print(answer.text, [p.label for p in answer.citations])

The public names load on first use, so a command that only indexes does not
pay for importing the answering side (the OpenAI client alone is ~0.8 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from assistant.infra.version import VERSION as __version__

__all__ = ["Answer", "Assistant", "Paper", "Settings", "ask", "__version__"]

_EXPORTS = {
    "Assistant": "assistant.engine",
    "ask": "assistant.engine",
    "Settings": "assistant.settings",
    "Answer": "assistant.answer.result",
    "Paper": "assistant.ingest.papers",
}

if TYPE_CHECKING:
    from assistant.answer.result import Answer
    from assistant.engine import Assistant, ask
    from assistant.ingest.papers import Paper
    from assistant.settings import Settings


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'assistant' has no attribute {name!r}")
