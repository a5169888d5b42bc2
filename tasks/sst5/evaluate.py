"""SST root-accuracy evaluator and prediction-file writer.

Usage::

    python -m tasks.sst5.evaluate [--binary-predictions] TREES.txt PRED.txt

``TREES.txt`` is an official SST tree file; ``PRED.txt`` has one integer label per line, line *i*
for tree *i* (0–4, or 0/1 with ``--binary-predictions``). Prints JSON with ``fine_grained_accuracy``
and ``binary_accuracy`` (percent; binary over non-neutral gold roots, a predicted neutral counting
as wrong). Exit status 1 with a located message on malformed files or a line-count mismatch.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tasks.common.io import DataError, iter_lines, run_json_cli
from tasks.sst5.data import NUM_LABELS, iter_trees
from tasks.sst5.metric import SstResult, sst_accuracy


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
    parser.add_argument("trees", help="official SST tree file (one tree per line)")
    parser.add_argument("predictions", help="one integer label per line, aligned with the trees")
    parser.add_argument(
        "--binary-predictions",
        action="store_true",
        help="predictions are polarities 0/1; only binary accuracy is reported",
    )
    args = parser.parse_args(argv)
    return run_json_cli(
        lambda: evaluate_files(
            args.trees, args.predictions, binary_predictions=args.binary_predictions
        ).as_dict()
    )


if __name__ == "__main__":
    sys.exit(main())
