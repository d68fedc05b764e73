"""Corpus → papers → chunks: reading abstract files, attaching metadata, and cutting chunks to embed."""
