"""Papers → llama-index nodes, split on sentence boundaries only when an abstract is long.

Chunk sizes are counted in `cl100k_base` tokens (shipped inside
llama-index-core, so nothing is downloaded). Each node carries its paper's id
and position, so retrieval can group chunks back into papers; the first also
carries the paper's metadata, and its abstract is stored once per paper.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from assistant.ingest.papers import Paper
from assistant.text.naming import author_key
from assistant.text.sentences import sentence_splitter, sentence_starts
from assistant.text.words import names_in

if TYPE_CHECKING:
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import TextNode

TOKENIZER = "cl100k_base"  # what llama-index-core's get_tokenizer() loads offline
_SPLIT_MARGIN = 16  # tokens: an abstract this far under the chunk size is one chunk (checked on all 3,074 abstracts)



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

    sentence_splitter()  # punkt, loaded without nltk's needless imports
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
    """One node per abstract unless it exceeds `chunk_size` tokens; ids are `<paper_id>:<position>`.

    The first node carries the paper's metadata; its abstract too when the node holds only part of it (a node
    that is the whole abstract has it as its text, so Chroma stores one copy, not three).
    """
    from llama_index.core import Document
    from llama_index.core.schema import TextNode

    split = splitter(chunk_size, chunk_overlap)
    nodes: list[TextNode] = []
    for paper in papers:
        meta = paper_metadata(paper)
        if count_tokens(paper.abstract) <= chunk_size - _SPLIT_MARGIN:  # what the splitter would return, without its cost
            pieces = [paper.abstract]
        else:
            document = Document(text=paper.abstract, metadata=meta, excluded_embed_metadata_keys=list(meta), excluded_llm_metadata_keys=list(meta))
            pieces = [piece.text for piece in split.get_nodes_from_documents([document])]
        starts = sentence_starts(paper.abstract)
        for position, text in enumerate(pieces):
            node_meta = {**meta, "position": position, "n_chunks": len(pieces), "abstract_starts": starts}
            if text != paper.abstract:
                node_meta["chunk_starts"] = sentence_starts(text)
            if position or text == paper.abstract:  # stored once: as the first chunk's metadata, or as its text
                del node_meta["abstract"]
            if position:
                del node_meta["abstract_starts"]
            nodes.append(
                TextNode(
                    id_=f"{paper.paper_id}:{position}",
                    text=text,
                    metadata=node_meta,
                    excluded_embed_metadata_keys=list(node_meta),
                    excluded_llm_metadata_keys=list(node_meta),
                )
            )
    return nodes


def lexical_keys(meta: dict[str, Any]) -> list[str]:
    """A paper's keys in the names table beside its text's names, on its first chunk: the names in its title
    ("DiracDiffusion") and its authors' surnames ("@hvarfner"), so a question naming the paper by either finds it.

    BM25 stays over the abstracts' own words: titles there shifted which papers the answer/abstain judge reads.
    """
    if meta.get("position", 0) != 0:
        return []
    authors = json.loads(meta["authors"]) if meta.get("authors") else []
    return [*names_in(meta.get("title") or ""), *(author_key(author) for author in authors)]


def paper_record(text: str, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The stored metadata of a paper, with its abstract, from its first chunk (None for any other chunk)."""
    if meta.get("position", 0) != 0:
        return None
    return {**{k: v for k, v in meta.items() if k != "chunk_starts"}, "abstract": meta.get("abstract", text)}
