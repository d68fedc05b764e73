"""Papers → llama-index nodes, split on sentence boundaries only when an abstract is long.

Chunk sizes are counted in `cl100k_base` tokens (shipped inside
llama-index-core, so nothing is downloaded). Each node carries its paper's id
and position, so retrieval can group chunks back into papers; the first also
carries the paper's abstract and metadata, stored once per paper.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from assistant.sentences import sentence_starts
from assistant.types import Paper

if TYPE_CHECKING:
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import TextNode

TOKENIZER = "cl100k_base"  # what llama-index-core's get_tokenizer() loads offline



def count_tokens(text: str) -> int:
    """Tokens in `text` under `cl100k_base`, read from llama-index-core's bundled tiktoken cache.

    llama-index is imported here and in the functions below, not at the top: answering from a built index
    (extractive) never needs it, and importing it is ~0.8 s of a cold start.
    """
    from llama_index.core.utils import get_tokenizer

    return len(get_tokenizer()(text))


def splitter(chunk_size: int, chunk_overlap: int) -> SentenceSplitter:
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.utils import get_tokenizer

    return SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, tokenizer=get_tokenizer())


def paper_metadata(paper: Paper) -> dict[str, Any]:
    """Flat metadata (Chroma accepts only scalars) describing a paper."""
    meta: dict[str, Any] = {
        "paper_id": paper.paper_id,
        "label": paper.label,
        "abstract": paper.abstract,
        "truncated": paper.truncated,
        "source": paper.source,
    }
    optional = {"title": paper.title, "url": paper.url, "year": paper.year, "status": paper.status}
    meta.update({key: value for key, value in optional.items() if value is not None})
    if paper.authors:
        meta["authors"] = json.dumps(paper.authors)
    if paper.links:
        meta["links"] = json.dumps(paper.links)
    return meta


def paper_from_metadata(meta: dict[str, Any]) -> Paper:
    """Inverse of `paper_metadata`."""
    return Paper(
        paper_id=meta["paper_id"],
        label=meta.get("label", ""),
        abstract=meta.get("abstract", ""),
        title=meta.get("title"),
        authors=json.loads(meta["authors"]) if meta.get("authors") else None,
        url=meta.get("url"),
        year=meta.get("year"),
        status=meta.get("status"),
        links=json.loads(meta["links"]) if meta.get("links") else None,
        truncated=bool(meta.get("truncated", False)),
        source=meta.get("source", ""),
    )


def chunk_papers(papers: list[Paper], chunk_size: int, chunk_overlap: int) -> list[TextNode]:
    """One node per abstract unless it exceeds `chunk_size` tokens; ids are `<paper_id>:<position>`."""
    from llama_index.core import Document
    from llama_index.core.schema import TextNode

    split = splitter(chunk_size, chunk_overlap)
    nodes: list[TextNode] = []
    for paper in papers:
        meta = paper_metadata(paper)
        document = Document(
            text=paper.abstract,
            metadata=meta,
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=list(meta),
        )
        pieces = split.get_nodes_from_documents([document])
        starts = sentence_starts(paper.abstract)
        for position, piece in enumerate(pieces):
            meta = {**piece.metadata, "position": position, "n_chunks": len(pieces), "abstract_starts": starts}
            if piece.text != paper.abstract:
                meta["chunk_starts"] = sentence_starts(piece.text)
            if position:  # the abstract lives on the first chunk only: storage grows with its length, not its square
                del meta["abstract"], meta["abstract_starts"]
            nodes.append(
                TextNode(
                    id_=f"{paper.paper_id}:{position}",
                    text=piece.text,
                    metadata=meta,
                    excluded_embed_metadata_keys=list(meta),
                    excluded_llm_metadata_keys=list(meta),
                )
            )
    return nodes
