"""Prompt and message templates, read from files so they can be edited without touching code.

`PROMPTS_DIR` points at another folder to override them; a template missing
there falls back to the shipped one, so an override folder can hold just the
files it changes.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from assistant.errors import AssistantError
from assistant.settings import PROJECT_ROOT

SHIPPED = PROJECT_ROOT / "prompts"


@lru_cache(maxsize=64)
def _read(path: Path, stamp: tuple[int, int]) -> str:
    """The file's text, cached per (modification time, size): an edited template is picked up at the next use."""
    return path.read_text(encoding="utf-8")


def template(name: str, prompts_dir: Path | None = None) -> str:
    """The text of template `name` (e.g. "no_answer"), from `prompts_dir` if it has one."""
    for folder in (prompts_dir, SHIPPED):
        if folder is None:
            continue
        path = Path(folder) / f"{name}.md"
        if path.is_file():
            try:
                stat = path.stat()
                return _read(path.resolve(), (stat.st_mtime_ns, stat.st_size))
            except (OSError, UnicodeDecodeError) as exc:
                raise AssistantError(f"Cannot read prompt template {path}: {exc}") from exc
    raise AssistantError(f"Prompt template '{name}.md' not found in {prompts_dir or SHIPPED}")


def render(name: str, prompts_dir: Path | None = None, **values: object) -> str:
    """Template `name` with `values` filled in (Python `str.format` fields)."""
    try:
        return template(name, prompts_dir).format(**values).strip()
    except (KeyError, IndexError, ValueError) as exc:
        raise AssistantError(f"Prompt template '{name}.md' has a field the code does not supply: {exc}") from exc
