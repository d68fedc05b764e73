"""The wheel, installed into a fresh virtual environment in a folder far from the checkout, indexes and answers.

Its prompts and the shipped sample travel inside the package; nothing is read from the source tree. The
environment borrows the checkout environment's third-party packages (a path file), not its copy of this project.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_a_wheel_installed_elsewhere_answers_from_its_bundled_sample(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy of the checkout's files, so the build's own folders land there
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source)],
                   check=True, capture_output=True, cwd=tmp_path)
    wheel = next(wheels.glob("paper_assistant-*.whl"))
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), RERANKER="none", LLM_PROVIDER="extractive", HOME=str(tmp_path))
    where = subprocess.run([str(python), "-c", "import assistant.settings as s; print(s.PROMPTS_DIR); print(s.SAMPLE_CORPUS)"],
                           check=True, capture_output=True, text=True, cwd=elsewhere, env=env).stdout.split()
    assert all(str(site) in path and str(ROOT) not in path for path in where)

    cli = env_dir / "bin" / "assistant"
    built = subprocess.run([str(cli), "index", "-q"], capture_output=True, text=True, cwd=elsewhere, env=env, timeout=600)
    assert built.returncode == 0, built.stderr
    assert "440 papers" in built.stdout and "0 newly embedded" in built.stdout  # the bundled vectors were taken
    asked = subprocess.run([str(cli), "ask", "Is there work on pruning spiking neural networks?"],
                           capture_output=True, text=True, cwd=elsewhere, env=env, timeout=600)
    assert asked.returncode == 0, asked.stderr
    assert "[1]" in asked.stdout and "Cited papers" in asked.stdout
    assert (tmp_path / "data" / "paper-assistant" / "store").is_dir()  # the index lives in the user's data folder
