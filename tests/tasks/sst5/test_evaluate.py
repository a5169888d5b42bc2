"""The root-accuracy evaluator's command line and the prediction writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.sst5.evaluate import main, write_predictions
from tests.tasks.helpers import assert_cli_error, run_cli, write_lines
from tests.tasks.sst5.test_data import TREE


def run(
    tmp_path: Path, predictions: list[str], capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, dict, str]:
    trees = write_lines(tmp_path / "trees.txt", [TREE, "(0 (2 so) (0 bad))", "(2 (2 meh) (2 .))"])
    pred = write_lines(tmp_path / "pred.txt", predictions)
    return run_cli(main, [*flags, str(trees), str(pred)], capsys)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = tmp_path / "written.txt"
    assert write_predictions(written, [4, 0, 2]) == 3
    status, report, _ = run(tmp_path, written.read_text().splitlines(), capsys)
    assert status == 0
    assert report["fine_grained_accuracy"] == pytest.approx(200 / 3)
    assert report["binary_accuracy"] == 100.0 and report["binary_sentences"] == 2
    status, report, _ = run(tmp_path, ["1", "1", "0"], capsys, "--binary-predictions")
    assert report["fine_grained_accuracy"] is None and report["binary_accuracy"] == 50.0


@pytest.mark.parametrize(
    ("predictions", "line", "reason"),
    [
        (["3", "0"], None, "2 predictions but"),
        (["3", "0", "2", "1"], None, "4 predictions but"),
        (["3", "zero", "2"], 2, "integer label"),
        (["3", "5", "2"], 2, "integer label"),
        (["3", "", "0", "2"], 2, "blank line"),
    ],
)
def test_cli_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    predictions: list[str],
    line: int | None,
    reason: str,
) -> None:
    status, _, error = run(tmp_path, predictions, capsys)
    assert_cli_error(status, error, "pred.txt", line, reason)


def test_writer_rejects_bad_labels(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_predictions(tmp_path / "p.txt", [2, 5])
    with pytest.raises(ValueError):
        write_predictions(tmp_path / "p.txt", [3], binary=True)
