"""The command line's one error policy (experiments/cli/errors.py): a command-line mistake ends
before any run with one line ``error: ...`` and exit status 2 (issue #14), in every command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.cli.options import seeds
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered


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
        # issue #26 item 9: an empty --seeds ran nothing and exited 0; a bad one gave no hint
        (["run", "squad", "--seeds", ""], "--seeds needs at least one seed, e.g. 0,1,2"),
        (["sweep", "srl", "--seeds", ","], "--seeds needs at least one seed, e.g. 0,1,2"),
        (
            ["run", "squad", "--seeds", "a"],
            "--seeds takes comma-separated integers or a range like 0-4, got 'a'",
        ),
        (["reproduce", "squad_elmo", "--seeds", "3-1"], "--seeds range '3-1' is empty"),
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


def test_seeds_take_integers_and_ranges() -> None:
    assert seeds("0,1, 2") == (0, 1, 2)
    assert seeds("0-3,7") == (0, 1, 2, 3, 7)
    assert seeds("-1") == (-1,)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from bilm.version import package_version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"python -m experiments {package_version()}\n"


def _store_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """``--store`` values that cannot be written, and what the error says about each."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    cases = {
        "is a file": (a_file, f"--store {a_file} is a file, not a folder"),
        "under a file": (
            a_file / "sub" / "store",
            f"--store {a_file}/sub/store is under {a_file}, which is a file, not a folder",
        ),
    }
    if os.geteuid() != 0:  # root writes anywhere: the permission case needs another user
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases["no permission"] = (
            locked / "store",
            f"--store {locked}/store cannot be written: no permission to write in {locked}",
        )
    return cases


@pytest.mark.parametrize("case", ["is a file", "under a file", "no permission"])
def test_an_unusable_store_is_found_before_any_run(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #26 item 6: the PermissionError / NotADirectoryError came after training."""
    cases = _store_cases(tmp_path)
    if case not in cases:
        pytest.skip("running as root: permissions do not stop root from writing")
    store, expected = cases[case]
    argv = ["run", "toy", "--repr", "none", "--max-epochs", "1", *cli_dirs(tmp_path)]
    argv[argv.index("--store") + 1] = str(store)
    with registered(tmp_path / "toy-demo"):
        status = main(argv)
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.strip().splitlines() == [f"error: {expected}"]
    assert not (tmp_path / "work").exists()  # nothing trained
