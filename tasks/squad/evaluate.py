"""SQuAD v1.1 evaluator (same inputs and output as the official ``evaluate-v1.1.py``) and writer.

Usage::

    python -m tasks.squad.evaluate DATASET.json PREDICTIONS.json

``DATASET.json`` is an official SQuAD v1.1 file (e.g. ``dev-v1.1.json``); ``PREDICTIONS.json`` is
one JSON object ``{question_id: answer_text}`` (:func:`write_predictions` writes it). Like the
official script this prints ``json.dumps({"exact_match": EM, "f1": F1})`` (percent, unrounded) to
stdout, prints ``Evaluation expects v-1.1, but got dataset with v-X`` to stderr when the dataset's
``version`` is not ``"1.1"``, and ``Unanswered question ID will receive score 0.`` for each
question without a prediction. Where the official script would crash with a traceback (a missing
file, invalid UTF-8, bad JSON, a missing field, a non-string prediction) this prints
``error: <file>[:line]: <reason>`` and exits with status 1; a dataset without a ``version`` key gets
the warning with ``v-None`` instead of a ``KeyError``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tasks.common.io import DataError
from tasks.squad.data import EXPECTED_VERSION, load_json_document
from tasks.squad.metric import evaluate


def read_predictions(path: str | Path) -> dict[str, str]:
    """Read a predictions file: one JSON object mapping question ids to answer strings.

    Raises:
        DataError: the file is missing, not UTF-8, not JSON, not an object, or a value is not a
            string.
    """
    document = load_json_document(path)
    if not isinstance(document, dict):
        raise DataError(path, None, "expected a JSON object {question_id: answer_text}")
    for qid, text in document.items():
        if not isinstance(text, str):
            raise DataError(path, None, f"prediction for {qid!r} is not a string")
    return document


def write_predictions(path: str | Path, predictions: Mapping[str, str]) -> int:
    """Write ``{question_id: answer_text}`` as one UTF-8 JSON object; returns the number written.

    Raises:
        ValueError: a non-string id or answer.
    """
    for qid, text in predictions.items():
        if not isinstance(qid, str) or not isinstance(text, str):
            raise ValueError(f"predictions must map str to str, got {qid!r}: {text!r}")
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        json.dump(dict(predictions), handle, ensure_ascii=False)
        handle.write("\n")
    return len(predictions)


def evaluate_files(dataset_path: str | Path, prediction_path: str | Path) -> dict[str, float]:
    """Score a predictions file against a dataset file (warnings go to stderr, as officially).

    Raises:
        DataError: either file is malformed.
        ValueError: the dataset has no questions or a question has no gold answers.
    """
    dataset_json = load_json_document(dataset_path)
    if not isinstance(dataset_json, dict):
        raise DataError(dataset_path, None, 'expected a JSON object with "version" and "data"')
    version = dataset_json.get("version")
    if version != EXPECTED_VERSION:
        print(
            f"Evaluation expects v-{EXPECTED_VERSION}, but got dataset with v-{version}",
            file=sys.stderr,
        )
    predictions = read_predictions(prediction_path)
    return evaluate(dataset_json, predictions, source=str(dataset_path))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tasks.squad.evaluate",
        description=f"Evaluation for SQuAD {EXPECTED_VERSION}",
    )
    parser.add_argument("dataset_file", help="Dataset file")
    parser.add_argument("prediction_file", help="Prediction File")
    args = parser.parse_args(argv)
    try:
        scores = evaluate_files(args.dataset_file, args.prediction_file)
    except ValueError as exc:  # DataError included
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
