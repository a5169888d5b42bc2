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
import importlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
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
    with path.open("rb") as handle:
        yield from iter_stream_lines(handle, path, empty="empty file")


def iter_stream_lines(
    stream: Iterable[bytes], name: str | Path, *, empty: str = "empty input"
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line_without_newline)`` from an open binary stream (e.g. stdin).

    Args:
        stream: the bytes lines.
        name: how errors name the input.
        empty: the error reason when the stream holds no line.

    Raises:
        DataError: a line is not valid UTF-8 (with its line number), or the stream is empty.
    """
    number = 0
    for number, raw in enumerate(stream, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                name, number, f"invalid UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
        yield number, text.rstrip("\r\n")
    if number == 0:
        raise DataError(name, None, empty)


def run_json_cli(
    compute: Callable[[], object], errors: tuple[type[Exception], ...] = (DataError,)
) -> int:
    """The evaluators' command-line tail: print ``compute()`` as JSON, or ``error: …`` on stderr.

    Args:
        compute: returns the JSON-serialisable report.
        errors: the exceptions reported as a failed evaluation (exit status 1).

    Returns:
        The exit status: 0 on success, 1 when ``compute`` raised one of ``errors``.
    """
    try:
        report = compute()
    except errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2))
    return 0


def require_package(module: str, needs: str) -> Any:
    """Import ``module`` lazily, with an actionable error when it is missing.

    Args:
        module: the module to import.
        needs: the start of the error, naming what needs it (``"the SQuAD reader needs spaCy"``).

    Raises:
        ImportError: ``"{needs}: pip install 'elmo-bench[harness]'"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{needs}: pip install 'elmo-bench[harness]'") from exc


def require_datasets() -> Any:
    """Import Hugging Face ``datasets`` lazily, with an actionable error when it is missing."""
    return require_package("datasets", "this needs the Hugging Face 'datasets' package")


def attribute_columns(examples: Iterable[object], names: Sequence[str]) -> dict[str, list[object]]:
    """The attributes ``names`` of each example, column by column (tuples become lists): the
    input ``datasets.Dataset.from_dict`` takes."""
    columns: dict[str, list[object]] = {name: [] for name in names}
    for example in examples:
        for name, values in columns.items():
            value = getattr(example, name)
            values.append(list(value) if isinstance(value, tuple) else value)
    return columns
