"""`AskOptions`: what one question may change, shared by `ask()`, the CLI, the UI and both HTTP APIs.

A call may narrow the papers (`filters`), ask for more or fewer of them (`k`)
and override the settings that shape one answer; settings that describe the
index (its model, chunking, store) stay fixed. Each overridable setting keeps
the type, bounds and description it has in `Settings`, so there is one place
that says what a valid temperature or provider is.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, create_model

from assistant.retrieval.filters import Filters
from assistant.settings import Settings

# Settings a single call may override; the rest describe the index and stay fixed.
PER_CALL_SETTINGS = (
    "retrieval_mode", "answer_sentences", "abstain_threshold", "relevance_check", "semantic_threshold",
    "llm_provider", "llm_temperature", "llm_max_tokens", "reranker", "reading", "answer_table",
)


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: StrictInt | None = Field(None, ge=1, le=50, description="Papers to retrieve (TOP_K); \"3\" from a form is read as 3.")
    filters: Filters | None = Field(None, description="Answer only from papers with this status, year, author or title words.")

    def overrides(self) -> dict[str, Any]:
        """The settings this call changes, by name."""
        return {name: getattr(self, name) for name in PER_CALL_SETTINGS if getattr(self, name) is not None}


def _optional(name: str) -> tuple[Any, Any]:
    field = copy.copy(Settings.model_fields[name])
    field.default = None
    return field.annotation | None, field


AskOptions: type[_Options] = create_model(  # type: ignore[assignment]
    "AskOptions", __base__=_Options, __doc__="Per-call options: `k`, `filters`, and the settings one answer may override.",
    **{name: _optional(name) for name in PER_CALL_SETTINGS},
)
