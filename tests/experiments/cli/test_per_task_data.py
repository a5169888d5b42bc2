"""Tables on the user's own data, per task (docs/runs.md): ``--data TASK=DIR,...`` or a TOML
file gives each row its own data; rows whose runs fail are shown as failed, the others rendered.

Two toy tasks (``toy`` and ``toy2``, the same task under two names) stand for two tasks."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments.cli import build_parser, main
from experiments.cli.tables import _tables
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import make_task, write_data


@contextlib.contextmanager
def two_toys(folder: Path) -> Iterator[None]:
    """``toy`` and ``toy2`` registered inside the block (their DEMO sets under ``folder``)."""
    from tasks import registry

    toy = make_task(folder / "toy-demo")
    row = dataclasses.replace(toy.table_rows[0], label="Toy 2", paper_key="toy2")
    second = dataclasses.replace(make_task(folder / "toy2-demo"), name="toy2", table_rows=(row,))
    registry.TASKS["toy"], registry.TASKS["toy2"] = toy, second
    try:
        yield
    finally:
        registry.TASKS.pop("toy", None)
        registry.TASKS.pop("toy2", None)


def _render_dirs(tmp_path: Path) -> list[str]:
    return ["--store", str(tmp_path / "store"), "--out", str(tmp_path / "out")]


def _row_data(argv: list[str]) -> dict[str, str]:
    """Task → the data label of its rows' specs, for ``render table1 ARGV``."""
    (table,) = _tables(build_parser().parse_args(["render", "table1", *argv]))
    return {row.base.task: row.base.data for row in table.rows}


def test_a_per_task_mapping_reaches_each_rows_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with two_toys(tmp_path):
        mapped = _row_data(["--data", "toy=/data/one,toy2=/data/two"])
        assert mapped == {"toy": "/data/one", "toy2": "/data/two"}  # the others left out
        assert _row_data(["--data", "toy2=demo", "--tasks", "toy2"]) == {"toy2": "demo"}
        # one folder for every task, as before
        assert set(_row_data(["--data", "/data/one", "--tasks", "toy,toy2"]).values()) == {
            "/data/one"
        }
        argv = ["render", "table1", "--data", "toy=/data/one,toy2=/data/two"]
        assert main([*argv, *_render_dirs(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "Data: per task: toy = /data/one; toy2 = /data/two." in out
        (left,) = [line for line in out.splitlines() if "Left out" in line]
        assert "--data names no data for them" in left and "ner" in left and "toy" not in left
        # a --tasks task without an entry is an error, not a silent omission
        argv = ["render", "table1", "--data", "toy=/data/one", "--tasks", "toy,toy2"]
        assert main([*argv, *_render_dirs(tmp_path)]) == 2
        assert "--data names no data for toy2" in capsys.readouterr().err


def test_a_toml_file_names_each_tasks_data_relative_to_itself(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    toml = sub / "data.toml"
    toml.write_text('[data]\ntoy = "toy-data"\ntoy2 = "/abs/two"\n', encoding="utf-8")
    with two_toys(tmp_path):
        rows = _row_data(["--data", str(toml), "--tasks", "toy,toy2"])
    assert rows == {"toy": str(sub / "toy-data"), "toy2": "/abs/two"}


def test_an_unknown_task_in_the_mapping_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with two_toys(tmp_path):
        for data in ("toy=/d,nope=/e", _toml(tmp_path, 'nope = "x"')):
            assert main(["reproduce", "table1", "--data", data, *cli_dirs(tmp_path)]) == 2
            err = capsys.readouterr().err
            assert err.startswith("error: ") and err.count("\n") == 1, err
            assert "unknown task(s) nope; registered: " in err and "toy2" in err and "ner" in err
    assert not (tmp_path / "store").exists()


def _toml(folder: Path, body: str) -> str:
    path = folder / "bad.toml"
    path.write_text(f"[data]\n{body}\n", encoding="utf-8")
    return str(path)


def test_a_failing_row_is_shown_as_failed_and_the_others_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_data(tmp_path / "good", n=48)
    bad = tmp_path / "bad"
    bad.mkdir()  # no train.jsonl: toy2's runs fail
    argv = ["reproduce", "table1", "--data", f"toy={good},toy2={bad}", "--seeds", "0"]
    with two_toys(tmp_path):
        status = main([*argv, "--set", "train.epochs=1", *cli_dirs(tmp_path)])
    assert status == 1  # a run failed
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    (toy,) = [line for line in lines if line.startswith("| Toy task model on good (")]
    (toy2,) = [line for line in lines if line.startswith("| Toy 2 task model on bad (")]
    assert "failed" not in toy and "(n=1)" in toy
    assert toy2.split("|")[2:5:2] == [" failed ", " failed "]  # Baseline, ELMo (paper between)
    prose = " ".join(captured.out.split())  # the notes are numbered and wrapped
    note = prose.split("Toy 2 task model on bad (Acc.): failed, 2 run(s)", 1)[1][:300]
    assert "FileNotFoundError" in note and "train.jsonl" in note
    assert "2 run(s) failed: the tables above show their cells as 'failed'" in captured.err
    assert "error: 2 of 4 runs failed" in captured.err
    (written,) = (tmp_path / "out" / "tables").glob("table1-*-table1.md")
    assert "| Toy 2 task model on bad (" in written.read_text(encoding="utf-8")
