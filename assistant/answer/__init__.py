"""Ranked papers → an `Answer`: prompts and context, extractive and chat answerers, citations and their checks."""
