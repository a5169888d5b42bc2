"""Shared reader infrastructure: a located error type, skip statistics, safe line iteration.

Every reader in ``tasks/`` follows one policy:

* **Malformed structure** (bad JSON, wrong column count, unbalanced brackets, an empty file,
  invalid UTF-8) raises :class:`DataError` naming the file and the 1-based line. Nothing partial
  is returned: readers are generators, so a caller that materialises them gets either everything
  or the error.
* **Well-formed but unusable examples** that the official setup also drops (e.g. SNLI pairs whose
  ``gold_label`` is ``"-"``) are skipped and counted in :class:`ReadStats` under a named reason.
  Reasons that a configured filter causes, or that drop only part of a kept example, are marked
  exempt.
* **Repaired examples** (e.g. a SQuAD answer whose ``answer_start`` is a few characters off) are
  kept and counted in :class:`ReadStats` under a named reason (:meth:`ReadStats.repair`), so the
  run's read line, ``read-stats.json`` and the record say what was changed and why.

A recipe reports its splits' statistics as ``read_stats`` (with the files read), and the runner
refuses an empty split or one whose share of non-exempt skips is over its maximum
(:func:`require_usable`), and stores the counts with the run.
"""

from __future__ import annotations

import collections
import importlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
    """Counts reported by a reader: examples produced, and examples skipped or repaired, by
    reason.

    Attributes:
        examples: examples produced.
        skipped: skips by reason.
        source: the file (or files, comma-separated, or a Hub name) the counts describe; set by
            whoever knows it (the reader, or the task's ``setup``); ``""`` when unknown.
        exempt: reasons that do not count toward :meth:`skipped_share`: filters the
            configuration asks for (e.g. phrases shorter than a minimum, sentences over a
            length limit) and parts of an example dropped while the example itself is kept
            (e.g. one unusable answer of several). They are still counted and reported.
        variant: what the reader detected about the files, in a few words (e.g.
            ``"IOB2, -DOCSTART- absent"``, ``"LitBank folder, '_' placeholders"``); shown when
            a run reads the split and stored with its record, so nothing is guessed silently.
        parts: reason → what it drops of an example that is kept (e.g. ``"answer"``: one
            unusable answer of a question kept with its others); such skips are exempt and
            are reported apart from skipped examples.
        repaired: repairs by reason: examples (or parts of them) kept after the reader changed
            them (e.g. an answer offset moved onto its text). They are counted, not skipped, and
            reported beside the skips.
    """

    examples: int = 0
    skipped: collections.Counter[str] = field(default_factory=collections.Counter)
    source: str = ""
    exempt: set[str] = field(default_factory=set)
    variant: str = ""
    parts: dict[str, str] = field(default_factory=dict)
    repaired: collections.Counter[str] = field(default_factory=collections.Counter)

    def skip(self, reason: str, *, exempt: bool = False, part: str = "") -> None:
        """Count one skipped example (or example part) under ``reason``.

        Args:
            reason: why, in a few words; the key of :attr:`skipped`.
            exempt: the reason is a configured filter or drops only part of a kept example
                (see :attr:`exempt`).
            part: what the skip drops of a kept example (e.g. ``"answer"``); implies
                ``exempt``; ``""``: the skip drops a whole example.
        """
        self.skipped[reason] += 1
        if exempt or part:
            self.exempt.add(reason)
        if part:
            self.parts[reason] = part

    def repair(self, reason: str) -> None:
        """Count one example (or example part) kept after a repair, under ``reason``.

        Args:
            reason: what was repaired and how, in a few words; the key of :attr:`repaired`.
        """
        self.repaired[reason] += 1

    def merge(self, other: ReadStats) -> None:
        """Add ``other``'s counts (and its exempt reasons) to these; sources are joined."""
        self.examples += other.examples
        self.skipped.update(other.skipped)
        self.repaired.update(other.repaired)
        self.exempt |= other.exempt
        self.parts.update(other.parts)
        if other.variant and other.variant not in self.variant.split("; "):
            self.variant = f"{self.variant}; {other.variant}" if self.variant else other.variant
        if other.source and other.source not in self.source.split(", "):
            self.source = f"{self.source}, {other.source}" if self.source else other.source

    @property
    def counted_skips(self) -> int:
        """Skips that count toward :meth:`skipped_share` (every reason not exempt)."""
        return sum(n for reason, n in self.skipped.items() if reason not in self.exempt)

    def skipped_share(self) -> float:
        """``counted skips / (examples + counted skips)``: 0.0 when nothing was read."""
        counted = self.counted_skips
        total = self.examples + counted
        return counted / total if total else 0.0

    def describe(self, reasons: Iterable[str] | None = None) -> str:
        """The skip counts by reason (of ``reasons``, default all), most frequent first, e.g.
        ``"answer_offset_mismatch 12, empty_answer 1"`` (``"none"`` without skips)."""
        chosen = self.skipped if reasons is None else {r: self.skipped[r] for r in reasons}
        return _by_reason(chosen)

    def describe_repairs(self) -> str:
        """The repair counts by reason, most frequent first, e.g. ``"offset_repaired 2"``
        (``"none"`` without repairs)."""
        return _by_reason(self.repaired)

    def as_dict(self) -> dict[str, object]:
        """A JSON-friendly summary (``source``, ``exempt``, ``variant``, ``parts`` and
        ``repaired`` only when set, so statistics without repairs keep their old shape)."""
        out: dict[str, object] = {"examples": self.examples, "skipped": dict(self.skipped)}
        if self.source:
            out["source"] = self.source
        if self.exempt:
            out["exempt"] = sorted(self.exempt)
        if self.variant:
            out["variant"] = self.variant
        if self.parts:
            out["parts"] = dict(sorted(self.parts.items()))
        if +self.repaired:
            out["repaired"] = dict(sorted((+self.repaired).items()))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReadStats:
        """The inverse of :meth:`as_dict` (a summary written before repairs were counted has no
        ``repaired`` key: no repairs)."""
        skipped = collections.Counter({str(k): int(v) for k, v in data.get("skipped", {}).items()})
        repaired = collections.Counter(
            {str(k): int(v) for k, v in data.get("repaired", {}).items()}
        )
        return cls(
            examples=int(data.get("examples", 0)),
            skipped=skipped,
            source=str(data.get("source", "")),
            exempt={str(r) for r in data.get("exempt", ())},
            variant=str(data.get("variant", "")),
            parts={str(k): str(v) for k, v in data.get("parts", {}).items()},
            repaired=repaired,
        )

    def summary(self, split: str, where: bool = True) -> str:
        """One line, the counts first: ``"train: 7,007 kept, 44 skipped (longer than max_tokens
        44); from F (IOB2, -DOCSTART- absent)"``, or ``"dev: 1,247 kept, 0 skipped; from F"``
        (``where`` false: the counts alone, ``"train: 10 kept, 1 skipped (no gold 1)"``). Parts
        dropped from kept examples are counted apart: ``"dev: 61 kept, 0 skipped, 1 answer
        dropped (answer_offset_mismatch 1)"``, and so are repairs: ``"train: 7 kept, 0 skipped,
        1 repaired (offset_repaired 1)"``."""
        whole = [r for r in self.skipped if r not in self.parts]
        skipped = sum(self.skipped[r] for r in whole)
        text = f"{split}: {self.examples:,} kept, {skipped:,} skipped"
        text += f" ({self.describe(whole)})" if skipped else ""
        for part in sorted(set(self.parts.values())):
            reasons = [r for r, p in self.parts.items() if p == part and self.skipped[r]]
            dropped = sum(self.skipped[r] for r in reasons)
            if dropped:
                noun = part if dropped == 1 else f"{part}s"
                text += f", {dropped:,} {noun} dropped ({self.describe(reasons)})"
        repairs = sum(self.repaired.values())
        if repairs:
            text += f", {repairs:,} repaired ({self.describe_repairs()})"
        if not where:
            return text
        source = f" from {self.source}" if self.source else ""
        variant = f" ({self.variant})" if self.variant else ""
        read_from = f";{source}{variant}" if source or variant else ""
        return f"{text}{read_from}"


def _by_reason(counts: Mapping[str, int]) -> str:
    """``counts`` as ``"reason n, reason n"``, most frequent first (``"none"`` when all are 0)."""
    chosen = {r: n for r, n in counts.items() if n}
    if not chosen:
        return "none"
    ordered = sorted(chosen.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{reason} {n:,}" for reason, n in ordered)


def require_usable(split: str, size: int, stats: ReadStats | None, max_skipped: float) -> None:
    """Refuse to train or evaluate on an empty split, or on one where too much was skipped.

    Args:
        split: the split's name (``train``, ``dev``, ``test``).
        size: examples the run would use from it.
        stats: what reading it counted (``None``: the recipe reports none; only emptiness is
            checked).
        max_skipped: the largest acceptable :meth:`ReadStats.skipped_share`, in [0, 1].

    Raises:
        DataError: naming the split's file(s) and the skip counts by reason.
    """
    source = stats.source if stats is not None and stats.source else f"<{split} split>"
    skips = stats.describe() if stats is not None else "not reported"
    if size == 0:
        read = f"{stats.examples:,} examples kept, " if stats is not None else ""
        raise DataError(
            source, None, f"the {split} split has no usable example ({read}skipped: {skips})"
        )
    if stats is not None and stats.skipped_share() > max_skipped:
        counted = stats.counted_skips
        raise DataError(
            source,
            None,
            f"{counted:,} of {stats.examples + counted:,} {split} examples were skipped "
            f"({stats.skipped_share():.1%}, more than the maximum {max_skipped:.1%}; "
            f"skipped: {skips}); fix the data or raise the maximum (--max-skipped)",
        )


#: The UTF-8 byte-order mark as text. Every reader strips it from the start of a file's first
#: line, and nowhere else (:func:`iter_stream_lines`: the one rule for all formats).
BOM = "\ufeff"


def starts_with_bom(path: str | Path) -> bool:
    """Whether the file starts with a UTF-8 byte-order mark (readers that report what they
    detected say it was stripped)."""
    with Path(path).open("rb") as handle:
        return handle.read(3) == BOM.encode("utf-8")


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line_without_newline)`` from a UTF-8 file, streaming; a byte-order
    mark at the start of the file is dropped (:data:`BOM`).

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

    A byte-order mark at the start of the first line is dropped (:data:`BOM`), so a BOM never
    becomes part of a first token, a ``-DOCSTART-`` or a JSON document.

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
        if number == 1:
            text = text.removeprefix(BOM)
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
