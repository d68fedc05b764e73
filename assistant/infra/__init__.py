"""Plumbing every stage shares: atomic files, deadlines, lazy and shared loading, memory given back, the version."""
