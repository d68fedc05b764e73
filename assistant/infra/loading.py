"""Loading expensive things once per process, whichever thread asks first.

Models (WordLlama, multilingual-e5-small, MiniLM) and the embedded model
server take from milliseconds to minutes to load and are safe to share, so
every part of the package gets them through `shared`, one registry instead of
a global per module. Everything else is passed in explicitly.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
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


class _Refused(importlib.abc.MetaPathFinder):
    """Answers every import of `names` (and their submodules) with ModuleNotFoundError, as if they were not installed."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        if any(fullname == name or fullname.startswith(name + ".") for name in self.names):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


@contextmanager
def unimportable(names: tuple[str, ...]) -> Iterator[None]:
    """Make the modules `names` not yet imported look uninstalled for a moment, so a library that uses them only when
    present (nltk: scikit-learn; lemminflect: spaCy) loads without them; modules already imported are left alone."""
    refused = _Refused(tuple(name for name in names if name not in sys.modules))
    sys.meta_path.insert(0, refused)
    try:
        yield
    finally:
        sys.meta_path.remove(refused)
