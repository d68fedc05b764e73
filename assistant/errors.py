"""Errors a user can act on; their messages are shown as they are, without a traceback."""


class AssistantError(Exception):
    """Base class: the message says what went wrong and what to do about it."""


class CorpusError(AssistantError, ValueError):
    """A corpus file that cannot be read; the message names the file and line."""


class IndexNotFoundError(AssistantError):
    """No complete index of that name exists yet."""


class IndexMismatchError(AssistantError):
    """The index was built with settings that differ from the current ones."""


class StoreUnavailableError(AssistantError):
    """The Chroma store (on disk or a server) cannot be opened."""


class StoreDamagedError(StoreUnavailableError):
    """The embedded store's database fails SQLite's own check: nothing can be answered from it until it is rebuilt."""


class QuestionError(AssistantError, ValueError):
    """The question is empty, too long or otherwise unusable."""


class ModelError(AssistantError):
    """The chat model failed; `reason` is a short, secret-free explanation."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def native_panic(exc: BaseException) -> bool:
    """Whether `exc` is a Rust panic surfacing from a native library (Chroma's pyo3 `PanicException`).

    It derives from `BaseException`, so `except Exception` misses it; a damaged store raises it.
    """
    return type(exc).__name__ == "PanicException"


def component_failure(exc: BaseException) -> bool:
    """Whether `exc` is a component failing (any `Exception`, or a native panic), not an interrupt or an exit."""
    return isinstance(exc, Exception) or native_panic(exc)
