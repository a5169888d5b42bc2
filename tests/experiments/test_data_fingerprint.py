"""A run's data fingerprint (``experiments.run.identity``) checks the folder first and hashes
only what the task's reader reads: a folder without the task's files is refused in one line,
naming the folder and the files wanted, before any file is opened; a valid folder's fingerprint
opens only the reader's files (``TaskSpec.data_files``), never a large file beside them; a long
fingerprint says so on stderr first."""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from experiments.cli import main
from experiments.plan import specs as plan
from experiments.run import identity
from experiments.run.spec import RunSpec
from tasks.registry import TASKS, get_task
from tests.experiments.helpers import cli_dirs

#: A file the task's reader names in its error for a folder without its files.
WANTED = {
    "sst5": "train.txt",
    "snli": "snli_1.0_train.jsonl",
    "squad": "train-v1.1.json",
    "ner": "eng.train",
    "srl": "train/",
    "coref": "train.*gold_conll",
}
BIG = 5_000_000  # bytes of the unrelated file


def baseline(task: str, data: Path) -> RunSpec:
    """The task's ``mini`` baseline on ``data``, as ``run TASK --repr none --data DATA``."""
    return plan.baseline(plan.base_spec(get_task(task), "mini", str(data), {}, ()))


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Every path opened for reading through :meth:`pathlib.Path.open` (the hashing's and the
    readers' way in), resolved, in order."""
    paths: list[Path] = []
    original = pathlib.Path.open

    def recording(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if not set(mode) & set("wax"):
            paths.append(self.resolve())
        return original(self, mode, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", recording)
    yield paths


def unrelated_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder holding only a 5 MB file no task reads; ``(folder, big file)``."""
    folder = tmp_path / "not-data"
    folder.mkdir()
    big = folder / "archive.bin"
    big.write_bytes(b"\0" * BIG)
    return folder, big


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_folder_without_the_tasks_files_is_refused_before_anything_is_read(
    task: str, tmp_path: Path, opened: list[Path]
) -> None:
    folder, big = unrelated_folder(tmp_path)
    with pytest.raises((FileNotFoundError, ValueError)) as info:
        identity.run_identity(baseline(task, folder), device="cpu", threads=1)
    message = str(info.value)
    assert "\n" not in message and str(folder) in message and WANTED[task] in message
    assert big.resolve() not in opened


def test_the_command_refuses_it_in_one_line_without_hashing(
    tmp_path: Path,
    opened: list[Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, big = unrelated_folder(tmp_path)
    hashed: list[Path] = []
    digest = identity.content_digest

    def recording(path: Any) -> str:
        hashed.append(Path(path))
        return digest(path)

    monkeypatch.setattr(identity, "content_digest", recording)
    argv = ["run", "sst5", "--repr", "none", "--data", str(folder), *cli_dirs(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {folder}: no train.txt and no dev.txt") and err.count("\n") == 1
    assert hashed == [] and big.resolve() not in opened


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_fingerprint_opens_only_the_files_the_reader_reads(
    task: str, tmp_path: Path, opened: list[Path]
) -> None:
    data = tmp_path / "data"
    shutil.copytree(get_task(task).demo(), data)
    read = {p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file()}
    big = data / "archive.bin"
    big.write_bytes(b"\0" * BIG)
    (data / "notes").mkdir()
    (data / "notes" / "README.md").write_text("not data\n", encoding="utf-8")
    now = identity.run_identity(baseline(task, data), device="cpu", threads=1)
    assert {k for k in now.data_files if not k.startswith("config:")} == read
    root = data.resolve()
    hashed = {p.relative_to(root).as_posix() for p in opened if root in p.parents}
    assert hashed == read  # each read file hashed, nothing else below the folder opened
    assert big.resolve() not in opened
    # the same files in a folder without the extras: the same fingerprint
    bare = tmp_path / "bare"
    shutil.copytree(get_task(task).demo(), bare)
    assert identity.run_identity(baseline(task, bare), device="cpu", threads=1).data == now.data


def test_a_long_fingerprint_says_so_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    identity.data_identity(baseline("sst5", get_task("sst5").demo()))  # the GloVe files hashed
    capsys.readouterr()
    monkeypatch.setattr(identity, "ANNOUNCE_BYTES", 1_000_000)  # the DEMO files: 0.7 MB
    data = tmp_path / "data"
    shutil.copytree(get_task("sst5").demo(), data)
    (data / "archive.bin").write_bytes(b"\0" * BIG)
    spec = baseline("sst5", data)
    identity.data_identity(spec)
    assert "fingerprinting" not in capsys.readouterr().err  # the big file is not counted
    trees = (data / "train.txt").read_text(encoding="utf-8")
    (data / "train.txt").write_text(trees * (2_000_000 // len(trees) + 1), encoding="utf-8")
    identity.data_identity(spec)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("fingerprinting ") and line.endswith(" MB) ...")
    assert " files (" in line or " file (" in line
    identity.data_identity(spec)  # hashed already in this process: nothing to announce
    assert capsys.readouterr().err == ""


def test_a_record_whose_data_folder_lost_its_files_is_left_out_with_the_reason(
    tmp_path: Path,
) -> None:
    from tests.experiments.helpers import make_record

    folder, _ = unrelated_folder(tmp_path)
    record = make_record(baseline("sst5", folder))
    current = identity.current_records([record])
    assert current.kept == [] and list(current.left_out) == [record.run_id]
    reason = current.left_out[record.run_id]
    assert reason.startswith("its identity cannot be computed here (") and str(folder) in reason
