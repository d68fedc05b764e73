"""A chat model that plays a script, for unit tests of the engine (the real-server tests live in test_llm.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from assistant.errors import ModelError
from assistant.infra.deadline import Deadline
from assistant.text.questions import Message


@dataclass
class ScriptedChat:
    """Streams `reply` word by word; raises `ModelError(fail_with)` after `fail_after` pieces if set.

    Every request is kept in `requests`, so a test can read the prompt it was given.
    """

    reply: str = "SpikePrune removes whole kernels of spiking networks [1]."
    fail_after: int | None = None
    fail_with: str = "the connection dropped"
    context_tokens: int = 3000
    name: str = "scripted @ test"
    requests: list[list[Message]] = field(default_factory=list)
    healthy: bool = True
    refusals_final: bool = True

    def stream(self, messages: list[Message], deadline: Deadline | None = None, schema: dict | None = None) -> Iterator[str]:
        self.requests.append(messages)
        for number, piece in enumerate(self.reply.split(" ")):
            if self.fail_after is not None and number >= self.fail_after:
                raise ModelError(self.fail_with)
            yield piece if number == 0 else " " + piece

    def alive(self) -> bool:
        return self.healthy

    def ahead(self) -> int:
        return 0
