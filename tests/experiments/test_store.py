"""ResultsStore: round trip, append-only, atomic puts, concurrent writers (threads and
processes), provenance, replacing stale records (superseded/), run claims."""

from __future__ import annotations

import json
import math
import signal
import threading
from pathlib import Path
from typing import IO

import pytest

import experiments.run.store as store_module
from experiments.run.store import (
    FILES,
    ResultsStore,
    RunExistsError,
    RunRecord,
    collect_env,
    fingerprint_files,
)
from tests.experiments.helpers import PROVENANCE, make_record, make_spec
from tests.experiments.store_workers import await_ready, fake_identity, identified_record, start


def test_put_get_round_trip(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec(), 0.875)
    path = store.put(record)
    assert path == tmp_path / "snli" / record.run_id
    assert sorted(p.name for p in path.iterdir()) == sorted(FILES)
    assert store.has(record.run_id) and store.get(record.run_id) == record
    env = json.loads((path / "env.json").read_text())
    assert env["run_id"] == record.run_id and env["timings"] == {"wall_s": 1.5}
    assert json.loads((path / "metrics.json").read_text()) == {"accuracy": 0.875}
    assert len((path / "log.jsonl").read_text().splitlines()) == 2
    assert store.run_ids() == [record.run_id]


def test_missing_runs(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "nowhere")
    assert not store.has("0123456789ab") and store.records() == [] and store.run_ids() == []
    assert not store.has("../../etc")
    with pytest.raises(KeyError):
        store.get("0123456789ab")


def test_existing_run_is_never_overwritten(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    spec = make_spec()
    path = store.put(make_record(spec, 0.5))
    with pytest.raises(RunExistsError):
        store.put(make_record(spec, 0.9))
    assert json.loads((path / "metrics.json").read_text()) == {"accuracy": 0.5}
    assert store.partial() == []


def test_crash_while_writing_leaves_nothing_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec())
    real_write = store_module.write_text
    written: list[str] = []

    def write_then_crash(path: Path, text: str) -> None:
        if len(written) == 2:
            raise OSError("disk full (simulated)")
        real_write(path, text)
        written.append(path.name)

    monkeypatch.setattr(store_module, "write_text", write_then_crash)
    with pytest.raises(OSError, match="simulated"):
        store.put(record)
    assert len(written) == 2
    assert not store.has(record.run_id) and store.records() == [] and store.partial() == []
    monkeypatch.undo()
    assert store.put(record).is_dir()  # the same run can then be written


def test_a_killed_writer_leaves_only_an_invisible_temporary_folder(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec())
    # what a SIGKILL between two file writes leaves behind
    partial = tmp_path / "snli" / f".tmp-{record.run_id}-deadbeef"
    partial.mkdir(parents=True)
    (partial / "spec.json").write_text(json.dumps(record.spec.to_dict()))
    assert not store.has(record.run_id) and store.records() == [] and store.run_ids() == []
    assert store.partial() == [partial]
    store.put(record)
    assert store.run_ids() == [record.run_id]
    assert store.remove_partial() == [partial] and not partial.exists()


def _unlocked(path: Path, blocking: bool) -> IO[str]:
    """``lock_file`` of a filesystem without ``flock`` (or Windows): the file, opened, unlocked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("a+")


def test_writer_that_loses_the_rename_race_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a working lock (simulated: ``lock_file`` opens the file unlocked, as on a
    filesystem without ``flock``; with the real lock the rival ``put``, called from inside the
    first one, would wait for it forever), the rename into place still decides: the writer
    that finishes second raises :class:`RunExistsError` and the first record stays."""
    monkeypatch.setattr(store_module, "lock_file", _unlocked)
    store = ResultsStore(tmp_path)
    record = make_record(make_spec(), 0.25)
    real_write = store_module.write_text
    state = {"raced": False}

    def write_while_another_writer_finishes(path: Path, text: str) -> None:
        if not state["raced"]:
            state["raced"] = True
            ResultsStore(tmp_path).put(make_record(record.spec, 0.75))  # the rival wins
        real_write(path, text)

    monkeypatch.setattr(store_module, "write_text", write_while_another_writer_finishes)
    with pytest.raises(RunExistsError):
        store.put(record)
    assert store.get(record.run_id).metrics == {"accuracy": 0.75}
    assert store.partial() == [] and store.superseded(record.run_id) == []


def test_concurrent_puts_of_one_run_id_one_wins(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    spec = make_spec()
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def put(value: float) -> None:
        barrier.wait()
        try:
            store.put(make_record(spec, value))
            outcomes.append("won")
        except RunExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=put, args=(i / 10,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    assert len(store.records()) == 1 and store.partial() == []


def test_records_filters(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    specs = [
        make_spec("snli", seed=0),
        make_spec("snli", seed=1, lam=1.0),
        make_spec("srl", seed=0, sites=("input", "output")),
    ]
    for spec in specs:
        store.put(make_record(spec))
    assert len(store.records()) == 3
    assert [r.spec for r in store.records("snli", lam=1.0)] == [specs[1]]
    assert [r.spec for r in store.records(sites="output,input")] == [specs[2]]
    assert store.records("coref") == []
    with pytest.raises(ValueError, match="valid"):
        store.records(colour="red")


def test_bad_records_are_rejected_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="finite"):
        RunRecord(spec=make_spec(), metrics={"f1": math.nan}, provenance=PROVENANCE)
    with pytest.raises(TypeError, match="number"):
        RunRecord(spec=make_spec(), metrics={"f1": "high"}, provenance=PROVENANCE)  # type: ignore[dict-item]
    bad_log = RunRecord(spec=make_spec(), metrics={}, provenance=PROVENANCE, log=({"x": object()},))
    store = ResultsStore(tmp_path)
    with pytest.raises(ValueError, match="JSON"):
        store.put(bad_log)
    assert store.run_ids() == [] and store.partial() == []


def test_collect_env() -> None:
    env = collect_env(representation_fingerprint="abc", data_fingerprint="def")
    assert env.python.count(".") == 2 and env.numpy is not None and "numpy" in env.packages
    assert env.device == "cpu" or env.device.startswith("cuda")
    assert env.git_sha is None or len(env.git_sha) == 40
    assert env.representation_fingerprint == "abc" and env.data_fingerprint == "def"
    assert type(env).from_dict(json.loads(json.dumps(env.to_dict()))) == env


def test_fingerprint_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.txt").write_text("hello")
        (tmp_path / name / "sub").mkdir()
        (tmp_path / name / "sub" / "y.txt").write_text("world")
    assert fingerprint_files(tmp_path / "a") == fingerprint_files(tmp_path / "b")
    (tmp_path / "b" / "sub" / "y.txt").write_text("World")
    assert fingerprint_files(tmp_path / "a") != fingerprint_files(tmp_path / "b")
    assert len(fingerprint_files(tmp_path / "a" / "x.txt")) == 32


# ------------------------------------------------------------------ replacing stale records
def test_replace_moves_the_old_record_to_superseded_with_a_note(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    spec = make_spec()
    rid = spec.run_id
    first = store.put(identified_record(spec, 0.5, fake_identity("d1")))
    with pytest.raises(RunExistsError):  # replace=False: append-only as before
        store.put(identified_record(spec, 0.6, fake_identity("d2")))
    assert store.superseded(rid) == [] and store.get(rid).metrics == {"accuracy": 0.5}
    newer = identified_record(spec, 0.7, fake_identity("d2"))
    assert store.put(newer, replace=True, reason="data changed (changed train.txt)") == first
    old = tmp_path / "snli" / "superseded" / f"{rid}.1"
    assert store.superseded(rid) == [old]
    assert json.loads((old / "metrics.json").read_text()) == {"accuracy": 0.5}
    note = json.loads((old / "superseded.json").read_text())
    assert note["reason"] == "data changed (changed train.txt)"
    assert note["by_identity"] == fake_identity("d2").to_dict()
    assert isinstance(note["superseded_unix"], float)
    # readers see the new record only; the superseded one is no run of the store
    assert store.get(rid).metrics == {"accuracy": 0.7}
    assert store.run_ids() == [rid] and len(store.records()) == 1 and store.partial() == []
    assert store.identity_of(rid) == fake_identity("d2").to_dict()
    store.put(identified_record(spec, 0.8, fake_identity("d3")), replace=True)
    second = tmp_path / "snli" / "superseded" / f"{rid}.2"
    assert store.superseded(rid) == [old, second]
    assert json.loads((second / "metrics.json").read_text()) == {"accuracy": 0.7}
    assert json.loads((second / "superseded.json").read_text())["reason"] == "replaced"
    assert store.get(rid).metrics == {"accuracy": 0.8}


def test_superseded_records_are_listed_oldest_first_past_nine(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    spec = make_spec()
    store.put(make_record(spec, 0.0))
    for n in range(1, 12):
        store.put(make_record(spec, n / 100), replace=True, reason=f"change {n}")
    found = store.superseded(spec.run_id)
    assert [p.name for p in found] == [f"{spec.run_id}.{n}" for n in range(1, 12)]
    values = [json.loads((p / "metrics.json").read_text())["accuracy"] for p in found]
    assert values == [n / 100 for n in range(11)]
    assert store.superseded(make_spec(seed=9).run_id) == []


def test_identity_of_old_and_missing_records(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    old = make_record(make_spec(seed=0))  # no identity: a record older than store format 2
    store.put(old)
    assert store.identity_of(old.run_id) == {}
    assert store.identity_of(make_spec(seed=1).run_id) is None
    new = identified_record(make_spec(seed=2), 0.5, fake_identity())
    store.put(new)
    assert store.identity_of(new.run_id) == fake_identity().to_dict()
    assert store.get(new.run_id).provenance.identity == fake_identity().to_dict()


def test_two_processes_putting_one_run_id_store_exactly_one_record(tmp_path: Path) -> None:
    """Two processes start their ``put`` of the same run at one moment: one wins, the other
    gets :class:`RunExistsError`; one whole record (all files from the winner), nothing
    superseded, no temporary folder left."""
    root = tmp_path / "store"
    values = (0.1, 0.2)
    go = tmp_path / "go"
    readies = [tmp_path / f"ready-{v}" for v in values]
    workers = [
        start("put", str(root), str(v), str(ready), str(go))
        for v, ready in zip(values, readies, strict=True)
    ]
    try:
        for ready, worker in zip(readies, workers, strict=True):
            await_ready(ready, worker)
        go.touch()
        outcomes = []
        for worker in workers:
            out, err = worker.communicate(timeout=60)
            assert worker.returncode == 0, err
            outcomes.append(out.split())
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
    assert sorted(o[0] for o in outcomes) == ["lost", "won"]
    (winner,) = (float(v) for o, v in outcomes if o == "won")
    store = ResultsStore(root)
    spec = make_spec()
    assert store.run_ids() == [spec.run_id]
    assert store.get(spec.run_id) == make_record(spec, winner)  # no file of a loser in it
    assert store.partial() == [] and store.superseded(spec.run_id) == []
    leftovers = [p.name for p in (root / "snli").iterdir() if p.name.startswith(".tmp")]
    assert leftovers == []


def test_a_claim_held_by_another_process_is_refused_until_released(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec(seed=4)
    ready, go = tmp_path / "ready", tmp_path / "go"
    holder = start("hold", str(store.root), "4", str(ready), str(go))
    try:
        await_ready(ready, holder)
        assert store.claim(spec, wait=False) is None
        other = store.claim(make_spec(seed=5), wait=False)  # other runs are free
        assert other is not None
        other.release()
        go.touch()
        _, err = holder.communicate(timeout=60)
        assert holder.returncode == 0, err
    finally:
        holder.kill()
        holder.wait()
    claim = store.claim(spec, wait=False)
    assert claim is not None and claim.run_id == spec.run_id
    claim.release()
    claim.release()  # a second release is harmless
    assert not store.has(spec.run_id)  # the holder stored nothing


def test_the_claim_of_a_killed_process_is_free_again(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec(seed=4)
    ready = tmp_path / "ready"
    holder = start("hold", str(store.root), "4", str(ready), str(tmp_path / "never"))
    try:
        await_ready(ready, holder)
        assert store.claim(spec, wait=False) is None
    finally:
        holder.send_signal(signal.SIGKILL)  # no chance to release: the kernel does
        holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    claim = store.claim(spec, wait=False)
    assert claim is not None
    claim.release()


def test_a_waiting_claim_is_granted_when_the_holder_releases(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    spec = make_spec(seed=4)
    ready, go = tmp_path / "ready", tmp_path / "go"
    holder = start("hold", str(store.root), "4", str(ready), str(go), "--data", "d1")
    try:
        await_ready(ready, holder)
        threading.Timer(0.3, go.touch).start()
        claim = store.claim(spec, wait=True)  # blocks until the holder stored and released
        assert claim is not None
        assert store.identity_of(spec.run_id) == fake_identity("d1").to_dict()
        claim.release()
        holder.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert holder.returncode == 0


def test_a_damaged_record_not_needed_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One damaged record (unparseable, or JSON that is not a record) used to block every
    read of the store's records."""
    store = ResultsStore(tmp_path)
    good = make_record(make_spec(seed=0))
    store.put(good)
    broken = store.put(make_record(make_spec(seed=1)))
    (broken / "spec.json").write_text("{}", encoding="utf-8")  # JSON, but not a spec
    with pytest.raises(store_module.CorruptRecordError, match="spec.json: not a run spec"):
        store.records()
    assert [r.run_id for r in store.records(needed={good.run_id})] == [good.run_id]
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"warning: {broken / 'spec.json'}: not a run spec (")
    assert "--rerun" in warning
    with pytest.raises(store_module.CorruptRecordError, match=f"stored run {broken.name} is"):
        store.records(needed={broken.name})


def test_a_damaged_env_json_reads_as_no_identity_so_rerun_replaces_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fix the damaged-record message gives (--rerun) must work when env.json is the
    damaged file: the executor reads the stored identity first."""
    store = ResultsStore(tmp_path)
    record = make_record(make_spec())
    folder = store.put(record)
    (folder / "env.json").write_text('{"format": 2, "provenance": {', encoding="utf-8")
    damaged = store.identity_of(record.run_id)
    assert list(damaged) == ["damaged"] and damaged["damaged"].startswith("not valid JSON (")
    warning = capsys.readouterr().err
    assert warning.startswith(f"warning: {folder / 'env.json'}: not valid JSON (")
    assert warning.rstrip().endswith("(its identity cannot be read: the run counts as changed)")
    store.put(record, replace=True, reason="rerun asked for (--rerun)")
    assert store.get(record.run_id).metrics == record.metrics
    assert [p.name for p in store.superseded(record.run_id)] == [f"{record.run_id}.1"]


def test_a_damaged_record_names_its_file_and_the_fix(tmp_path: Path) -> None:
    """A truncated file used to give a bare JSONDecodeError."""
    store = ResultsStore(tmp_path)
    folder = store.put(make_record(make_spec()))
    fix = (
        f"the stored run {folder.name} is damaged: train it again by rerunning the command that "
        f"made it with --rerun (all of that command's runs train again; the damaged record is "
        f"kept under {folder.parent / 'superseded'}/), or remove its folder {folder} and rerun "
        "that command as it was (only this run trains)"
    )
    log = folder / "log.jsonl"
    log.write_text(log.read_text(encoding="utf-8") + '{"epoch": 3\n', encoding="utf-8")
    with pytest.raises(store_module.CorruptRecordError) as info:
        store.records()
    assert str(info.value).startswith(f"{log}: not valid JSON (") and "line 3, column" in str(
        info.value
    )
    assert fix in str(info.value)
    (folder / "env.json").unlink()
    with pytest.raises(ValueError, match=r"env\.json: missing; the stored run \w+ is damaged"):
        store.get(folder.name)
