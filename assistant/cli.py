"""The `assistant` command: build the index, ask from the shell, serve the web UI."""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import NoReturn, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from assistant.answer.table import Table
from assistant.errors import AssistantError
from assistant.infra import memory
from assistant.settings import Settings

app = typer.Typer(
    help="Grounded question answering over research-paper abstracts.\n\n"
    "Quick start: `assistant index` once, then `assistant ask \"Is there work on X?\"` or `assistant serve`.\n"
    "Configuration comes from environment variables and `.env` (see .env.example).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def _settings(**overrides: object) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        _fail(f"invalid configuration: {problems}", code=2)


def _fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


@app.callback()
def main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log what happens, step by step.")) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("chromadb", "httpx", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@app.command()
def index(
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="File or folder of abstracts (.txt, .jsonl, .csv). Default: CORPUS_PATH, the shipped ICML 2024 sample."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Build even if the corpus and settings are unchanged."),
    collection: Optional[str] = typer.Option(None, "--collection", help="Index name (COLLECTION); several can live side by side."),
    metadata: Optional[Path] = typer.Option(None, "--metadata", help="JSONL/CSV with abstract plus title, authors, url, openreview, pmlr, year, status; matched to the corpus by abstract text (METADATA_PATH)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Build the search index from a corpus (skipped when nothing changed)."""
    from assistant.indexing.indexer import build_index

    settings = _settings(collection=collection)
    try:
        result = build_index(settings, corpus, rebuild=rebuild, progress=not quiet, metadata_path=metadata)
    except AssistantError as exc:
        _fail(str(exc))
    out.print(result.read, highlight=False)
    if result.metadata:
        out.print(result.metadata.summary(), highlight=False)
        for kind, labels in (("unmatched", result.metadata.unmatched), ("ambiguous", result.metadata.ambiguous)):
            for label in labels[:10]:
                out.print(f"  {kind}: {label}", highlight=False, markup=False)
    out.print(result.summary(), highlight=False)


@app.command()
def ask(
    question: str = typer.Argument(..., help="Your question, in quotes."),
    k: Optional[int] = typer.Option(None, "-k", "--top-k", min=1, max=50, help="How many papers to retrieve (TOP_K)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full answer as JSON (text, citations, sources, timings)."),
    history: list[str] = typer.Option([], "--history", help="An earlier question of the conversation; repeat for several."),
    collection: Optional[str] = typer.Option(None, "--collection", help="Which index to ask (COLLECTION)."),
    status: list[str] = typer.Option([], "--status", help="Only papers with this status (Oral, Spotlight, Poster); repeatable."),
    author: str = typer.Option("", "--author", help="Only papers with an author whose name contains this."),
    title: str = typer.Option("", "--title", help="Only papers whose title contains these words."),
    table: Optional[bool] = typer.Option(
        None, "--table/--no-table", help="A comparison table of the cited papers: always, or never (default: for lists and comparisons)."
    ),
) -> None:
    """Ask one question and print the answer with its cited papers."""
    from assistant.answer.result import QUOTES_KEPT, Evidence
    from assistant.engine import Assistant, call_options

    try:
        chosen = {} if table is None else {"answer_table": "always" if table else "never"}
        options = call_options(None, k, {"status": status, "author": author, "title": title}, chosen)
        assistant = Assistant(_settings(collection=collection))
        if as_json:
            answer = assistant.ask(question, history, options=options)
            sys.stdout.write(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2) + "\n")
            return
        answer, evidence = None, None
        for piece in assistant.stream(question, history, options=options):
            if isinstance(piece, str) and evidence is not None and evidence.restated_by(piece):
                out.print(f"[dim]{QUOTES_KEPT}[/]", highlight=False)
            elif isinstance(piece, str):
                sys.stdout.write(piece)
                sys.stdout.flush()
            elif isinstance(piece, Evidence):  # shown at once; the model's answer follows, numbered the same way
                evidence = piece
                out.print("[dim]From the abstracts:[/]", highlight=False)
                out.print(piece.text, highlight=False, markup=False)
                out.print("\n[dim]Answer (the model is reading them):[/]", highlight=False)
            else:
                answer = piece
    except AssistantError as exc:
        _fail(str(exc))
    assert answer is not None
    sys.stdout.write("\n")
    if answer.citations:
        out.print("\n[bold]Cited papers[/]")
        for number, paper in enumerate(answer.citations, start=1):
            out.print(f"[{number}] {paper.title or paper.label}" + (f"  {paper.url}" if paper.url else ""), highlight=False, markup=False)
    if answer.table:
        out.print(_table(answer.table))
    if answer.caveat:
        out.print(f"[yellow]{escape(answer.caveat)}[/]", highlight=False)
    out.print(f"[dim]{answer.model} · confidence {answer.confidence_label} · {answer.timings.get('total', 0.0) * 1000:.0f} ms[/]")


@app.command()
def info(collection: Optional[str] = typer.Option(None, "--collection", help="Which index (COLLECTION).")) -> None:
    """Show the index in use: where it is, what it was built from and with which settings."""
    from assistant.engine import Assistant

    settings = _settings(collection=collection)
    try:
        manifest = Assistant(settings).manifest
    except AssistantError as exc:
        _fail(str(exc))
    sys.stdout.write(json.dumps(manifest.__dict__, indent=2, sort_keys=True) + "\n")


@app.command("eval")
def evaluate(
    questions: Path = typer.Option(Path("eval/dev.jsonl"), "--questions", help="Question set (JSONL, the development set's format)."),
    config: list[str] = typer.Option(["default"], "--config", help="Configuration to run; repeat to compare (default, hybrid, dense, bm25, hybrid-k3, hybrid-k10, hybrid-rerank, model)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for report.json, report.md, per_question.csv and plots (default eval/runs/<time>)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N questions."),
    types: list[str] = typer.Option([], "--types", help="Only these question types (single, keyword, multi, none, followup); repeatable."),
    collection: Optional[str] = typer.Option(None, "--collection", help="Which index to evaluate (COLLECTION)."),
    after: Optional[str] = typer.Option(None, "--after", help="Ask every question after this one and its answer, as a chat's later turn."),
) -> None:
    """Score retrieval, citations, abstention and latency on a question set, side by side per configuration."""
    try:
        from assistant.evaluation import harness
        from assistant.evaluation.report import comparison_rows, kinds
    except ImportError as exc:
        _fail(f"evaluation needs the eval extra ({exc.name}); install it with: pip install -e '.[eval]'")
    from rich.table import Table

    settings = _settings(collection=collection)
    try:
        report = harness.run(questions, config, out_dir or harness.default_out_dir(), limit=limit, types=types or None, settings=settings, after=after)
    except AssistantError as exc:
        _fail(str(exc))
    for block in ["overall", *kinds(report)]:
        table = Table(title=f"{questions} · {block} · deltas against {config[0]}")
        for column in ["metric", *config]:
            table.add_column(column, justify="left" if column == "metric" else "right")
        for row in comparison_rows(report, block):
            if block == "overall" or row[1] != "–":
                table.add_row(*row)
        out.print(table)
    if report.unmatched_gold:
        err.print(f"{len(report.unmatched_gold)} gold entries matched no indexed paper (listed in report.md)")
    out.print(f"Reports in {report.out_dir}")


@app.command()
def serve(
    host: Optional[str] = typer.Option(None, help="Interface to bind (UI_HOST, default 127.0.0.1)."),
    port: Optional[int] = typer.Option(None, help="Port (UI_PORT, default 7860)."),
) -> None:
    """Serve the web chat UI, an OpenAI-compatible endpoint (/v1) and a JSON API (/api) on one port.

    Builds the index first if there is none.
    """
    from assistant.indexing.indexer import ensure_index

    settings = _settings(ui_host=host, ui_port=port)
    try:
        ensure_index(settings)
        from ui.app import launch
    except AssistantError as exc:
        _fail(str(exc))
    except ImportError as exc:
        _fail(f"the web UI needs Gradio ({exc}); install it with: pip install -e '.[ui]'")
    signal.signal(signal.SIGTERM, _interrupt)  # so SIGTERM shuts down like Ctrl-C: the embedded model server is stopped too
    memory.limit_arenas()
    try:
        launch(settings)
    except KeyboardInterrupt:  # uvicorn stops gracefully, then hands the signal back
        err.print("stopped")


@app.command()
def mcp(collection: Optional[str] = typer.Option(None, "--collection", help="The index its tools answer from by default (COLLECTION).")) -> None:
    """Serve the tools ask, search_papers and get_paper to an MCP client over stdio (desktop assistants, agents).

    The same tools are at /mcp on `assistant serve`'s port. Builds the index first if there is none.
    """
    from assistant.indexing.indexer import ensure_index

    settings = _settings(collection=collection)
    try:
        ensure_index(settings, progress=False)
        from assistant.engine import Assistant
        from assistant.serve.indexes import Indexes
        from assistant.serve.mcp_tools import build
    except AssistantError as exc:
        _fail(str(exc))
    except ImportError as exc:
        _fail(f"the MCP server needs the server extra ({exc}); install it with: pip install -e '.[ui]'")
    build(Indexes(Assistant(settings))).run("stdio")


def _table(table: Table) -> RichTable:
    """The comparison table for a terminal: a row per paper, its cells wrapped in their columns."""
    shown = RichTable(title="Side by side", show_lines=True, expand=True)
    for label in ["Paper", *table.labels]:
        shown.add_column(label, overflow="fold")
    for row in table.rows:
        shown.add_row(Text(f"[{row.number}] {row.title}"), *(Text(table.cell(row, i)) for i in range(len(table.columns))))
    return shown


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    app()
