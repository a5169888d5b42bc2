"""W&B sink, fully offline: what the sink writes is read back from the run's transaction log.

In offline mode wandb 0.31 (wandb-core) writes only
``<dir>/wandb/offline-run-<time>-<id>/run-<id>.wandb`` (plus ``files/media/...`` for tables and
images, ``files/requirements.txt`` and ``logs/``); no ``files/wandb-summary.json`` or
``files/config.yaml``. The ``.wandb`` file is a LevelDB-style log of ``wandb.proto`` ``Record``
messages; :func:`read_records` decodes it (wandb no longer ships a Python reader).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from experiments.run.wandb_sink import NullSink, Sink, WandbOptions, WandbSink, log_artifacts

REPO = Path(__file__).resolve().parents[2]

BLOCK, HEADER, MAGIC = 32768, 7, b":W&B"  # LevelDB log blocks; record header: crc, length, type


def read_records(path: Path) -> Iterator[Any]:
    """``wandb_internal_pb2.Record`` messages of a ``run-*.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == MAGIC, f"{path} is not a W&B transaction log"
    pos, chunks = 7, b""  # file header: ":W&B", magic 0xBEE1, version
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # block trailer padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if length == 0 and kind == 0:
            pos += left
            continue
        chunks += data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(chunks)
            chunks = b""
            yield record


def _key(item: Any) -> str | None:
    """Top-level scalar key of a history/summary item (``None`` for nested media fields)."""
    if item.key:
        return item.key
    return item.nested_key[0] if len(item.nested_key) == 1 else None


def wait_for_exit(log: Path, timeout: float = 30.0) -> None:
    """Wait until the log holds its ``exit`` record: ``run.finish()`` in offline mode can return a
    few milliseconds before wandb-core has flushed and closed the file."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if any(r.WhichOneof("record_type") == "exit" for r in read_records(log)):
                return
        except Exception:  # a record still being written
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{log} has no exit record after {timeout} s")
        time.sleep(0.05)


def decode_run(folder: Path) -> dict[str, Any]:
    """Run metadata, config, history rows by step, final summary and artifacts of a run folder."""
    (log,) = folder.glob("run-*.wandb")
    wait_for_exit(log)
    out: dict[str, Any] = {"config": {}, "history": {}, "summary": {}, "artifacts": []}
    for record in read_records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            out["run"] = {
                "name": run.display_name,
                "project": run.project,
                "group": run.run_group,
                "job_type": run.job_type,
                "tags": list(run.tags),
            }
            for item in run.config.update:
                out["config"][_key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                if _key(item) is not None:
                    out["config"][_key(item)] = json.loads(item.value_json)
        elif kind == "history":
            row = {
                _key(item): json.loads(item.value_json)
                for item in record.history.item
                if _key(item) is not None
            }
            media = {i.nested_key[0] for i in record.history.item if len(i.nested_key) > 1}
            row.update({key: True for key in media})  # tables and images: present
            out["history"][row["_step"]] = row
        elif kind == "summary":
            for item in record.summary.update:
                if _key(item) is not None and len(item.nested_key) <= 1:
                    out["summary"][_key(item)] = json.loads(item.value_json)
        elif kind == "artifact":
            art = record.artifact
            paths = [c.path for c in art.manifest.contents]
            out["artifacts"].append({"name": art.name, "type": art.type, "paths": paths})
    return out


def test_null_sink_does_nothing() -> None:
    sink: Sink = NullSink()
    sink.log({"lr": 0.1}, step=1)
    sink.log_mix({"input": [0.5, 0.5]}, {"input": 1.0}, step=1)
    sink.finish({"dev_f1": 1.0})


def test_options_default_to_offline_and_the_work_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_DIR", raising=False)
    options = WandbOptions("p")
    assert options.resolved_mode() == "offline"
    assert options.resolved_directory(Path("work")) == Path("work")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("WANDB_DIR", "/tmp/elsewhere")
    assert options.resolved_mode() == "disabled"
    assert options.resolved_directory(Path("work")) == Path("/tmp/elsewhere")
    explicit = WandbOptions("p", directory="mine", mode="offline")
    assert (explicit.resolved_mode(), explicit.resolved_directory(Path("w"))) == (
        "offline",
        Path("mine"),
    )
    with pytest.raises(ValueError, match="project"):
        WandbOptions(" ")


def test_importing_experiments_does_not_import_wandb() -> None:
    code = (
        "import sys, experiments, experiments.run.wandb_sink as w; "
        "w.WandbOptions('p'); w.NullSink(); assert 'wandb' not in sys.modules, 'wandb imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_missing_wandb_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes ``import wandb`` raise ImportError
    with pytest.raises(ImportError, match="pip install wandb"):
        WandbSink(WandbOptions("p"), name="r", config={}, work_dir=tmp_path)
    png = tmp_path / "a.md"
    png.write_text("x")
    with pytest.raises(ImportError, match="pip install wandb"):
        log_artifacts(WandbOptions("p"), [png], name="t")
    old = types.ModuleType("wandb")
    old.__version__ = "0.17.5"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", old)
    with pytest.raises(ImportError, match=r"wandb>=0\.19\.10, found 0\.17\.5"):
        WandbSink(WandbOptions("p"), name="r", config={}, work_dir=tmp_path)


def test_sink_writes_metrics_mix_config_and_summary_offline(offline_env: Path) -> None:
    pytest.importorskip("wandb")
    work = offline_env / "work"
    config = {
        "task": "squad",
        "representation": "elmo",
        "sites": ["input", "output"],
        "mix": {"mode": "all", "lam": 0.001, "layer_norm": False},
        "seed": 3,
        "device": "cpu",  # something the caller adds
    }
    sink = WandbSink(
        WandbOptions("elmo-bench-test", group="table1"),
        name="run0abc",
        config=config,
        work_dir=work,
    )
    weights = {"input": [0.2, 0.3, 0.5], "output": [0.6, 0.3, 0.1]}
    for step in (10, 20, 30):
        sink.log({"lr": 0.001 * step, "train_loss": 3.0 / step}, step=step)
        sink.log_mix(weights, {"input": 1.5, "output": 0.25 * step}, step=step)
    sink.log({"dev_f1": 55.5}, step=30)
    sink.finish({"dev_f1": 55.5, "best_epoch": 2})
    sink.finish({"dev_f1": 0.0})  # a second finish is a no-op

    # offline mode, under the work folder (no WANDB_DIR), nothing elsewhere in tmp
    (folder,) = (work / "wandb").glob("offline-run-*")
    assert not list(offline_env.glob("wandb"))
    run = decode_run(folder)

    assert run["run"] == {
        "name": "run0abc",
        "project": "elmo-bench-test",
        "group": "table1",
        "job_type": "train",
        "tags": ["squad", "elmo"],
    }
    for key, value in config.items():
        assert run["config"][key] == value, key

    history = run["history"]
    assert sorted(history) == [10, 20, 30]
    for step in (10, 20, 30):
        row = history[step]
        assert row["lr"] == pytest.approx(0.001 * step)
        assert row["train_loss"] == pytest.approx(3.0 / step)
        for site, ws in weights.items():
            for j, w in enumerate(ws):
                assert row[f"mix/{site}/s_{j}"] == pytest.approx(w)
        assert row["mix/input/gamma"] == 1.5
        assert row["mix/output/gamma"] == pytest.approx(0.25 * step)
    assert history[30]["dev_f1"] == 55.5
    assert "dev_f1" not in history[10]
    assert history[30]["mix/final_weights"]  # the final weights table, at the last step

    summary = run["summary"]
    assert summary["dev_f1"] == 55.5  # not the second finish's 0.0
    assert summary["best_epoch"] == 2
    assert summary["train_loss"] == pytest.approx(0.1)  # the last logged value

    tables = list((folder / "files" / "media" / "table").rglob("final_weights_*.table.json"))
    assert tables, "final mix weights table not written"
    table = json.loads(tables[0].read_text())
    assert table["columns"] == ["site", "layer", "weight", "gamma"]
    assert [row[:3] for row in table["data"]] == [
        [site, j, w] for site in ("input", "output") for j, w in enumerate(weights[site])
    ]


def test_log_artifacts_offline(offline_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = offline_env / "rendered"
    out.mkdir()
    (out / "table1.md").write_text("| task | F1 |\n|---|---|\n| squad | 85.1 |\n")
    (out / "table1.csv").write_text("task,F1\nsquad,85.1\nsnli,88.0\n")
    (out / "table1.tex").write_text("\\begin{tabular}{lr}\\end{tabular}\n")
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.bar([0, 1], [0.3, 0.7])
    fig.savefig(out / "weights.png", dpi=20)
    plt.close(fig)
    monkeypatch.setenv("WANDB_DIR", str(offline_env / "wb"))
    paths = [out / n for n in ("table1.md", "table1.csv", "table1.tex", "weights.png")]

    with pytest.raises(FileNotFoundError, match="nope"):
        log_artifacts(WandbOptions("p"), [*paths, out / "nope.png"], name="x")
    assert not (offline_env / "wb").exists()  # checked before starting a run

    log_artifacts(WandbOptions("elmo-bench-test", group="table1"), paths, name="table 1/render")

    (folder,) = (offline_env / "wb" / "wandb").glob("offline-run-*")
    run = decode_run(folder)
    assert run["run"]["job_type"] == "render"
    assert run["run"]["group"] == "table1"
    assert run["run"]["name"] == "table 1/render"
    (results,) = [a for a in run["artifacts"] if a["type"] == "results"]
    assert results["name"] == "table-1-render"
    assert sorted(results["paths"]) == ["table1.csv", "table1.md", "table1.tex", "weights.png"]
    (row,) = run["history"].values()
    assert row["plots/weights"] and row["tables/table1"]
    assert list((folder / "files" / "media" / "images").rglob("weights_*.png"))
    (csv_table,) = (folder / "files" / "media" / "table").rglob("table1_*.table.json")
    data = json.loads(csv_table.read_text())
    assert data["columns"] == ["task", "F1"]
    assert data["data"] == [["squad", "85.1"], ["snli", "88.0"]]


def test_log_outputs_is_one_artifact_named_by_the_group_or_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from experiments.run import wandb_sink

    calls: list[tuple[WandbOptions, list[Path], str]] = []

    def record(options: WandbOptions, paths: list[Path], *, name: str) -> None:
        calls.append((options, list(paths), name))

    monkeypatch.setattr(wandb_sink, "log_artifacts", record)
    wandb_sink.log_outputs(None, [tmp_path], group="g")  # no --wandb: nothing
    wandb_sink.log_outputs("proj", [tmp_path], group="table1-mini-demo")
    assert calls == [
        (WandbOptions("proj", group="table1-mini-demo"), [tmp_path], "table1-mini-demo")
    ]
