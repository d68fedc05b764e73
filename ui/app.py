"""The Gradio chat app: streamed, cited answers with the cited papers beside them.

Endpoints with stable `api_name`s for scripts (docs/serving.md, "The web UI"):
- `/ask` (question, history, k) → the answer as JSON (`Answer.to_dict()`).
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import FastAPI

from assistant.answer.result import QUOTES_KEPT, Answer, Evidence
from assistant.engine import Assistant, call_options, message_text
from assistant.errors import AssistantError, QuestionError
from assistant.serve.access import is_key
from assistant.serve.errors import ApiError
from assistant.serve.http_api import create_app
from assistant.serve.indexes import Indexes
from assistant.settings import Settings
from ui.render import (
    answer_with_references,
    bibtex,
    chip_label,
    escape_answer,
    export_csv,
    export_markdown,
    index_choices,
    link_citations,
    panel_html,
    papers_html,
    scope_line,
    status_text,
    table_html,
    unescape_answer,
    without_table,
)

log = logging.getLogger(__name__)

COMPARE_CHOSEN = "Compare these papers"  # the question the compare button asks, before any typed one
EXAMPLES = [
    "Is there work on pruning spiking neural networks?",
    "What is PRepBN and what problem does it solve in Transformers?",
    "Which papers tackle imitation learning from imperfect demonstrations?",
    "How can a grid-based NeRF be compressed?",
]
CSS = """
.paper-card {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 10px; margin-bottom: 8px;}
.paper-title {font-weight: 600;} .cite-num {color: var(--color-accent);} .authors {font-size: 0.85em; opacity: 0.8;}
.score {font-size: 0.8em; opacity: 0.7;} .flag {color: #b45309;} .snippet {font-size: 0.9em; margin-top: 4px;}
.snippet mark {background: #fde68a; color: #1f2937;} .dark .snippet mark {background: #854d0e; color: #fef9c3;} .note {font-size: 0.85em; opacity: 0.8;}
.links {font-size: 0.8em;} .status {font-weight: 600;}
.paper-card.unsupported {border-color: #dc2626;} .unsupported-flag {color: #dc2626; font-size: 0.85em;}
.paper-card.opened {outline: 2px solid var(--color-accent);} a.cite {text-decoration: none; font-weight: 600; padding: 0 1px;}
.turn-question {font-size: 0.85em; opacity: 0.75; margin: 12px 0 4px; border-top: 1px solid var(--border-color-primary); padding-top: 6px;}
.answer-table {overflow-x: auto; margin-top: 8px;} .answer-table table {font-size: 0.82em; border-collapse: collapse;}
.answer-table th, .answer-table td {border: 1px solid var(--border-color-primary); padding: 4px 6px; vertical-align: top; min-width: 9em;}
.answer-table td.paper {font-weight: 600;} .answer-table td.not-stated {opacity: 0.6; font-style: italic;}
#picked {display: none !important;} label.pick {float: right; font-size: 0.8em; opacity: 0.8; cursor: pointer;}
#counter {font-size: 0.8em; opacity: 0.7; text-align: right;} #scope {font-size: 0.9em;}
#chips {gap: 6px; align-items: center; flex-wrap: wrap;} #chips > #counter {margin-left: auto; flex: 0 0 auto;}
.chip {border-radius: 999px !important; min-width: max-content !important; flex: 0 0 auto !important; white-space: nowrap;}
"""


def chat_history(history: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Gradio's chat messages as plain `{"role", "content"}` turns.

    Gradio 6 hands content over as a list of typed parts; assistant turns
    hold the escaped text we displayed, so entities are turned back.
    """
    turns = []
    for message in history:
        content = message_text(message.get("content"))
        if content.strip():
            turns.append({"role": message.get("role", "user"), "content": unescape_answer(without_table(content))})
    return turns


def evidence_reply(evidence: str, answer: str) -> str:
    """The chat bubble while a model writes, and after: the quoted evidence first, the model's answer below it."""
    return f"*From the abstracts:*\n\n{evidence}\n\n*Answer:*\n\n{answer}"


def build_app(assistant: Assistant, indexes: Indexes | None = None) -> gr.Blocks:
    """The Blocks app bound to `assistant` (index opened on the first question); `indexes`: every index it may answer from."""
    settings = assistant.settings
    indexes = indexes or Indexes(assistant)

    def respond(message: str, history: list[dict], k: int, temperature: float, status_filter: list[str], author: str, title: str,
                turns: list[dict], index: str | None, chosen: list[str] | None = None) -> Iterator[tuple]:
        """Stream one answer into the chat; errors become a friendly message, never a traceback.

        An empty or over-long question adds no bubbles: a warning says what to change and the text stays in the box.
        `chosen`: the paper ids the reader ticked, when the question compares exactly those.
        """
        try:
            assistant.check_question(message)
        except QuestionError as exc:
            gr.Warning(str(exc))
            yield list(history or []), gr.skip(), f"⚠ {exc}", turns, message
            return
        history = list(history or []) + [{"role": "user", "content": escape_answer(message)}]  # shown as typed, never as HTML
        shown, evidence, quoted = "", "", ""  # quoted: the quoted papers' table, under the bubble until the answer brings its own
        quotes: Evidence | None = None
        turn = len(turns)
        yield history, gr.skip(), "finding papers…", turns, ""  # the question shows at once
        try:
            filters = {"status": status_filter or [], "author": author or "", "title": title or "", "paper_ids": chosen or []}
            chosen_k = int(k) if int(k) != settings.top_k else None  # left at its default, a list question reaches LIST_TOP_K
            options = call_options(None, chosen_k, filters, {"llm_temperature": float(temperature)})
            target = indexes.get(index) if index else assistant
            for piece in target.stream(message, chat_history(history[:-1]), options=options):
                if isinstance(piece, Answer):
                    turns = [*turns, piece.to_dict()]
                    kept = quotes is not None and quotes.restated_by(piece.text)
                    body = escape_answer(QUOTES_KEPT) if kept else link_citations(escape_answer(piece.text), turn)
                    reply = evidence_reply(evidence, body) if evidence and piece.model != "extractive" else body
                    reply += table_html(piece.table, turn)  # the answer's table takes the quoted papers' place
                    yield history + [{"role": "assistant", "content": reply}], panel_html(turns), status_text(piece), turns, ""
                    return
                if isinstance(piece, Evidence):  # quotes within milliseconds; the model's answer streams in below them
                    quotes = piece
                    evidence = link_citations(escape_answer(piece.text), turn)
                    partial = Answer(text=piece.text, citations=piece.citations, sources=piece.sources, passages=piece.passages, question=message)
                    waiting = f"waiting for the model ({piece.ahead} {'answer' if piece.ahead == 1 else 'answers'} ahead) → " if piece.ahead else ""
                    reading = f"quoted {len(piece.sources)} abstracts → {waiting}writing…"
                    quoted = table_html(piece.table, turn)  # the quoted papers side by side while the model writes
                    yield (history + [{"role": "assistant", "content": evidence_reply(evidence, "…") + quoted}],
                           panel_html([*turns, partial.to_dict()]), reading, turns, "")
                    continue
                shown += QUOTES_KEPT if quotes is not None and quotes.restated_by(piece) else piece
                content = (evidence_reply(evidence, escape_answer(shown)) if evidence else escape_answer(shown)) + quoted
                yield history + [{"role": "assistant", "content": content}], gr.skip(), "writing…", turns, ""
        except (AssistantError, ApiError) as exc:
            note = f"⚠ {getattr(exc, 'message', None) or exc}"
            yield history + [{"role": "assistant", "content": escape_answer(note)}], gr.skip(), note, turns, ""
        except Exception:
            log.exception("unexpected error while answering")
            note = "⚠ Something went wrong while answering; the error was logged. Please try again."
            yield history + [{"role": "assistant", "content": note}], gr.skip(), note, turns, ""

    def compare(message: str, picked: str, history: list[dict], k: int, temperature: float, status_filter: list[str], author: str,
                title: str, turns: list[dict], index: str | None) -> Iterator[tuple]:
        """Compare exactly the papers whose cards are ticked, with the question typed (if any) as what to compare."""
        chosen = [paper_id for paper_id in dict.fromkeys(picked.split(",")) if paper_id.strip()]
        if len(chosen) < 2:
            gr.Warning("Tick “compare” on at least two paper cards first.")
            yield list(history or []), gr.skip(), "Tick at least two papers to compare.", turns, message, picked
            return
        question = COMPARE_CHOSEN + (f": {message.strip()}" if message.strip() else "")
        for output in respond(question, history, k, temperature, status_filter, author, title, turns, index, chosen):
            yield (*output, "")

    def api_ask(question: str, history: list | None, k: int | None) -> dict:
        """Non-streaming answer for scripts: `Answer.to_dict()`, or `{"error": message}`."""
        try:
            return assistant.ask(question, history or [], k=int(k) if k else None).to_dict()
        except AssistantError as exc:
            return {"error": str(exc)}

    def download(name: str, text: str, nothing: str) -> Any:
        """`text` as a file to download, or a warning saying `nothing` when there is nothing to put in it."""
        if not text:
            gr.Warning(nothing)
            return gr.File(visible=False)
        path = Path(tempfile.mkdtemp(prefix="assistant-export-")) / name
        path.write_text(text, encoding="utf-8")
        return gr.File(value=str(path), visible=True)

    def export(turns: list[dict]) -> Any:
        return download("conversation.md", export_markdown(turns) if turns else "", "Nothing to export yet.")

    def export_table(turns: list[dict]) -> Any:
        return download("comparison.csv", export_csv(turns),
                        "No answer has a comparison table yet: ask which papers do something, or how papers compare.")

    def export_bibtex(turns: list[dict]) -> Any:
        return download("references.bib", bibtex(turns), "No paper has been cited yet.")

    def last_answer(turns: list[dict]) -> str:
        if not turns:
            gr.Warning("Nothing to copy yet.")
            return ""
        return answer_with_references(turns[-1])

    limit = settings.max_question_chars
    def scope(index: str | None) -> str:
        name = index or settings.collection
        return scope_line(name, indexes.manifests().get(name))

    def refresh(index: str | None) -> tuple[Any, str]:
        """The selector's entries as the store has them now (an index built since the page was made shows up)."""
        manifests = indexes.manifests()
        chosen = index if index in manifests else settings.collection
        return gr.update(choices=index_choices(manifests), value=chosen), scope_line(chosen, manifests.get(chosen))

    with gr.Blocks(title="Paper assistant") as app:
        with gr.Row(equal_height=True):
            with gr.Column(scale=3):
                gr.Markdown("## Ask the ICML 2024 abstracts")
                scope_md = gr.Markdown("", elem_id="scope")
            index = gr.Dropdown([(settings.collection, settings.collection)], value=settings.collection, label="Index", scale=1,
                                min_width=200, elem_id="index")
        turns = gr.State([])
        with gr.Row():
            with gr.Column(scale=3):
                chat = gr.Chatbot(label="Conversation", height=300, elem_id="chat", sanitize_html=True)
                question = gr.Textbox(placeholder="Is there work on …?", show_label=False, max_lines=6, elem_id="question")
                with gr.Row(elem_id="chips"):  # the filters in force, each removable; the question's length beside them
                    chips = {kind: gr.Button(visible=False, size="sm", elem_id=f"chip-{kind}", elem_classes="chip", scale=0)
                             for kind in ("status", "author", "title")}
                    counter = gr.Markdown(f"0 / {limit:,} characters", elem_id="counter")
                with gr.Row():
                    send = gr.Button("Ask", variant="primary", elem_id="ask")
                    compare_button = gr.Button("Compare ticked papers", elem_id="compare")
                    clear = gr.Button("Clear chat", elem_id="clear")
                picked = gr.Textbox(elem_id="picked", show_label=False, container=False)  # ids of ticked cards, set by HEAD's script
                status = gr.Markdown("Ready.", elem_id="status")
                gr.Examples(EXAMPLES, inputs=question, elem_id="examples")
            with gr.Column(scale=2):
                papers = gr.HTML(papers_html(None), elem_id="papers")
                with gr.Row():
                    export_button = gr.Button("Markdown", size="sm", elem_id="export")
                    bibtex_button = gr.Button("BibTeX", size="sm", elem_id="bibtex")
                    csv_button = gr.Button("Table CSV", size="sm", elem_id="export-csv")
                    copy_button = gr.Button("Copy answer + refs", size="sm", elem_id="copy")
                exported = gr.File(label="Download", visible=False, interactive=False, elem_id="exported")
                copied = gr.Textbox(visible=False)
                with gr.Accordion("Settings and filters", open=False, elem_id="settings"):
                    k = gr.Slider(1, 20, value=settings.top_k, step=1, label="Papers to retrieve (k)")
                    temperature = gr.Slider(0.0, 1.5, value=settings.llm_temperature, step=0.05, label="Temperature (chat models only)")
                    status_filter = gr.CheckboxGroup(["Oral", "Spotlight", "Poster"], label="Only papers with status", elem_id="filter-status")
                    author = gr.Textbox(label="Only papers with an author named", placeholder="e.g. Bengio", elem_id="filter-author")
                    title = gr.Textbox(label="Only papers whose title contains", placeholder="e.g. diffusion", elem_id="filter-title")

        outputs = [chat, papers, status, turns, question]
        inputs = [question, chat, k, temperature, status_filter, author, title, turns, index]
        app.load(refresh, index, [index, scope_md])
        index.change(scope, index, scope_md)
        for kind, field in (("status", status_filter), ("author", author), ("title", title)):
            field.change(lambda value, kind=kind: _chip(kind, value), field, chips[kind], api_visibility="private")
            chips[kind].click(lambda kind=kind: ([] if kind == "status" else "", gr.update(visible=False)), None, [field, chips[kind]],
                              api_visibility="private")
        send.click(respond, inputs, outputs, api_visibility="private")
        compare_button.click(compare, [question, picked, *inputs[1:]], [*outputs, picked], api_visibility="private")
        question.submit(respond, inputs, outputs, api_visibility="private")
        question.change(None, question, counter, js=f"(q) => `${{q.length.toLocaleString('en')}} / {limit:,} characters`" + (
            f" + (q.length > {limit} ? ' — too long' : '')"))
        clear.click(lambda: ([], papers_html(None), "Ready.", [], ""), None, outputs, api_visibility="private")
        export_button.click(export, turns, exported, api_visibility="private")
        bibtex_button.click(export_bibtex, turns, exported, api_visibility="private")
        csv_button.click(export_table, turns, exported, api_visibility="private")
        copy_button.click(last_answer, turns, copied, api_visibility="private").then(
            None, copied, None, js="(text) => { if (text) navigator.clipboard.writeText(text); }"
        )

        api_question = gr.Textbox(visible=False)
        api_history = gr.JSON(visible=False)
        api_k = gr.Number(visible=False)
        api_out = gr.JSON(visible=False)
        api_button = gr.Button(visible=False)
        api_button.click(api_ask, [api_question, api_history, api_k], api_out, api_name="ask")
    return app


def _chip(kind: str, value: str | list[str] | None) -> Any:
    """The chip of one filter: shown, with its value, while the filter is set."""
    active = bool(value if isinstance(value, list) else (value or "").strip())
    return gr.update(value=chip_label(kind, value or "") if active else "", visible=active)


def _auth(settings: Settings) -> tuple[str, str] | Callable[[str, str], bool] | None:
    """The page's login: UI_AUTH's user and password; else, when API_KEYS is set, any user name with one of the keys
    as password, so the page and its Gradio API (`/gradio_api/…`, which can run every function) sit behind the same
    keys as /v1 and /api; else none."""
    if not settings.ui_auth:
        keys = settings.api_key_list()
        return (lambda _user, password: is_key(password, keys)) if keys else None
    user, _, password = settings.ui_auth.get_secret_value().partition(":")
    if not user or not password:
        raise AssistantError("UI_AUTH must look like user:password")
    return user, password


# uvicorn closes an idle connection after 5 s, the same moment httpx-based clients (the openai SDK) stop reusing one: a
# request sent on it as it closed ended in a connection reset (1 in 432 requests after 5 s pauses). Idle connections
# are kept longer than clients keep them, as nginx does by default.
KEEP_ALIVE_S = 75


def _warm(assistant: Assistant, stop: threading.Event) -> None:
    try:
        assistant.warm(stop)
    except Exception:  # the first question will report what is wrong; the UI keeps serving
        log.exception("warming up the assistant failed")


# [n] in an answer is a chip: clicking it scrolls to that turn's card n and opens its abstract.
HEAD = """<script>
document.addEventListener("click", (event) => {
  const chip = event.target.closest && event.target.closest("a.cite");
  if (!chip) return;
  event.preventDefault();
  const card = document.getElementById((chip.getAttribute("href") || "").slice(1));
  if (!card) return;
  document.querySelectorAll(".paper-card.opened").forEach((c) => c.classList.remove("opened"));
  card.classList.add("opened");
  const details = card.querySelector("details");
  if (details) details.open = true;
  card.scrollIntoView({block: "center"});
});
// Ticking a card's "compare" box keeps the ticked papers' ids in the hidden #picked box the compare button sends.
document.addEventListener("change", (event) => {
  if (!event.target.matches || !event.target.matches("input.pick")) return;
  const ids = [...new Set([...document.querySelectorAll("input.pick:checked")].map((box) => box.value))];
  const box = document.querySelector("#picked textarea, #picked input");
  if (!box) return;
  box.value = ids.join(",");
  box.dispatchEvent(new Event("input", {bubbles: true}));
});
</script>"""


def mount(app: FastAPI, assistant: Assistant) -> FastAPI:
    """`app` with the chat UI at `/` (a login first when UI_AUTH is set) and a bounded request queue."""
    settings = assistant.settings
    blocks = build_app(assistant, getattr(app.state, "indexes", None))
    blocks.queue(default_concurrency_limit=settings.ui_concurrency, max_size=settings.ui_queue_size)
    return gr.mount_gradio_app(
        app, blocks, path="/", server_name=settings.ui_host, server_port=settings.ui_port, auth=_auth(settings), show_error=False, css=CSS,
        head=HEAD,
    )


def launch(settings: Settings) -> None:
    """Serve the UI, the OpenAI-compatible endpoint and the JSON API on UI_HOST:UI_PORT until stopped; never shared publicly."""
    import uvicorn

    assistant = Assistant(settings)
    stop = threading.Event()
    warming = threading.Thread(target=_warm, args=(assistant, stop), name="warm-up", daemon=True)
    warming.start()
    app = mount(create_app(assistant), assistant)
    log.warning("serving on http://%s:%d/ (UI), /v1 (OpenAI-compatible), /api (JSON), /docs", settings.ui_host, settings.ui_port)
    try:
        uvicorn.run(app, host=settings.ui_host, port=settings.ui_port, log_level="warning", timeout_graceful_shutdown=5,
                    timeout_keep_alive=KEEP_ALIVE_S)
    finally:  # the reader may still be reading the abstracts: let it stop between two of them before the process exits
        stop.set()
        warming.join(timeout=30)
