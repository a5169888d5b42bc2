"""The results store stays inside itself: a task folder, run folder, record file, claim or lock
that is a symbolic link (or a name that leaves the store) is refused with one line naming the
path and what it points to, and nothing is read, written, renamed or deleted through it. A
store root that is itself a link is the user's choice and works as any other."""

from __future__ import annotations

import errno
import json
import pickle
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.cli.errors import exit_status
from experiments.run.executors import run_sweep
from experiments.run.store import (
    SUPERSEDED_NOTE,
    CorruptRecordError,
    ResultsStore,
    RunExistsError,
    StoreEscapeError,
    lock_file,
)
from tests.experiments.helpers import cli_dirs, fake_run, make_record, make_spec
from tests.experiments.store_workers import fake_identity, identified_record


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path below ``folder`` (``None`` for a folder) and each file's bytes."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the store holding a whole record of ``make_spec()`` (another store's)."""
    other = ResultsStore(tmp_path / "other")
    return other.put(identified_record(make_spec(), 0.9, fake_identity("d0")))


def refused(error: pytest.ExceptionInfo[StoreEscapeError], path: Path, target: Path) -> None:
    """The error is one line naming ``path`` and the link's ``target``."""
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path} is a symbolic link to {target}: the results store ")
    assert error.value.path == path


# ------------------------------------------------------------------------------ run folders
def test_a_run_folder_linked_outside_is_refused_and_the_outside_untouched(
    tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    kept = store.put(make_record(make_spec(seed=1)))
    link = tmp_path / "store" / "snli" / spec.run_id
    link.symlink_to(outside)
    before = snapshot(outside)
    newer = identified_record(spec, 0.1, fake_identity("d1"))
    for read in (store.has, store.path_of, store.get, store.identity_of, lambda _: store.records()):
        with pytest.raises(StoreEscapeError) as error:
            read(spec.run_id)
        refused(error, link, outside)
    with pytest.raises(StoreEscapeError) as error:  # not RunExistsError: it is no stored run
        store.put(newer)
    refused(error, link, outside)
    with pytest.raises(StoreEscapeError):  # what --rerun did: superseded.json went outside
        store.put(newer, replace=True, reason="rerun asked for (--rerun)")
    with pytest.raises(StoreEscapeError):  # a table that needs only the other run skips it
        store.records(needed={spec.run_id})
    assert [r.run_id for r in store.records(needed={kept.name})] == [kept.name]
    assert capsys.readouterr().err.startswith(f"warning: {link} is a symbolic link to {outside}")
    assert snapshot(outside) == before and not (outside / SUPERSEDED_NOTE).exists()
    assert link.is_symlink() and store.superseded(spec.run_id) == [] and store.partial() == []


def test_a_sweep_with_rerun_stops_at_a_linked_run_folder(tmp_path: Path, outside: Path) -> None:
    """The command line's path (identity, claim, put with replace): nothing is trained or
    written outside; the command prints the error's one line and exits 2."""
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    (tmp_path / "store" / "snli").mkdir(parents=True)
    link = tmp_path / "store" / "snli" / spec.run_id
    link.symlink_to(outside)
    before = snapshot(outside)
    for reuse in ("never", "matching"):
        with pytest.raises(StoreEscapeError) as error:
            run_sweep([spec], fake_run, store, identify=lambda s: fake_identity("d1"), reuse=reuse)
        refused(error, link, outside)
        assert exit_status(error.value) == 2
    assert snapshot(outside) == before


def test_the_command_line_refuses_a_linked_task_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run ner … --store STORE`` with ``STORE/ner`` a link: one line, status 2, no run."""
    away = tmp_path / "away"
    away.mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "ner").symlink_to(away)
    status = main(["run", "ner", "--config", "mini", "--data", "demo", *cli_dirs(tmp_path)])
    (line,) = capsys.readouterr().err.splitlines()
    assert status == 2 and line.startswith(f"error: {tmp_path / 'store' / 'ner'} is a symbolic")
    assert list(away.iterdir()) == [] and not (tmp_path / "work").exists()


def test_a_task_folder_linked_outside_is_refused(tmp_path: Path) -> None:
    away = tmp_path / "away"
    away.mkdir()
    root = tmp_path / "store"
    root.mkdir()
    (root / "snli").symlink_to(away)
    store = ResultsStore(root)
    spec = make_spec()
    for act in (
        lambda: store.put(make_record(spec)),
        lambda: store.claim(spec),
        lambda: store.run_ids(),
        lambda: store.run_ids("snli"),
        lambda: store.has(spec.run_id),
        lambda: store.partial(),
    ):
        with pytest.raises(StoreEscapeError) as error:
            act()
        refused(error, root / "snli", away)
    assert list(away.iterdir()) == []  # no .lock, no .claims, no record


def test_a_relative_link_names_where_it_resolves(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    store.put(make_record(make_spec(seed=1)))
    (tmp_path / "store" / "snli" / spec.run_id).symlink_to(Path("..") / ".." / "elsewhere")
    with pytest.raises(StoreEscapeError, match=r"to \.\./\.\./elsewhere \(") as error:
        store.get(spec.run_id)
    assert str(error.value).split("(")[1].startswith(f"{tmp_path / 'elsewhere'})")


# ------------------------------------------------------------------------------ record files
@pytest.mark.parametrize("name", ["spec.json", "metrics.json", "env.json", "log.jsonl"])
def test_a_linked_record_file_is_refused_not_read_as_damaged(
    tmp_path: Path, outside: Path, name: str
) -> None:
    """The linked file holds a valid record's file: it is refused all the same."""
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    folder = store.put(identified_record(spec, 0.5, fake_identity("d1")))
    (folder / name).unlink()
    (folder / name).symlink_to(outside / name)
    before = snapshot(outside)
    for read in (store.get, lambda rid: store.records()):
        with pytest.raises(StoreEscapeError) as error:
            read(spec.run_id)
        refused(error, folder / name, outside / name)
        assert not isinstance(error.value, CorruptRecordError)
    if name == "env.json":  # not `{}` (a damaged identity, which --rerun would replace)
        with pytest.raises(StoreEscapeError):
            store.identity_of(spec.run_id)
    assert snapshot(outside) == before


def test_a_linked_superseded_note_is_not_written_through(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    folder = store.put(make_record(spec, 0.5))
    note = tmp_path / "note.json"
    note.write_text("mine\n", encoding="utf-8")
    (folder / SUPERSEDED_NOTE).symlink_to(note)
    with pytest.raises(StoreEscapeError) as error:
        store.put(make_record(spec, 0.7), replace=True, reason="changed")
    refused(error, folder / SUPERSEDED_NOTE, note)
    assert note.read_text(encoding="utf-8") == "mine\n"
    assert store.superseded(spec.run_id) == [] and store.partial() == []


def test_a_linked_superseded_folder_is_not_renamed_into(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    store.put(make_record(spec, 0.5))
    away = tmp_path / "away"
    away.mkdir()
    (tmp_path / "store" / "snli" / "superseded").symlink_to(away)
    with pytest.raises(StoreEscapeError):
        store.put(make_record(spec, 0.7), replace=True)
    with pytest.raises(StoreEscapeError):
        store.superseded(spec.run_id)
    assert list(away.iterdir()) == [] and store.get(spec.run_id).metrics == {"accuracy": 0.5}


# ------------------------------------------------------------------------------ claims, locks
def test_a_linked_claim_is_refused(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    claims = tmp_path / "store" / "snli" / ".claims"
    claims.mkdir(parents=True)
    target = tmp_path / "someone-elses-file"
    target.write_text("keep\n", encoding="utf-8")
    (claims / spec.run_id).symlink_to(target)
    with pytest.raises(StoreEscapeError) as error:
        store.claim(spec, wait=False)
    refused(error, claims / spec.run_id, target)
    assert target.read_text(encoding="utf-8") == "keep\n"
    (claims / spec.run_id).unlink()  # the claim itself, once it is a plain file, works
    claim = store.claim(spec, wait=False)
    assert claim is not None
    claim.release()


def test_a_linked_claims_folder_is_refused(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    away = tmp_path / "away"
    away.mkdir()
    (tmp_path / "store" / "snli").mkdir(parents=True)
    (tmp_path / "store" / "snli" / ".claims").symlink_to(away)
    with pytest.raises(StoreEscapeError) as error:
        store.claim(make_spec())
    refused(error, tmp_path / "store" / "snli" / ".claims", away)
    assert list(away.iterdir()) == []


def test_a_linked_lock_is_refused(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    (tmp_path / "store" / "snli").mkdir(parents=True)
    target = tmp_path / "someone-elses-file"
    (tmp_path / "store" / "snli" / ".lock").symlink_to(target)  # dangling: it would be created
    record = make_record(make_spec())
    with pytest.raises(StoreEscapeError) as error:
        store.put(record)
    refused(error, tmp_path / "store" / "snli" / ".lock", target)
    assert not target.exists() and store.partial() == []
    assert [p.name for p in (tmp_path / "store" / "snli").iterdir()] == [".lock"]


def test_lock_file_never_follows_a_link(tmp_path: Path) -> None:
    """What closes the race between the store's check and the open: ``O_NOFOLLOW``."""
    target = tmp_path / "target"
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(OSError) as error:
        lock_file(tmp_path / "lock", blocking=False)
    assert error.value.errno == errno.ELOOP and not target.exists()


# ------------------------------------------------------------------------------ temporaries
def test_a_linked_temporary_folder_is_neither_listed_nor_deleted_through(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec()
    store.put(make_record(spec))
    away = tmp_path / "away"
    away.mkdir()
    (away / "precious.txt").write_text("keep\n", encoding="utf-8")
    link = tmp_path / "store" / "snli" / f".tmp-{spec.run_id}-deadbeef"
    link.symlink_to(away)
    for act in (store.partial, store.remove_partial):
        with pytest.raises(StoreEscapeError) as error:
            act()
        refused(error, link, away)
    assert (away / "precious.txt").read_text(encoding="utf-8") == "keep\n"


# ------------------------------------------------------------------------------ the root
def test_a_store_root_that_is_a_link_works_normally(tmp_path: Path) -> None:
    real = tmp_path / "disk" / "store"
    real.mkdir(parents=True)
    (tmp_path / "store").symlink_to(real)
    store = ResultsStore(tmp_path / "store")
    assert store.root == tmp_path / "store" and store.real_root == real
    spec = make_spec()
    folder = store.put(identified_record(spec, 0.5, fake_identity("d0")))
    assert folder == tmp_path / "store" / "snli" / spec.run_id
    assert (real / "snli" / spec.run_id / "metrics.json").is_file()
    assert store.has(spec.run_id) and store.get(spec.run_id).metrics == {"accuracy": 0.5}
    assert store.identity_of(spec.run_id) == fake_identity("d0").to_dict()
    claim = store.claim(spec, wait=False)
    assert claim is not None
    claim.release()
    store.put(identified_record(spec, 0.7, fake_identity("d1")), replace=True, reason="data")
    (old,) = store.superseded(spec.run_id)
    assert old == tmp_path / "store" / "snli" / "superseded" / f"{spec.run_id}.1"
    assert json.loads((old / SUPERSEDED_NOTE).read_text())["reason"] == "data"
    assert [r.metrics for r in store.records("snli")] == [{"accuracy": 0.7}]
    partial = real / "snli" / f".tmp-{spec.run_id}-deadbeef"
    partial.mkdir()
    assert store.remove_partial() == [tmp_path / "store" / "snli" / partial.name]
    assert not partial.exists()
    with pytest.raises(RunExistsError):
        store.put(make_record(spec))


def test_a_relative_root_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store opened in one folder keeps writing there after the process changes folder."""
    monkeypatch.chdir(tmp_path)
    store = ResultsStore("runs")
    monkeypatch.chdir(tmp_path.parent)
    assert store.put(make_record(make_spec())) == Path("runs") / "snli" / make_spec().run_id
    assert (tmp_path / "runs" / "snli" / make_spec().run_id).is_dir()


# ------------------------------------------------------------------------------ names
def test_names_cannot_leave_the_store(tmp_path: Path) -> None:
    """A task name is a plain folder name (``put`` and ``claim`` check it) and a run id is 12 hex
    digits (every lookup checks it), so ``..`` never reaches a path; a task given to a reader
    that is not one plain name is refused."""
    root = tmp_path / "store"
    store = ResultsStore(root)
    store.put(make_record(make_spec()))
    before = snapshot(tmp_path)
    escaping = make_spec(task="../escaped")
    with pytest.raises(ValueError, match="not a valid folder name"):
        store.put(make_record(escaping))
    with pytest.raises(ValueError, match="not a valid folder name"):
        store.claim(escaping)
    for task in ("..", "../snli", "snli/.."):
        with pytest.raises(StoreEscapeError, match="is not a plain name below the store"):
            store.run_ids(task)
        with pytest.raises(StoreEscapeError):
            store.records(task)
    assert not store.has("../../etc") and store.path_of("../snli") is None
    assert store.superseded("../*") == [] and store.identity_of("..") is None
    with pytest.raises(KeyError):
        store.get("../snli")
    assert snapshot(tmp_path) == before and not (tmp_path / "escaped").exists()


def test_the_error_is_one_line_and_survives_pickling(tmp_path: Path) -> None:
    error = StoreEscapeError(tmp_path / "a", "/b", tmp_path, link=True)
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, StoreEscapeError) and isinstance(again, ValueError)
    assert str(again) == str(error) and "\n" not in str(again)
    assert (again.path, again.points_to, again.root) == (tmp_path / "a", "/b", tmp_path)
    assert exit_status(again) == 2
