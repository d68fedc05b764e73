"""Loading expensive things once per process, whichever thread asks first.

Models (WordLlama, multilingual-e5-small, MiniLM) and the embedded model
server take from milliseconds to minutes to load and are safe to share, so
every part of the package gets them through `shared`, one registry instead of
a global per module. Everything else is passed in explicitly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """A value built by `factory` on first `get()`; a failed build is retried on the next call."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: T | None = None
        self._ready = False

    @property
    def ready(self) -> bool:
        return self._ready

    def get(self) -> T:
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self._value = self._factory()
                    self._ready = True
        return self._value  # type: ignore[return-value]


_registry: dict[str, Lazy[Any]] = {}
_registry_lock = threading.Lock()


def shared(key: str, factory: Callable[[], T]) -> T:
    """The process-wide value for `key`, built by `factory` the first time it is asked for."""
    with _registry_lock:
        lazy = _registry.setdefault(key, Lazy(factory))
    return lazy.get()


def loaded(key: str) -> Any | None:
    """The process-wide value for `key` if something has already built it, else None (builds nothing)."""
    with _registry_lock:
        lazy = _registry.get(key)
    return lazy.get() if lazy is not None and lazy.ready else None
