"""The chat-model room: an OpenAI-protocol client, the provider choice, and the embedded llama.cpp server."""
