"""A question → ranked papers: open builds, hybrid search and fusion, filters, the reader's rerank, the answer/abstain judge."""
