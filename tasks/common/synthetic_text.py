"""Pieces of the synthetic data every task's ``synthetic.py`` draws for the speed benchmark.

Synthetic text is drawn from the recipe's own indexed words (real id lookups) with realistic
lengths; nothing here learns anything. A task declares its builder as ``TaskSpec.synthetic``
(:class:`tasks.core.Synthetic`); ``benchmarks/bench_tasks.py`` names no task.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from tasks.common.spans import Span

__all__ = ["joined", "spans", "vocabulary", "words"]


def vocabulary(recipe: Any) -> list[str]:
    """The recipe's indexed words, sorted (``recipe.words``).

    Raises:
        ValueError: the recipe indexes no word.
    """
    found = sorted(recipe.words)
    if not found:
        raise ValueError("the recipe has an empty vocabulary")
    return found


def words(rng: random.Random, vocab: Sequence[str], length: tuple[int, int]) -> tuple[str, ...]:
    """Words drawn from ``vocab``, as many as a uniform draw from the inclusive ``length``."""
    return tuple(rng.choices(vocab, k=rng.randint(*length)))


def joined(tokens: Sequence[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Tokens joined by spaces, and each token's character offsets in the text."""
    offsets, start = [], 0
    for token in tokens:
        offsets.append((start, start + len(token)))
        start += len(token) + 1
    return " ".join(tokens), tuple(offsets)


def spans(
    rng: random.Random, length: int, most: int, widest: int, label: Callable[[], str]
) -> list[Span]:
    """Up to ``most`` non-overlapping spans of 1..``widest`` tokens in ``length`` tokens,
    sorted by start."""
    out: list[Span] = []
    for start in sorted(rng.sample(range(length), min(most, length))):
        end = min(length - 1, start + rng.randint(0, widest - 1))
        if not out or start > out[-1].end:
            out.append(Span(start, end, label()))
    return out
