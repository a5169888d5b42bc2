"""Small on-disk fixtures for every registered representation (no downloads)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bilm import save_checkpoint
from tasks.representations import COVE_HIDDEN, COVE_INPUT
from tests.bilm.helpers import tiny_bilm

#: Words of the tiny GloVe files (includes a word with a space, as GloVe 840B has).
GLOVE_WORDS = ("the", "cat", "sat", "on", "mat", ".", "Hello", "world", "a", ". . .")

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Hello", "world"],
    [],
    ["a", "much", "longer", "sentence", "with", "unknown", "words", "than", "the", "others", "!"],
]

ODD_SENTENCES = [
    ["😀", "🇫🇷", "e\u0301", "\u200b", "\x00", "\x07tab\t", "\u202eRTL"],
    ["\ud800", "x" * 1000, "ﬁ", "İstanbul", "日本語", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"],
    [""],
]


def write_tiny_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A tiny random biLM saved with :func:`bilm.save_checkpoint`."""
    return save_checkpoint(tiny_bilm(seed=seed), folder / f"tiny-bilm-{seed}.safetensors")


def write_glove_text(
    path: Path, dim: int, seed: int = 0, words: tuple[str, ...] = GLOVE_WORDS
) -> Path:
    """A GloVe-format text file (``.gz`` when the name ends so)."""
    rng = np.random.default_rng(seed)
    lines = [w + " " + " ".join(f"{v:.6f}" for v in rng.standard_normal(dim)) + "\n" for w in words]
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def write_cove_state(path: Path, seed: int = 0) -> Path:
    """A state dict with the exact layout of ``nn.LSTM(300, 300, 2, bidirectional=True)``."""
    torch.manual_seed(seed)
    lstm = nn.LSTM(COVE_INPUT, COVE_HIDDEN, num_layers=2, bidirectional=True)
    torch.save(lstm.state_dict(), path)
    return path
