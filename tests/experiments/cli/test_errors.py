"""The command line's one error policy (experiments/cli/errors.py): a command-line mistake ends
before any run with one line ``error: ...`` and exit status 2 (issue #14), in every command."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.cli import main
from tests.experiments.helpers import cli_dirs


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "bogus"], "invalid choice: 'bogus'"),  # unknown task (argparse)
        (["reproduce", "table1", "--tasks", "squad,bogus"], "unknown task(s) ['bogus']"),
        (["run", "squad", "--repr", "bogus"], "unknown representation 'bogus'"),
        (["sweep", "squad", "--repr", "elmo,bogus"], "unknown representation 'bogus'"),
        (["run", "squad", "--config", "bogus"], "no preset 'bogus'"),
        (["run", "squad", "--set", "nokey=1"], "unknown config key 'nokey'"),
        (["sweep", "srl", "--set", "train.nokey=1"], "unknown config key 'train.nokey'"),
        (["run", "squad", "--set", "hidden=abc"], "hidden='abc': expected int"),
        (["reproduce", "squad_elmo", "--set", "train.epochs=0"], "epochs and batch_size"),
        (["run", "squad", "--max-skipped", "2"], "expected a share in [0, 1]"),
        (["run", "squad", "--sites", "bogus"], "unknown sites ['bogus']"),
    ],
)
def test_command_line_mistakes_are_one_line_and_exit_2(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main([*argv, *cli_dirs(tmp_path)])
    except SystemExit as exit_:  # argparse's own checks (choices, types)
        status = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]
    assert "Traceback" not in captured.err and captured.out == ""
    assert not any((tmp_path / d).exists() for d in ("store", "work", "out", "cache"))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["probes", "--reprs", "elmo,bogus"], "--reprs: unknown 'bogus'"),
        (["probes", "--elmo", "a", "b", "c"], "--elmo takes OPTIONS.json WEIGHTS.hdf5"),
        (["neighbours", "play", "--corpus", "c.txt", "--elmo", "a", "b", "c"], "--elmo takes"),
        (["probes", "--reprs", "bilm-random", "--elmo", "published:x"], "bilm-random takes"),
    ],
)
def test_analyses_share_the_policy_and_the_elmo_flag(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
