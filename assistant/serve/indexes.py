"""The indexes a server answers from, one assistant each, opened on first use and shared by every front door."""

from __future__ import annotations

import threading

from assistant.engine import Assistant, Manifest
from assistant.serve.errors import ApiError


class Indexes:
    """The assistants this server answers with, one per index ("model"); siblings share the loaded models."""

    def __init__(self, assistant: Assistant) -> None:
        self.default = assistant
        self._by_name: dict[str, Assistant] = {assistant.settings.collection: assistant}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """The indexes with a complete build, by name."""
        return self.default.index_names()

    def manifests(self) -> dict[str, Manifest]:
        """Each index with a complete build and what it was built from, without opening any of them."""
        return self.default.manifests()

    def get(self, name: str) -> Assistant:
        """The assistant for index `name`; `ApiError` 404 if the store has no complete build of it."""
        with self._lock:
            if name in self._by_name:
                return self._by_name[name]
        if name not in self.names():
            raise ApiError(404, f"The model '{name}' does not exist: no index of that name. GET /v1/models lists them.", param="model", code="model_not_found")
        with self._lock:
            return self._by_name.setdefault(name, self.default.sibling(name))
