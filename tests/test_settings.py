"""The settings object: documented, read from `.env`, validated with clear messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assistant.settings import GROUPS, PROJECT_ROOT, Settings, reference


def test_every_setting_is_documented_in_env_example() -> None:
    text = (PROJECT_ROOT / ".env.example").read_text()
    assert [name.upper() for name in Settings.model_fields if f"# {name.upper()}=" not in text] == []


def test_dotenv_is_read_and_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("TOP_K=9\nCOLLECTION=from-dotenv\n")
    assert (Settings().top_k, Settings().collection) == (9, "from-dotenv")
    monkeypatch.setenv("TOP_K", "3")
    assert Settings().top_k == 3


def test_invalid_values_are_rejected_with_the_field_named() -> None:
    with pytest.raises(ValidationError, match="chunk_overlap"):
        Settings(chunk_size=128, chunk_overlap=128)
    with pytest.raises(ValidationError, match="collection"):
        Settings(collection="bad name!")
    with pytest.raises(ValidationError, match="llm_temperature"):
        Settings().with_overrides(llm_temperature=9)


def test_api_key_is_secret_in_reprs() -> None:
    settings = Settings(openai_api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(settings) and "sk-very-secret" not in str(settings.model_dump())


def test_the_configuration_reference_is_generated_from_the_settings() -> None:
    """docs/configuration.md is `python -m assistant.settings`' output: every field, its default and its description."""
    assert (PROJECT_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8") == reference()


def test_every_setting_belongs_to_exactly_one_group() -> None:
    grouped = [name for group in GROUPS for name in group.model_fields]
    assert sorted(grouped) == sorted(Settings.model_fields) and len(grouped) == len(set(grouped))
