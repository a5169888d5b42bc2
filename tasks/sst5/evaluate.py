"""SST root-accuracy evaluator and prediction-file writer.

Usage::

    python -m tasks.sst5.evaluate [--binary-predictions] TREES.txt PRED.txt
    python -m tasks.sst5.evaluate GOLD.jsonl PRED.txt

``TREES.txt`` is an official SST tree file; ``PRED.txt`` has one integer label per line, line *i*
for tree *i* (0–4, or 0/1 with ``--binary-predictions``). Prints JSON with ``fine_grained_accuracy``
and ``binary_accuracy`` (percent; binary over non-neutral gold roots, a predicted neutral counting
as wrong). A gold file ending in ``.jsonl`` holds one ``{"text", "label"}`` object per line (any
label set); ``PRED.txt`` then has one label per line, compared with ``str(label)`` of the gold
line, and the JSON has ``accuracy`` (percent), ``sentences`` and ``correct``. Exit status 1 with a
located message on malformed files or a line-count mismatch.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tasks.common.io import DataError, iter_lines, run_json_cli
from tasks.sst5.data import NUM_LABELS, iter_trees, read_jsonl_texts
from tasks.sst5.metric import SstResult, label_accuracy, sst_accuracy


def read_predictions(path: str | Path, *, binary: bool = False) -> list[int]:
    """Read one integer label per line (trailing blank lines allowed).

    Raises:
        DataError: a line that is not an integer in range, or a blank line before a label.
    """
    top = 2 if binary else NUM_LABELS
    labels: list[int] = []
    blank: int | None = None
    for number, line in iter_lines(path):
        text = line.strip()
        if not text:
            blank = number if blank is None else blank
            continue
        if blank is not None:
            raise DataError(path, blank, "blank line before a label (expected one label per line)")
        if not (text.isascii() and text.isdigit()) or int(text) >= top:
            raise DataError(path, number, f"expected an integer label 0-{top - 1}, got {text!r}")
        labels.append(int(text))
    return labels


def evaluate_files(
    trees_path: str | Path, prediction_path: str | Path, *, binary_predictions: bool = False
) -> SstResult:
    """Score ``PRED.txt`` against the root labels of ``TREES.txt``.

    Raises:
        DataError: either file is malformed, or the number of predictions differs from the number
            of trees.
    """
    gold = [tree.label for tree in iter_trees(trees_path)]
    predicted = read_predictions(prediction_path, binary=binary_predictions)
    if len(predicted) != len(gold):
        raise DataError(
            prediction_path,
            None,
            f"{len(predicted)} predictions but {trees_path} has {len(gold)} trees "
            "(one label per line, in tree order)",
        )
    return sst_accuracy(gold, predicted, binary_predictions=binary_predictions)


def read_label_lines(path: str | Path) -> list[str]:
    """Read one label name per line (trailing blank lines allowed).

    Raises:
        DataError: a blank line before a label.
    """
    labels: list[str] = []
    blank: int | None = None
    for number, line in iter_lines(path):
        text = line.strip()
        if not text:
            blank = number if blank is None else blank
            continue
        if blank is not None:
            raise DataError(path, blank, "blank line before a label (expected one label per line)")
        labels.append(text)
    return labels


def evaluate_jsonl(gold_path: str | Path, prediction_path: str | Path) -> dict[str, object]:
    """Score ``PRED.txt`` (one label per line) against the labels of ``GOLD.jsonl``.

    Returns:
        ``{"accuracy": percent, "sentences": n, "correct": k}``.

    Raises:
        DataError: either file is malformed, or the line counts differ.
    """
    gold = [str(label) for _, _, label in read_jsonl_texts(gold_path, max_tokens=sys.maxsize)]
    predicted = read_label_lines(prediction_path)
    if len(predicted) != len(gold):
        raise DataError(
            prediction_path,
            None,
            f"{len(predicted)} predictions but {gold_path} has {len(gold)} examples "
            "(one label per line, in file order)",
        )
    accuracy = label_accuracy(gold, predicted)
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    return {"accuracy": 100 * accuracy, "sentences": len(gold), "correct": correct}


def write_label_lines(path: str | Path, labels: Iterable[str]) -> int:
    """Write one label name per line (JSON-lines data); returns the number written.

    Raises:
        ValueError: an empty label or one containing a line break or surrounding spaces.
    """
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for label in labels:
            if not label or label != label.strip() or "\n" in label or "\r" in label:
                raise ValueError(f"prediction {count}: {label!r} cannot be written on one line")
            handle.write(f"{label}\n")
            count += 1
    return count


def write_predictions(path: str | Path, labels: Iterable[int], *, binary: bool = False) -> int:
    """Write one label per line; returns the number written.

    Raises:
        ValueError: a label is not an integer in 0–4 (0/1 when ``binary``).
    """
    top = 2 if binary else NUM_LABELS
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for label in labels:
            if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < top:
                raise ValueError(f"prediction {count}: {label!r} is not a label 0-{top - 1}")
            handle.write(f"{label}\n")
            count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tasks.sst5.evaluate",
        description="SST root accuracy (fine-grained and binary, percent) as JSON.",
    )
    parser.add_argument(
        "trees", help="official SST tree file (one tree per line), or a .jsonl gold file"
    )
    parser.add_argument("predictions", help="one integer label per line, aligned with the trees")
    parser.add_argument(
        "--binary-predictions",
        action="store_true",
        help="predictions are polarities 0/1; only binary accuracy is reported",
    )
    args = parser.parse_args(argv)
    if str(args.trees).endswith(".jsonl"):
        if args.binary_predictions:
            parser.error("--binary-predictions applies to SST tree files only")
        return run_json_cli(lambda: evaluate_jsonl(args.trees, args.predictions))
    return run_json_cli(
        lambda: evaluate_files(
            args.trees, args.predictions, binary_predictions=args.binary_predictions
        ).as_dict()
    )


if __name__ == "__main__":
    sys.exit(main())
