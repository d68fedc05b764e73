"""Reciprocal rank fusion: the one formula that merges rankings whose scores mean different things."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def reciprocal_rank_fusion(rankings: Sequence[tuple[float, Sequence[K]]], k: int = 60) -> list[K]:
    """Items of the weighted `rankings`, best first, by the sum of weight / (k + rank).

    Ties keep the order in which items were first seen, so fusing a single
    ranking returns it unchanged.
    """
    fused: dict[K, float] = {}
    for weight, ranking in rankings:
        for rank, item in enumerate(ranking):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank + 1)
    return sorted(fused, key=lambda item: -fused[item])
