"""The repository speaks to users: no tracked file carries the history of how it was built.

History belongs to `git log`. A tracked text file must not name numbered rounds of work, issue numbers, commit
hashes, or folders of the machine it was developed on; the README stays short enough to read.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROCESS_WORDS = re.compile(
    r"\bsession \d+|\bsessions \d+|\bissue #?\d+|\bissues #?\d+|(?<![\w&])#\d{1,3}\b(?!\s*[:\]])|\bmy own\b|/work/main\b|/work/shared\b"
    r"|\bfd8ed17\b|\bround \d+ of\b",
    re.IGNORECASE,
)
TEXT = {".py", ".md", ".toml", ".txt", ".example", ".cfg", ".yml", ".yaml", ".sh", ""}


def _tracked() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode:
        pytest.skip("not a git checkout")
    paths = [ROOT / line for line in listed.stdout.splitlines()]
    return [p for p in paths if p.suffix in TEXT and p.is_file() and "index/corpus" not in p.as_posix() and p.name != "test_repository.py"]


def test_no_tracked_file_speaks_of_the_process_that_built_it() -> None:
    found = []
    for path in _tracked():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if PROCESS_WORDS.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert found == []


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
