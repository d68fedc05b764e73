"""Files: written so that readers see the old version or the new one, never half of either; vectors read by row.

Saved vectors (the embedding cache, a build's chunk vectors) are read from a
mapping whose touched pages are let go at once: a build or a filtered search
may touch many rows, and a plain mapping's pages stay in the process's RSS.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

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


def write_npy_header(out: BinaryIO, shape: tuple[int, int]) -> None:
    """The header of a float32 `.npy` matrix of `shape`, whose rows the caller then writes raw (what `NpyRows` reads)."""
    np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": shape})


class NpyRows:
    """The rows of a saved float32 `.npy` matrix, copied out of a read-only mapping whose pages are then let go.

    Numpy gathers scattered rows from the mapping in C (~0.3 µs a row, where a `pread` a row costs ~4 µs in
    Python); `MADV_DONTNEED` then drops the touched pages from this process (they stay in the page cache), so
    passing over every row never adds the file's size to the RSS.
    """

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as file:
            version = np.lib.format.read_magic(file)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran_order, dtype = read_header(file)
            if fortran_order or dtype != np.float32 or len(shape) != 2:
                raise ValueError(f"{path.name} holds {dtype} {shape}, not float32 rows")
            offset = file.tell()
            self.rows, self.dimension = shape
            self._row_bytes = self.dimension * 4
            if os.fstat(file.fileno()).st_size < offset + self.rows * self._row_bytes:
                raise ValueError(f"{path.name} is shorter than its header says")
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self.rows else None
        self._offset = offset
        self._matrix = (
            np.frombuffer(self._map, dtype=np.float32, count=self.rows * self.dimension, offset=offset).reshape(shape)
            if self._map is not None else np.zeros((0, self.dimension), dtype=np.float32)
        )

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows `start` to `stop` (exclusive), as a fresh array."""
        rows = np.array(self._matrix[start:stop])
        self._let_go(start, stop)
        return rows

    def take(self, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The given rows, sorted and without repeats, and their vectors in that order."""
        order = np.unique(np.asarray(rows, dtype=np.int64))
        matrix = self._matrix[order]  # fancy indexing copies
        if len(order):
            self._let_go(int(order[0]), int(order[-1]) + 1)
        return order, matrix

    def _let_go(self, start: int, stop: int) -> None:
        """Drop the mapped pages holding rows `start` to `stop` from this process."""
        if self._map is None or stop <= start:
            return
        first = (self._offset + start * self._row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
        self._map.madvise(mmap.MADV_DONTNEED, first, self._offset + stop * self._row_bytes - first)

    def close(self) -> None:
        del self._matrix  # the mapping cannot close while an array still points into it
        if self._map is not None:
            self._map.close()
