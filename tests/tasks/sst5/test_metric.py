"""Root accuracy: fine-grained and binary, the neutral rule."""

from __future__ import annotations

import pytest

from tasks.sst5.metric import sst_accuracy


def test_accuracy_and_neutral_rule() -> None:
    result = sst_accuracy([0, 2, 4, 3, 1], [1, 2, 4, 2, 0])
    assert result.fine_grained_accuracy == pytest.approx(2 / 5)
    # Non-neutral gold roots 0, 4, 3, 1 get 1 (negative: right), 4 (right), 2 (wrong), 0 (right).
    assert (result.binary_total, result.binary_correct, result.predicted_neutral) == (4, 3, 1)
    polar = sst_accuracy([0, 2, 4], [0, 1, 0], binary_predictions=True)
    assert polar.fine_grained_accuracy is None and polar.binary_accuracy == 0.5
    with pytest.raises(ValueError):
        sst_accuracy([0], [5])
