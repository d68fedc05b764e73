"""One typed settings object, read from the environment and `.env`, in groups by concern.

Every knob the engine has lives here so that the CLI, the UI, the Python API
and the evaluation harness all agree on what a configuration is. `Settings`
is all groups at once; a component that needs one concern takes that group's
type (`StorageSettings`, `ChatSettings`, …), and a full `Settings` is one of each.
Field names map to upper-case environment variables (`llm_model` → `LLM_MODEL`).

Shipped files (prompts, the sample corpus and its vectors) are read from the
checkout when running from one, where `prompts/` and `index/` are the places to
edit them, and from the package's bundled copy when installed from a wheel.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent
_BUNDLED = PACKAGE_DIR / "bundled"  # present only in an installed wheel (pyproject.toml maps prompts/ and index/ there)
if _BUNDLED.is_dir():
    PROMPTS_DIR = _BUNDLED / "prompts"
    _SAMPLE = _BUNDLED / "sample"
    DATA_ROOT = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "paper-assistant"
else:
    PROMPTS_DIR = PROJECT_ROOT / "prompts"
    _SAMPLE = PROJECT_ROOT / "index"
    DATA_ROOT = PROJECT_ROOT / "index"
SAMPLE_CORPUS = _SAMPLE / "corpus"  # the shipped ICML 2024 sample
SAMPLE_OF = "ICML 2024's 2,634 papers"  # what the sample is drawn from, for the UI's scope line
SAMPLE_FACTS = _SAMPLE / "papers.jsonl"  # its titles, authors, links (no abstracts): scripts/sample_facts.py
SAMPLE_VECTORS = _SAMPLE / "vectors"  # its chunks' and abstracts' vectors: scripts/sample_vectors.py

Provider = Literal["auto", "openai", "openai-compatible", "local", "extractive"]


class StorageSettings(BaseModel):
    """Where the index, its caches and the models live, and which index a process uses."""

    collection: str = Field(
        "icml2024",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{1,40}[A-Za-z0-9]$",
        description="Name of the index; several can live side by side.",
    )
    index_dir: Path = Field(
        DATA_ROOT / "store", description="Where the embedded Chroma store lives."
    )
    cache_dir: Path = Field(
        DATA_ROOT / "cache", description="Embedding cache (by content hash)."
    )
    model_dir: Path = Field(DATA_ROOT / "models", description="Where the embedded model's file is assembled.")
    prompts_dir: Path = Field(PROMPTS_DIR, description="Folder of prompt templates.")
    shipped_vectors: bool = Field(
        True, description="Take the vectors the repository ships for the sample's chunks and abstracts (index/vectors/) instead of "
        "embedding those texts again; off, everything is embedded (benchmarks of embedding speed turn it off).",
    )
    chroma_host: str | None = Field(None, description="Chroma server host; unset = embedded store.")
    chroma_port: int = Field(8000, ge=1, le=65535, description="Chroma server port.")

    def shipped_vectors_for(self, cache_file: Path) -> Path | None:
        """The shipped counterpart of a cache file in `cache_dir` (same name in SAMPLE_VECTORS), unless SHIPPED_VECTORS is off."""
        return SAMPLE_VECTORS / cache_file.name if self.shipped_vectors else None


class IndexSettings(BaseModel):
    """What a build is made of: the corpus, its metadata, the embedding model and the chunking (changing these needs a rebuild)."""

    corpus_path: Path = Field(
        SAMPLE_CORPUS,
        description="File or folder of abstracts (.txt paragraphs, .jsonl, .csv).",
    )
    metadata_path: Path | None = Field(None, description="JSONL/CSV with abstract + title/authors/url… to attach to the corpus.")
    embed_model: Literal["minilm", "wordllama"] = Field(
        "minilm", description="Dense model of the index: minilm (all-MiniLM-L6-v2, ONNX; understands paraphrase) or wordllama (fast, static)."
    )
    embed_batch_size: int = Field(64, ge=1, description="Chunks embedded per batch while indexing.")
    chunk_size: int = Field(512, ge=64, description="Max tokens (cl100k_base) per chunk.")
    chunk_overlap: int = Field(64, ge=0, description="Tokens shared by consecutive chunks of a long abstract; below CHUNK_SIZE.")

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_below_size(cls, value: int, info: ValidationInfo) -> int:
        size = info.data.get("chunk_size", 512)
        if value >= size:
            raise ValueError(f"CHUNK_OVERLAP ({value}) must be smaller than CHUNK_SIZE ({size})")
        return value


class RetrievalSettings(BaseModel):
    """How a question finds papers: the first stage, fusion and the reader."""

    retrieval_mode: Literal["hybrid", "dense", "bm25"] = Field("hybrid", description="hybrid: dense + BM25 + exact names, fused; or one of dense and bm25 alone.")
    top_k: int = Field(5, ge=1, le=50, description="Papers returned per question.")
    list_top_k: int = Field(
        10, ge=1, le=50, description="Papers returned for a question that asks for several (\"which papers…\"): lists reach deeper "
        "(their papers in the top 10 of the realistic questions: 0.92 → 0.96 held out, 0.47 → 0.76 on our own)."
    )
    candidates: int = Field(50, ge=5, description="Chunks each retriever proposes before fusion.")
    rrf_k: int = Field(60, ge=1, description="Reciprocal-rank-fusion constant.")
    dense_weight: float = Field(
        6.0, ge=0.0, description="Weight of the dense ranking in the fusion (BM25 and exact names have 1); chosen on half the hard questions."
    )
    reranker: Literal["auto", "none", "mpnet"] = Field(
        "auto", description="Second stage, the reader: mpnet (all-mpnet-base-v2) re-reads the best candidates, and its cosine "
        "decides whether they answer the question; auto = mpnet when installed (the rerank extra) for indexes of up to RERANK_MAX_PAPERS.",
    )
    rerank_max_papers: int = Field(
        20_000, ge=0, description="Largest index RERANKER=auto reads with mpnet (a bigger build says it is off): its int8 copy embeds ~13 abstracts/s at index time on 2 cores (20,000 in ~25 min), float32 ~3."
    )
    reader_precision: Literal["auto", "float32", "bfloat16", "int8"] = Field(
        "auto", description="How a build embeds abstracts for the reader: int8 runs its NNCF-quantized copy under OpenVINO "
        "(12.6 abstracts/s on 2 EPYC cores, vectors at cosine ≥ 0.99 of float32's); bfloat16 runs it under torch where the CPU "
        "multiplies bfloat16 natively (AMX or AVX512-BF16; 6.2 a second there, 18.6 with AMX; cosine ≥ 0.9998); float32 "
        "under onnxruntime (3.2). auto = int8 with openvino and nncf installed (the rerank extra), else bfloat16 on such "
        "a CPU with torch, else float32. Questions: unless float32, OpenVINO encodes them in bfloat16 on such a CPU (~20 against ~34 ms).",
    )
    rerank_depth: int = Field(10, ge=2, le=100, description="Candidates the reader re-scores.")
    reader_weight: float = Field(
        2.0, gt=0.0, description="Weight of the reader's order where it is fused with the first stage's (which weighs 1): "
        "a paraphrase the first stage ranks second to fifth comes first when the reader is sure of it.",
    )
    index_check_s: float = Field(10.0, ge=0.0, description="How often a running app looks for a newer build.")


class AnsweringSettings(BaseModel):
    """How an answer is chosen: quoting, and when to answer, decline or overrule a model's refusal."""

    answer_sentences: int = Field(4, ge=1, le=20, description="Sentences the extractive answerer quotes.")
    abstain_threshold: float = Field(
        0.47, description="Abstain when coverage + ABSTAIN_COSINE_WEIGHT * best cosine falls below this."
    )
    abstain_cosine_weight: float = Field(1.0, ge=0.0, description="Weight of the best cosine in lexical relevance (coverage + weight * cosine).")
    confident_relevance: float = Field(
        0.9,
        description="Lexical relevance above which a chat model's refusal (NO_ANSWER) is overruled with an extractive "
        "answer (the question's rare words are nearly all in the best abstract).",
    )
    model_refusals: Literal["auto", "final", "checked"] = Field(
        "auto",
        description="final: a chat model reads the sources and its NO_ANSWER stands; checked: only questions the "
        "relevance gate admits reach it, and its NO_ANSWER is overruled where the E5 check matched the question. "
        "auto: checked for the embedded 1.5B model (it declines 85% of answerable paraphrases), final for others.",
    )
    prefilter_threshold: float = Field(
        0.35,
        description="With a chat model, questions under this lexical relevance abstain before the model is asked; "
        "above it the model reads the sources and decides.",
    )
    reader_threshold: float = Field(
        0.45, description="With the reader on: abstain when its best cosine over the top 3 papers falls below this "
        "(unless lexical relevance reaches SEMANTIC_CHECK_BELOW); calibrated on the odd-numbered hard questions, dev and own questions.",
    )
    unused_noun_weight: float = Field(
        0.3, ge=0.0, description="With the reader on: subtracted from its best cosine, times the share of the question's topic-word "
        "weight on nouns no paper of the index uses. Refusals of answerable questions stay as they are up to 0.6 on both "
        "splits of `python -m benchmarks.calibrate`; at 0.3 held-out out-of-corpus questions abstain 0.86 (0.74 without).",
    )
    relevance_check: Literal["e5", "none"] = Field(
        "e5", description="Without the reader, the second opinion between ABSTAIN_THRESHOLD and SEMANTIC_CHECK_BELOW: e5 (bundled model) or none."
    )
    semantic_check_below: float = Field(0.84, description="Lexical relevance under which the E5 check has the last word.")
    semantic_threshold: float = Field(
        0.8425, description="Abstain when the E5 cosine of question and best abstract falls below this (checked band only)."
    )
    max_question_chars: int = Field(4000, ge=16, description="Longest question accepted, in characters.")
    answer_table: Literal["auto", "always", "never"] = Field(
        "auto", description="A comparison table beside the answer (one row per cited paper: problem, approach, data, result, "
        "each cell a sentence of its abstract): auto for a list or comparison citing two or more papers; always; never.",
    )


class ChatSettings(BaseModel):
    """Which chat model writes answers and how it is called: hosted, any OpenAI-compatible server, or the embedded one."""

    llm_provider: Provider = Field(
        "auto",
        description="auto: OPENAI_BASE_URL if set, else OpenAI if OPENAI_API_KEY is set, else the embedded local model.",
    )
    openai_api_key: SecretStr | None = Field(None, description="Key for OpenAI, or for an OpenAI-compatible server that wants one; never logged.")
    openai_base_url: str | None = Field(None, description="Any OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    llm_model: str | None = Field(None, description="Model name; default gpt-4o-mini for OpenAI, the server's first model otherwise.")
    llm_temperature: float = Field(0.1, ge=0.0, le=2.0, description="Sampling temperature of the chat model.")
    llm_max_tokens: int = Field(400, ge=16, le=8192, description="Longest answer a chat model writes, in tokens.")
    llm_timeout_s: float = Field(60.0, gt=0, description="Longest wait for a response, and for the whole answer.")
    llm_max_retries: int = Field(2, ge=0, le=10, description="Retries (with backoff) on connection errors, 429 and 5xx.")
    reading: bool = Field(
        True, description="A chat model first reads the sources and says, as JSON the server enforces, which sentences answer the "
        "question, that the paper lacks the asked detail, or that nothing covers it; the answer follows from that checked verdict. "
        "false: it writes a free-text answer from the sources.",
    )
    context_tokens: int = Field(3000, ge=256, description="Token budget (cl100k_base) for sources, history and question.")
    source_sentences: int = Field(0, ge=0, le=50, description="Sentences of each source a chat model reads: its best ones; 0 = the whole abstract.")
    local_model_port: int = Field(8765, ge=1, le=65535, description="Port of the embedded llama.cpp server.")
    local_threads: int = Field(2, ge=1, description="CPU threads of the embedded model's server.")
    local_context: int = Field(4096, ge=512, description="Context window of the embedded model's server, in tokens.")
    local_context_tokens: int = Field(
        480, ge=256, description="CONTEXT_TOKENS for the embedded model, whose prompt reading (~50 tok/s) sets the wait: the "
        "reading prompt's fixed ~240 tokens are read once and cached, leaving ~200 for sources and question (raise it with READING=false)."
    )
    local_source_sentences: int = Field(
        2, ge=0, le=50, description="SOURCE_SENTENCES for the embedded model: every prompt token costs it ~17 ms before the first word."
    )
    local_writes: bool = Field(
        False, description="Whether the embedded model, after pointing to the sentences that answer, also writes a short answer "
        "of its own (about 5 s more here, and the part where a 1.5B model invents); false: its answer is the sentences it points to.",
    )
    local_max_tokens: int = Field(200, ge=16, le=8192, description="LLM_MAX_TOKENS for the embedded model (~14 tokens/s here).")


class ServingSettings(BaseModel):
    """The server: the UI, the OpenAI-compatible endpoint and the JSON API on one port."""

    def api_key_list(self) -> list[str]:
        """The keys API_KEYS holds (comma-separated, spaces trimmed); empty when none is set."""
        return [k.strip() for k in self.api_keys.get_secret_value().split(",") if k.strip()] if self.api_keys else []

    api_keys: SecretStr | None = Field(
        None, description="Comma-separated keys; when set, /v1 and /api require `Authorization: Bearer <key>`, and without "
        "UI_AUTH the page and its Gradio API ask for one of them as the password (any user name)."
    )
    api_max_body_bytes: int = Field(1_000_000, ge=1024, description="Largest request body /v1 and /api accept.")
    api_references: bool = Field(
        True, description="End each /v1 answer's content with its references (number, title, authors, year, link), so [n] "
        "resolves in any chat client; a request's `references: false` leaves them to the structured `citations`."
    )
    api_body_timeout_s: float = Field(
        30.0, gt=0, description="Seconds a client may take to send its request body; a slower one gets 408 (/v1, /api) or is "
        "disconnected, so a client sending part of a body cannot hold a connection."
    )
    ui_host: str = Field("127.0.0.1", description="Interface the server binds; 0.0.0.0 exposes it to the network.")
    ui_port: int = Field(7860, ge=1, le=65535, description="Port of the UI, /v1 and /api.")
    ui_auth: SecretStr | None = Field(None, description="user:password to require a login.")
    ui_concurrency: int = Field(4, ge=1, description="Answers computed at once; the rest wait in the queue.")
    ui_queue_size: int = Field(64, ge=1, description="Requests that may wait before new ones are turned away.")


class Settings(BaseSettings, ServingSettings, ChatSettings, AnsweringSettings, RetrievalSettings, IndexSettings, StorageSettings):
    """Configuration of the assistant: every group at once; field names map to upper-case env vars."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", validate_default=True
    )

    def with_overrides(self, **overrides: object) -> Settings:
        """A validated copy with some fields changed (`model_copy` would skip validation)."""
        return type(self).model_validate({**self.model_dump(), **overrides})


GROUPS: tuple[type[BaseModel], ...] = (StorageSettings, IndexSettings, RetrievalSettings, AnsweringSettings, ChatSettings, ServingSettings)


def reference() -> str:
    """Every setting as Markdown, group by group: docs/configuration.md is this text, and a test keeps it so."""
    lines = [
        "# Configuration",
        "",
        "Every setting is read from the environment or `.env` (copy `.env.example`); the variable is the field name in",
        "upper case. Generated from `assistant/settings.py` by `python -m assistant.settings > docs/configuration.md`.",
    ]
    for group in GROUPS:
        lines += ["", f"## {group.__name__}", "", (group.__doc__ or "").strip(), "", "| variable | type | default | what it does |", "|---|---|---|---|"]
        for name, field in group.model_fields.items():
            default = field.default
            if isinstance(default, Path):
                default = "./" + str(default.relative_to(PROJECT_ROOT)) if default.is_relative_to(PROJECT_ROOT) else str(default)
            kind = str(field.annotation).replace("typing.", "").replace("pathlib.", "").replace("pydantic.types.", "")
            kind = kind.removeprefix("<class '").removesuffix("'>").replace("|", "or")
            description = (field.description or "").replace("|", "\\|")
            lines.append(f"| `{name.upper()}` | `{kind}` | `{default}` | {description} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
