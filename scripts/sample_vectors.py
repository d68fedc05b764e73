"""Write index/vectors/: the index model's vectors of the shipped sample's chunks, and the reader's of its abstracts.

A fresh checkout then indexes the sample in seconds, and `assistant serve` reads
it with the reader at once, instead of spending ~1.5 minutes of both cores
embedding 440 abstracts with all-mpnet-base-v2 and 440 chunks with MiniLM.
The files are the same binary caches a build keeps (`vector_cache.VectorFile`,
keyed by text hash, no text), made here from scratch by an ordinary build into
a temporary folder; a build trusts them only once one of them, embedded
again, agrees with the model it runs (`vector_cache.ShippedVectors`). Run when
the sample corpus, its facts file, the chunking or a model changes:

    python scripts/sample_vectors.py
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from assistant.indexing.indexer import build_index
from assistant.models.embeddings import cache_file
from assistant.models.reader import cache_file as reader_cache_file
from assistant.models.vector_cache import files_of
from assistant.settings import SAMPLE_CORPUS, SAMPLE_VECTORS, Settings


def main() -> None:
    settings = Settings()
    shipped = [*files_of(cache_file(SAMPLE_VECTORS, settings.embed_model)), *files_of(reader_cache_file(SAMPLE_VECTORS))]
    for path in shipped:
        path.unlink(missing_ok=True)  # embedded from scratch, not copied from the files being replaced
    with tempfile.TemporaryDirectory(prefix="sample-vectors-") as scratch:
        temp = settings.with_overrides(index_dir=Path(scratch) / "store", cache_dir=Path(scratch) / "cache", reranker="mpnet")
        result = build_index(temp, SAMPLE_CORPUS)
        made = [*files_of(cache_file(temp.cache_dir, temp.embed_model)), *files_of(reader_cache_file(temp.cache_dir))]
        SAMPLE_VECTORS.mkdir(parents=True, exist_ok=True)
        for source, target in zip(made, shipped):
            shutil.copyfile(source, target)
    size = sum(path.stat().st_size for path in shipped)
    print(f"{result.manifest.papers} abstracts, {result.manifest.chunks} chunks → {SAMPLE_VECTORS} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
