"""Writing a file so that readers see the old version or the new one, never half of either."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: Path, write: Callable[[Path], None], prefix: str = ".tmp-") -> None:
    """Call `write` on a temporary file beside `path`, then rename it over `path`.

    The temporary file is removed whatever happens, so a failure or an
    exception in `write` leaves `path` as it was and no litter behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
