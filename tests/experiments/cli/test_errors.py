"""The command line's one error policy (experiments/cli/errors.py): a command-line mistake ends
before any run with one line ``error: ...`` and exit status 2, in every command."""

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
        # an empty --seeds used to run nothing and exit 0; a bad one gave no hint
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
    """The PermissionError / NotADirectoryError used to come after training."""
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


# ----------------------------------------------------------------------------- tracebacks
def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_ctrl_c_is_one_line_and_exit_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 26-frame KeyboardInterrupt traceback was printed."""
    from experiments.cli import runs

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "run_all", interrupted)
    with registered(tmp_path / "toy-demo"):
        status = main(["run", "toy", "--repr", "none", *cli_dirs(tmp_path)])
    assert status == 130
    assert _one_error_line(capsys) == "interrupted; rerun the same command to resume"


def test_missing_probe_and_corpus_files_and_bad_columns_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``error: 2`` (the errno) or a bare ``int()`` / unpacking message was printed."""
    tagged = tmp_path / "pos.txt"
    tagged.write_text("The DT\ncat NN\n\n", encoding="utf-8")
    missing = tmp_path / "missing.txt"
    assert main(["probes", "--pos-data", str(missing), str(tagged)]) == 2
    assert _one_error_line(capsys) == f"error: --pos-data: {missing}: no such file"
    assert main(["probes", "--pos-data", str(tmp_path)]) == 2  # a folder without train.txt
    assert _one_error_line(capsys) == f"error: --pos-data: {tmp_path / 'train.txt'}: no such file"
    for columns in ("x", "0", "1,1", "0,-1"):
        with pytest.raises(SystemExit) as exit_:
            main(["probes", "--pos-data", str(tagged), str(tagged), "--pos-columns", columns])
        assert exit_.value.code == 2
        line = _one_error_line(capsys)
        assert line.startswith("error: python -m experiments probes: argument --pos-columns: ")
        assert "WORD,TAG (e.g. 0,1)" in line and repr(columns) in line
    assert main(["neighbours", "play", "--corpus", str(missing)]) == 2
    assert _one_error_line(capsys) == f"error: --corpus: {missing}: no such file"


def test_a_system_file_error_names_the_file() -> None:
    from experiments.cli.errors import one_line

    assert one_line(FileNotFoundError(2, "No such file or directory", "a.txt")) == (
        "a.txt: No such file or directory"
    )
    assert one_line(FileNotFoundError("a.txt: not found")) == "a.txt: not found"


def test_max_parallel_is_checked_by_the_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for value in ("0", "-2", "two"):
        with pytest.raises(SystemExit) as exit_:
            main(["run", "squad", "--max-parallel", value, *cli_dirs(tmp_path)])
        assert exit_.value.code == 2
        assert _one_error_line(capsys) == (
            "error: python -m experiments run: argument --max-parallel: expected an integer "
            f">= 1, got {value!r} (see --help)"
        )


def test_ray_executor_without_ray_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ImportError traceback came from the executor."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a)
    )
    with registered(tmp_path / "toy-demo"):
        status = main(["run", "toy", "--repr", "none", "--executor", "ray", *cli_dirs(tmp_path)])
    assert status == 2
    line = _one_error_line(capsys)
    assert line.startswith("error: --executor ray needs Ray") and "pip install ray" in line
    assert not (tmp_path / "work").exists()  # nothing trained


def test_a_corrupt_metrics_file_names_the_file_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bare JSONDecodeError traceback was printed."""
    argv = ["run", "toy", "--repr", "none", "--max-epochs", "1", *cli_dirs(tmp_path)]
    with registered(tmp_path / "toy-demo"):
        assert main(argv) == 0
        capsys.readouterr()
        (metrics,) = (tmp_path / "store").glob("toy/*/metrics.json")
        metrics.write_text(metrics.read_text(encoding="utf-8")[:5], encoding="utf-8")
        status = main(argv)
    assert status == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"error: {metrics}: not valid JSON (") and "line 2, column" in line
    assert f"); the stored run {metrics.parent.name} is damaged: train it again by " in line
    assert "with --rerun" in line
    assert line.endswith(
        f"remove its folder {metrics.parent} and rerun that command as it was (only this run "
        "trains)"
    )


def test_a_damaged_record_blocks_only_the_tables_that_need_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One damaged record of a task used to block rendering every table of that task,
    with a message that did not mention --rerun."""
    from experiments.report import reproductions
    from experiments.run.spec import derive
    from experiments.run.store import ResultsStore
    from tests.experiments.test_report import fake_record

    dirs = ["--store", str(tmp_path / "store"), "--out", str(tmp_path / "out")]
    argv = ["render", "table1", "--tasks", "toy", "--seeds", "0", *dirs]
    with registered(tmp_path / "toy-demo"):
        (table,) = reproductions.tables("table1", "mini", "demo", (0,), {}, tasks=["toy"])
        specs = reproductions.expected_specs(table)
        store = ResultsStore(tmp_path / "store")
        for spec in specs:
            store.put(fake_record(spec, 0.7))
        other = store.put(fake_record(derive(specs[0], {"seed": 7}), 0.5))  # not in the table
        (other / "metrics.json").write_text("{", encoding="utf-8")
        assert main(argv) == 0
        out, err = capsys.readouterr()
        (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
        assert warning.startswith(f"warning: {other / 'metrics.json'}: not valid JSON (")
        assert "--rerun" in warning and warning.endswith("(skipped: not needed here)")
        assert "70.0" in out  # the table rendered from the good records
        needed = store.path_of(specs[0].run_id)
        assert needed is not None
        (needed / "metrics.json").write_text("{", encoding="utf-8")
        assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"error: {needed / 'metrics.json'}: not valid JSON (")
    assert f"the stored run {specs[0].run_id} is damaged" in last and "--rerun" in last
    assert "python -m experiments reproduce table1" in last
