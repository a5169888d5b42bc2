"""Reading tokenized text corpora: one whitespace-tokenized sentence per line, bad lines skipped.

The one bad-input policy of pretraining, shared by :class:`bilm.vocab.Vocabulary` (counting words),
:class:`bilm.lm_data.BidirectionalLMStream` (batches) and :mod:`bilm.finetune` (scanning a task's
text): lines that are empty/whitespace-only (``empty``), have more than ``max_tokens_per_line``
tokens or more than :data:`MAX_LINE_BYTES` bytes (``too_long``), are not valid UTF-8
(``invalid_utf8``) or contain control characters other than tab, e.g. NUL bytes of binary garbage
(``control_chars``) are skipped and counted in a :class:`SkipStats`; they are never fatal. A
``\\r\\n`` line end and a UTF-8 byte-order mark at the start of a file are accepted. A missing
file raises :class:`FileNotFoundError` naming it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "DEFAULT_MAX_TOKENS_PER_LINE",
    "MAX_LINE_BYTES",
    "SkipStats",
    "check_files",
    "count_tokens",
    "iter_lines",
    "read_sentences",
]

DEFAULT_MAX_TOKENS_PER_LINE = 400
MAX_LINE_BYTES = 1 << 20  # longer lines are skipped as too_long without being held in memory

# C0 and C1 control characters except tab (\t) and the line feed that ends a line.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BOM = b"\xef\xbb\xbf"


# ------------------------------------------------------------------------------ bad-input policy
@dataclass
class SkipStats:
    """Counts of skipped input lines by reason (a mutable counter)."""

    empty: int = 0
    too_long: int = 0
    invalid_utf8: int = 0
    control_chars: int = 0

    @property
    def total(self) -> int:
        """All skipped lines."""
        return sum(self.as_dict().values())

    def add(self, reason: str, n: int = 1) -> None:
        """Count ``n`` lines skipped for ``reason`` (a field name)."""
        setattr(self, reason, getattr(self, reason) + n)

    def update(self, other: SkipStats) -> None:
        """Add another counter's counts to this one."""
        for name, n in other.as_dict().items():
            self.add(name, n)

    def as_dict(self) -> dict[str, int]:
        """The counts as a plain (JSON-serialisable) dict."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, counts: dict[str, int]) -> SkipStats:
        """Inverse of :meth:`as_dict`."""
        return cls(**{k: int(v) for k, v in counts.items()})


def check_files(files: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Paths of ``files``, each checked to be an existing regular file.

    Raises:
        TypeError: ``files`` is a single path instead of a list.
        ValueError: the list is empty.
        FileNotFoundError: a file is missing (named in the message).
    """
    if isinstance(files, str | os.PathLike):
        raise TypeError(f"expected a list of files, got the single path {files!r}; wrap it in []")
    paths = [Path(f) for f in files]
    if not paths:
        raise ValueError("no input files given")
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"text shard not found (or not a file): {path}")
    return paths


def _open_shard(path: Path) -> BinaryIO:
    """Open a shard for reading bytes (a seam for tests that count reads)."""
    return open(path, "rb")


def _raw_lines(handle: BinaryIO) -> Iterator[bytes | None]:
    """Lines of ``handle`` without their line end; ``None`` for a line over MAX_LINE_BYTES."""
    first = True
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # drain the rest without keeping it
                line = handle.readline(1 << 16)
            first = False
            yield None
            continue
        if first and line.startswith(_BOM):
            line = line[len(_BOM) :]
        first = False
        if line.endswith(b"\n"):
            line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
        yield line


def iter_lines(path: Path, max_tokens_per_line: int, stats: SkipStats) -> Iterator[str]:
    """Valid lines of ``path`` (decoded text), counting every skipped line in ``stats``."""
    with _open_shard(path) as handle:
        for raw in _raw_lines(handle):
            if raw is None:
                stats.too_long += 1
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats.invalid_utf8 += 1
                continue
            if _CONTROL.search(text):
                stats.control_chars += 1
                continue
            n = len(text.split())
            if n == 0:
                stats.empty += 1
            elif n > max_tokens_per_line:
                stats.too_long += 1
            else:
                yield text


def read_sentences(
    path: str | os.PathLike[str],
    *,
    max_tokens_per_line: int = DEFAULT_MAX_TOKENS_PER_LINE,
    stats: SkipStats | None = None,
) -> Iterator[list[str]]:
    """Stream the token lists of a text file's valid lines (one sentence per line).

    Args:
        path: the text file.
        max_tokens_per_line: lines with more whitespace tokens are skipped.
        stats: counter that skipped lines are added to (by reason).

    Raises:
        FileNotFoundError: the file is missing.
    """
    path = check_files([path])[0]
    skip = stats if stats is not None else SkipStats()
    for text in iter_lines(path, max_tokens_per_line, skip):
        yield text.split()


def count_tokens(
    files: Sequence[str | os.PathLike[str]],
    *,
    max_tokens_per_line: int = DEFAULT_MAX_TOKENS_PER_LINE,
    stats: SkipStats | None = None,
) -> int:
    """Whitespace tokens in the valid lines of ``files`` (streaming; bilm-tf ``n_train_tokens``).

    One epoch of one direction presents ``count_tokens(files) + n_sentences`` targets (each
    sentence's tokens plus its final boundary token).

    Raises:
        FileNotFoundError: a file is missing.
    """
    total = 0
    skip = stats if stats is not None else SkipStats()
    for path in check_files(files):
        for text in iter_lines(path, max_tokens_per_line, skip):
            total += len(text.split())
    return total
