"""Papers → a build: the Chroma store, BM25 and names, the paper table and the search files beside it."""
