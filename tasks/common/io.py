"""Shared reader infrastructure: a located error type, skip statistics, safe line iteration.

Every reader in ``tasks/`` follows one policy:

* **Malformed structure** (bad JSON, wrong column count, unbalanced brackets, an empty file,
  invalid UTF-8) raises :class:`DataError` naming the file and the 1-based line. Nothing partial
  is returned: readers are generators, so a caller that materialises them gets either everything
  or the error.
* **Well-formed but unusable examples** that the official setup also drops (e.g. SNLI pairs whose
  ``gold_label`` is ``"-"``) are skipped and counted in :class:`ReadStats` under a named reason.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """A dataset file is malformed.

    Attributes:
        path: the file.
        line: 1-based line number, or ``None`` when the problem is the whole file.
        reason: what is wrong, in words.
    """

    def __init__(self, path: str | Path, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


@dataclass
class ReadStats:
    """Counts reported by a reader: examples produced and examples skipped, by reason."""

    examples: int = 0
    skipped: collections.Counter[str] = field(default_factory=collections.Counter)

    def skip(self, reason: str) -> None:
        """Count one skipped example under ``reason``."""
        self.skipped[reason] += 1

    def as_dict(self) -> dict[str, object]:
        """A JSON-friendly summary."""
        return {"examples": self.examples, "skipped": dict(self.skipped)}


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line_without_newline)`` from a UTF-8 file, streaming.

    Raises:
        DataError: the file is missing, empty, or a line is not valid UTF-8 (with its line number).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "no such file")
    n = 0
    with path.open("rb") as handle:
        for n, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    path, n, f"invalid UTF-8 ({exc.reason} at byte {exc.start})"
                ) from None
            yield n, text.rstrip("\r\n")
    if n == 0:
        raise DataError(path, None, "empty file")


def require_datasets() -> Any:
    """Import Hugging Face ``datasets`` lazily, with an actionable error when it is missing."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "this needs the Hugging Face 'datasets' package: pip install 'elmo-bench[harness]'"
        ) from exc
    return datasets
