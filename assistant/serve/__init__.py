"""The HTTP side: the OpenAI-compatible endpoint and JSON API mounted beside the UI."""
