"""The text the biLM speed benchmark runs on: the corpus and the fixed 64 × 20 batch.

``--corpus`` (default ``../shared/data/corpus/valid.txt``, one tokenised sentence per line) feeds
every stage: the 64 × 20 batch is its first 64 sentences of at least 20 tokens, cut to 20
(consecutive 20-token windows of the text where too few are that long); the natural-text and
allennlp-style stages take its first sentences as they are. Without the file a Zipf-weighted
synthetic word list stands in, and the output says so. Nothing is timed here; ``python
benchmarks/bench_bilm.py --quick`` uses it.
"""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks.bilm_speed.measure import BATCH, LENGTH, REPO, shown

DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "corpus" / "valid.txt"

SYNTHETIC_WORDS = (
    "the of and to in a is that for it as was with be by on not he I this are or his from at "
    "which but have an they you were her she there one all we their has would been if more when "
    "will who so no time people year government president nation country world congress freedom "
    "economy history several important development everything understanding responsibility , ."
).split()


def read_corpus(path: Path | None) -> tuple[list[list[str]], str]:
    """Tokenised sentences (one per line) or a labelled synthetic fallback.

    Args:
        path: the corpus file; ``None`` or a missing file gives the synthetic text.

    Returns:
        The sentences and a description of their source for the output.
    """
    if path is not None and path.exists():
        lines = path.read_text(encoding="utf-8").splitlines()
        return [line.split() for line in lines if line.strip()], shown(path)
    rng = random.Random(0)
    weights = [1.0 / (rank + 1) for rank in range(len(SYNTHETIC_WORDS))]  # Zipf-like
    sentences = [rng.choices(SYNTHETIC_WORDS, weights, k=rng.randint(3, 45)) for _ in range(2000)]
    return sentences, f"SYNTHETIC word list (corpus {path} not found)"


def fixed_batch(sentences: list[list[str]]) -> list[list[str]]:
    """64 sentences of exactly 20 tokens: the first long-enough sentences, cut; else windows."""
    chosen = [s[:LENGTH] for s in sentences if len(s) >= LENGTH][:BATCH]
    stream = [token for s in sentences for token in s]
    start = 0
    while len(chosen) < BATCH:  # not enough long sentences: consecutive 20-token windows
        chosen.append(stream[start : start + LENGTH])
        start += LENGTH
    return chosen
