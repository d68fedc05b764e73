"""Giving memory back to the operating system after a large, short-lived allocation.

CPython frees objects into its own and glibc's heaps, which keep the pages:
reading 100,000 abstracts left ~150 MB resident that nothing used. glibc's
`malloc_trim` returns them; elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def release() -> None:
    """Collect garbage, then hand free heap pages back to the OS (glibc only)."""
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
