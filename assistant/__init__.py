"""Grounded question answering over research-paper abstracts.

    from assistant import ask
    answer = ask("Is there work on pruning spiking neural networks?")
    print(answer.text, [p.label for p in answer.citations])
"""

__version__ = "0.1.0"

from assistant.engine import Assistant, ask  # noqa: E402
from assistant.settings import Settings  # noqa: E402
from assistant.types import Answer, Paper  # noqa: E402

__all__ = ["Answer", "Assistant", "Paper", "Settings", "ask", "__version__"]
