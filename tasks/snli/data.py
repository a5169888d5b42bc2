"""SNLI 1.0 reader (Bowman et al., 2015): premise/hypothesis pairs with a 3-way label.

Format (``snli_1.0_{train,dev,test}.jsonl``): one JSON object per line with ``gold_label``,
``sentence1`` (premise), ``sentence2`` (hypothesis), ``pairID`` and, optionally,
``sentence{1,2}_binary_parse`` (unlabelled binarised PTB parse: removing the parentheses leaves the
PTB tokens), ``sentence{1,2}_parse``, ``annotator_labels`` and ``captionID``.

Pairs whose ``gold_label`` is ``"-"`` (no annotator majority) are dropped, as in every published
setup, and counted under ``ReadStats.skipped["no gold label"]``: 550,152 / 10,000 / 10,000 raw pairs
give 549,367 / 9,842 / 9,824 examples.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.common.io import DataError, ReadStats, attribute_columns, iter_lines, require_datasets

if TYPE_CHECKING:
    import datasets

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
NO_GOLD_LABEL = "-"
SKIP_NO_GOLD = "no gold label"


@dataclass(frozen=True)
class SnliExample:
    """One labelled SNLI pair.

    Attributes:
        pair_id: the ``pairID`` (unique within a split).
        premise: ``sentence1`` as given.
        hypothesis: ``sentence2`` as given.
        label: one of :data:`LABELS`.
        premise_tokens: tokens of ``sentence1_binary_parse``, or ``None`` when the field is absent.
        hypothesis_tokens: tokens of ``sentence2_binary_parse``, or ``None`` when absent.
    """

    pair_id: str
    premise: str
    hypothesis: str
    label: str
    premise_tokens: tuple[str, ...] | None = None
    hypothesis_tokens: tuple[str, ...] | None = None


def binary_parse_tokens(parse: str) -> tuple[str, ...]:
    """Tokens of an SNLI binary parse: ``"( ( A person ) runs )"`` → ``("A", "person", "runs")``."""
    return tuple(token for token in parse.split() if token not in ("(", ")"))


class SnliReader:
    """Streams the labelled pairs of an SNLI 1.0 jsonl file.

    Iterating yields :class:`SnliExample` objects lazily; ``stats`` and ``unlabeled_ids`` (the
    ``pairID`` of every dropped ``"-"`` pair) describe the last iteration and are complete once it
    is exhausted. Blank lines are ignored.

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a line that is not a JSON object, a missing or
            non-string ``gold_label`` / ``sentence1`` / ``sentence2`` / ``pairID``, an unknown
            label, a non-string binary parse, or a repeated ``pairID``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.stats = ReadStats()
        self.unlabeled_ids: list[str] = []

    def __iter__(self) -> Iterator[SnliExample]:
        self.stats = ReadStats()
        self.unlabeled_ids = []
        seen: set[str] = set()
        records = 0
        for number, line in iter_lines(self.path):
            if not line.strip():
                continue
            records += 1
            record = parse_json_line(self.path, number, line)
            fields = {
                key: require_string(self.path, number, record, key)
                for key in ("gold_label", "sentence1", "sentence2", "pairID")
            }
            pair_id = fields["pairID"]
            if pair_id in seen:
                raise DataError(self.path, number, f"duplicate pairID {pair_id!r}")
            seen.add(pair_id)
            label = fields["gold_label"]
            if label == NO_GOLD_LABEL:
                self.stats.skip(SKIP_NO_GOLD)
                self.unlabeled_ids.append(pair_id)
                continue
            if label not in LABELS:
                raise DataError(
                    self.path, number, f"unknown gold_label {label!r}; expected one of {LABELS}"
                )
            tokens = [
                _optional_tokens(self.path, number, record, f"sentence{side}_binary_parse")
                for side in (1, 2)
            ]
            self.stats.examples += 1
            yield SnliExample(
                pair_id, fields["sentence1"], fields["sentence2"], label, tokens[0], tokens[1]
            )
        if records == 0:
            raise DataError(self.path, None, "no JSON lines (only blank lines)")


def to_hf_dataset(path: str | Path) -> datasets.Dataset:
    """Read an SNLI jsonl file into a Hugging Face ``datasets.Dataset`` (labelled pairs only).

    Columns: ``pair_id``, ``premise``, ``hypothesis``, ``label`` (a ``ClassLabel`` over
    :data:`LABELS`), ``premise_tokens``, ``hypothesis_tokens`` (``None`` when the file has no
    binary parses).
    """
    datasets = require_datasets()
    names = ("pair_id", "premise", "hypothesis", "label", "premise_tokens", "hypothesis_tokens")
    columns = attribute_columns(SnliReader(path), names)
    features = datasets.Features(
        {
            "pair_id": datasets.Value("string"),
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=list(LABELS)),
            "premise_tokens": datasets.Sequence(datasets.Value("string")),
            "hypothesis_tokens": datasets.Sequence(datasets.Value("string")),
        }
    )
    return datasets.Dataset.from_dict(columns, features=features)


def parse_json_line(path: Path, number: int, line: str) -> dict[str, object]:
    """Parse one line holding a JSON object, or raise a located :class:`DataError`."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge ints, deep nesting
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "too deep"
        raise DataError(path, number, f"bad JSON: {reason}") from None
    if not isinstance(record, dict):
        raise DataError(path, number, f"expected a JSON object, got {type(record).__name__}")
    return record


def require_string(path: Path, number: int, record: dict[str, object], key: str) -> str:
    """``record[key]`` if it is a string, else a located :class:`DataError`."""
    if key not in record:
        raise DataError(path, number, f"missing field {key!r}")
    value = record[key]
    if not isinstance(value, str):
        raise DataError(path, number, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _optional_tokens(
    path: Path, number: int, record: dict[str, object], key: str
) -> tuple[str, ...] | None:
    if record.get(key) is None:
        return None
    return binary_parse_tokens(require_string(path, number, record, key))
