"""Accuracy over the labelled pairs, missing predictions wrong."""

from __future__ import annotations

import pytest

from tasks.snli.metric import accuracy


def test_accuracy_counts_missing_as_wrong() -> None:
    result = accuracy(
        {"a": "neutral", "b": "entailment", "c": "contradiction"}, {"a": "neutral", "b": "neutral"}
    )
    assert (result.correct, result.total, result.missing) == (1, 3, ("c",))
    assert result.accuracy == pytest.approx(1 / 3)
    assert accuracy({}, {}).accuracy == 0.0
