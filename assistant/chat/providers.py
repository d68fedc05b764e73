"""Which chat model answers, chosen by configuration alone (`LLM_PROVIDER`, `OPENAI_*`, `LLM_MODEL`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.chat import local_server
from assistant.errors import ModelError
from assistant.settings import ChatSettings, Settings

if TYPE_CHECKING:
    from assistant.chat.client import ChatModel


def provider_name(settings: ChatSettings) -> str:
    """`auto` made concrete: a configured server, else OpenAI with a key, else the embedded model."""
    if settings.llm_provider != "auto":
        return settings.llm_provider
    if settings.openai_base_url:
        return "openai-compatible"
    if settings.openai_api_key:
        return "openai"
    return "local"


def chat_model(settings: Settings) -> ChatModel | None:
    """The chat model the settings ask for, or None for the extractive answerer.

    Raises `ModelError` when the choice cannot work (a missing key or URL, the
    embedded model not installed); callers fall back to extractive answers.
    """
    from assistant.chat.client import (  # the OpenAI SDK loads only when a model is used
        DEFAULT_OPENAI_MODEL,
        ChatModel,
        ModelConfig,
    )

    provider = provider_name(settings)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    common = {
        "temperature": settings.llm_temperature, "max_tokens": settings.llm_max_tokens, "timeout_s": settings.llm_timeout_s,
        "max_retries": settings.llm_max_retries, "context_tokens": settings.context_tokens,
        "refusals_final": settings.model_refusals == "final" or (settings.model_refusals == "auto" and provider != "local"),
    }
    if provider == "extractive":
        return None
    if provider == "openai":
        if not key:
            raise ModelError("LLM_PROVIDER=openai needs OPENAI_API_KEY")
        return ChatModel(ModelConfig(base_url=settings.openai_base_url, model=settings.llm_model or DEFAULT_OPENAI_MODEL, api_key=key, **common))
    if provider == "openai-compatible":
        if not settings.openai_base_url:
            raise ModelError("LLM_PROVIDER=openai-compatible needs OPENAI_BASE_URL, e.g. http://127.0.0.1:8000/v1")
        return ChatModel(ModelConfig(base_url=settings.openai_base_url, model=settings.llm_model, api_key=key, **common))
    server = local_server.server(settings.model_dir, settings.local_model_port, settings.local_threads, settings.local_context)
    common["context_tokens"] = settings.local_context_tokens
    common["max_tokens"] = min(settings.llm_max_tokens, settings.local_max_tokens)
    config = ModelConfig(base_url=server.ensure(), model=local_server.MODEL_NAME, api_key=server.key, schema_format="json_object", **common)
    return ChatModel(config, server=server)
