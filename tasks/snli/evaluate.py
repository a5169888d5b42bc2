"""SNLI accuracy evaluator and prediction-file writer.

Usage::

    python -m tasks.snli.evaluate DATA.jsonl PRED.jsonl

``DATA.jsonl`` is an official SNLI 1.0 (or MultiNLI) file, or a plain
``{"premise", "hypothesis", "label"}`` file (any label set; pair ids as
:class:`tasks.snli.data.PlainPairReader` gives them); ``PRED.jsonl`` has one
``{"pairID": ..., "label": ...}`` object per line. Prints JSON with ``accuracy`` (percent) over
the pairs that have a gold label (the official denominators: 9,842 dev, 9,824 test), the counts,
and the ids of missing predictions (they count as wrong). Exit status 1 with a located message on
a malformed file, a duplicate ``pairID`` or a ``pairID`` that is not in ``DATA.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from tasks.common.io import DataError, iter_lines, run_json_cli
from tasks.snli.data import LABELS, SnliReader, pair_reader, parse_json_line, require_string
from tasks.snli.metric import AccuracyResult, accuracy

MAX_LISTED = 20  # missing ids listed in the JSON output


def read_predictions(path: str | Path, labels: Collection[str] | None = LABELS) -> dict[str, str]:
    """Read ``PRED.jsonl`` into ``{pairID: label}``; ``labels`` None accepts any label.

    Raises:
        DataError: bad JSON, a missing or non-string field, an unknown label or a repeated pairID.
    """
    path = Path(path)
    predictions: dict[str, str] = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        record = parse_json_line(path, number, line)
        pair_id = require_string(path, number, record, "pairID")
        label = require_string(path, number, record, "label")
        if labels is not None and label not in labels:
            raise DataError(
                path, number, f"unknown label {label!r}; expected one of {tuple(labels)}"
            )
        if pair_id in predictions:
            raise DataError(path, number, f"duplicate pairID {pair_id!r}")
        predictions[pair_id] = label
    return predictions


def evaluate_files(data_path: str | Path, prediction_path: str | Path) -> AccuracyResult:
    """Score ``PRED.jsonl`` against ``DATA.jsonl``.

    Raises:
        DataError: either file is malformed, or a predicted pairID is not in the data file.
    """
    reader = pair_reader(data_path)
    gold = {example.pair_id: example.label for example in reader}
    # official files: the three SNLI labels; plain files: any label (the model's label set is
    # that of its training file, which a dev file need not cover)
    predictions = read_predictions(
        prediction_path, LABELS if isinstance(reader, SnliReader) else None
    )
    unlabeled = set(reader.unlabeled_ids)
    unknown = [
        pair_id for pair_id in predictions if pair_id not in gold and pair_id not in unlabeled
    ]
    if unknown:
        raise DataError(
            prediction_path, None, f"{len(unknown)} pairID(s) not in {data_path}: {unknown[:5]}"
        )
    labelled = {pair_id: label for pair_id, label in predictions.items() if pair_id in gold}
    return accuracy(gold, labelled, ignored=len(predictions) - len(labelled))


def write_predictions(
    path: str | Path,
    predictions: Mapping[str, str] | Iterable[tuple[str, str]],
    labels: Collection[str] = LABELS,
) -> int:
    """Write ``{"pairID", "label"}`` lines; returns the number written.

    ``labels``: the allowed labels (default the three SNLI labels; a model trained on a plain
    file passes its own label set).

    Raises:
        ValueError: an unknown label or a repeated pairID.
    """
    items = predictions.items() if isinstance(predictions, Mapping) else predictions
    seen: set[str] = set()
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for pair_id, label in items:
            if label not in labels:
                raise ValueError(
                    f"unknown label {label!r} for {pair_id!r}; expected one of {tuple(labels)}"
                )
            if pair_id in seen:
                raise ValueError(f"duplicate pairID {pair_id!r}")
            seen.add(pair_id)
            handle.write(json.dumps({"pairID": pair_id, "label": label}, ensure_ascii=False) + "\n")
    return len(seen)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tasks.snli.evaluate", description="SNLI accuracy (percent) as JSON."
    )
    parser.add_argument(
        "data",
        help='official SNLI 1.0 jsonl file, or plain {"premise", "hypothesis", "label"} jsonl',
    )
    parser.add_argument("predictions", help='jsonl with {"pairID": ..., "label": ...} per line')
    args = parser.parse_args(argv)
    return run_json_cli(
        lambda: evaluate_files(args.data, args.predictions).as_dict(max_listed=MAX_LISTED)
    )


if __name__ == "__main__":
    sys.exit(main())
