"""Grounded question answering over research-paper abstracts."""

__version__ = "0.1.0"
