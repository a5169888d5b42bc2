"""Timing, memory and formatting helpers that every stage of the biLM speed benchmark shares.

Nothing here measures on its own: the stages call these (``python benchmarks/bench_bilm.py
--quick`` runs them all). The fixed batch's shape (:data:`BATCH` × :data:`LENGTH`), the
repository paths and the benchmark's entry point (the script the child processes re-run with
a hidden flag) live here too.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bilm import BiLM

#: The repository root (``benchmarks/bilm_speed/measure.py`` is two folders down).
REPO = Path(__file__).resolve().parents[2]
#: The benchmark's entry point: child processes run it again with a hidden flag.
ENTRY = REPO / "benchmarks" / "bench_bilm.py"
#: The fixed batch: 64 sentences of 20 tokens.
BATCH, LENGTH = 64, 20


def shown(path: Path) -> str:
    """``path`` as the output shows it, so that a committed output names no machine's paths.

    Args:
        path: any path.

    Returns:
        The path with ``~`` for the home folder and ``..`` for the folder beside the
        repository; other paths unchanged.
    """
    path = path.resolve()
    for root, name in ((REPO.parent, ".."), (Path.home(), "~")):
        if path.is_relative_to(root):
            return f"{name}/{path.relative_to(root)}"
    return str(path)


def rss_now_bytes() -> int:
    """Current resident memory of this process (``/proc/self/statm``), 0 where unreadable."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def fmt_bytes(n: float) -> str:
    """``n`` bytes as ``"1,474 MB (1,405 MiB)"``."""
    return f"{n / 1e6:,.0f} MB ({n / 2**20:,.0f} MiB)"


def time_calls(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Wall-clock seconds of ``repeats`` calls of ``fn``, one sample per call."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def forward(model: BiLM, ids: torch.Tensor) -> torch.Tensor:
    """The biLM's layers for character ids ``(B, T, 50)``: ``(L+1, B, T, 2P)``, no autograd."""
    with torch.no_grad():
        return model(ids).layers


def verdict(ok: bool) -> str:
    """``"PASS"`` or ``"MISS"``."""
    return "PASS" if ok else "MISS"


def alternate(
    first: Callable[[], Any], second: Callable[[], Any], pairs: int
) -> tuple[list[float], list[float]]:
    """Seconds of ``first`` and ``second`` in ``pairs`` pairs, order swapped every pair (ABBA).

    Args:
        first: one side (ours).
        second: the other side.
        pairs: how many pairs to time.

    Returns:
        The samples of ``first`` and of ``second``, pair by pair.
    """
    a: list[float] = []
    b: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            a += time_calls(first, 1)
            b += time_calls(second, 1)
        else:
            b += time_calls(second, 1)
            a += time_calls(first, 1)
    return a, b


def pair_ratio(ours: list[float], theirs: list[float]) -> tuple[float, float]:
    """(median of per-pair ratios theirs/ours, ratio of the medians)."""
    per_pair = statistics.median(t / o for o, t in zip(ours, theirs, strict=True))
    return per_pair, statistics.median(theirs) / statistics.median(ours)
