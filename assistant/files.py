"""Files: written so that readers see the old version or the new one, never half of either; vectors read by row.

Saved vectors (the embedding cache, a build's chunk vectors) are read with
`pread`, not memory-mapped: a build or a filtered search may touch many rows,
and the pages of a mapping stay in the process's RSS once touched.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


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


class NpyRows:
    """The rows of a saved float32 `.npy` matrix, read with `pread` (one system call per run of consecutive rows)."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb")
        try:
            version = np.lib.format.read_magic(self._file)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran_order, dtype = read_header(self._file)
            if fortran_order or dtype != np.float32 or len(shape) != 2:
                raise ValueError(f"{path.name} holds {dtype} {shape}, not float32 rows")
            self._offset = self._file.tell()
        except BaseException:
            self._file.close()
            raise
        self.rows, self.dimension = shape
        self._row_bytes = self.dimension * 4

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows `start` to `stop` (exclusive), as a fresh array."""
        size = (stop - start) * self._row_bytes
        data = os.pread(self._file.fileno(), size, self._offset + start * self._row_bytes)
        if len(data) != size:
            raise ValueError(f"{self._file.name} is shorter than its header says")
        return np.frombuffer(data, dtype=np.float32).reshape(stop - start, self.dimension)

    def take(self, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The given rows, sorted and without repeats, and their vectors in that order."""
        order = np.unique(np.asarray(rows, dtype=np.int64))
        if not len(order):
            return order, np.zeros((0, self.dimension), dtype=np.float32)
        breaks = np.flatnonzero(np.diff(order) != 1) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [len(order)]))
        matrix = np.vstack([self.read(int(order[a]), int(order[b - 1]) + 1) for a, b in zip(starts, ends)])
        return order, matrix

    def close(self) -> None:
        self._file.close()
