"""A killed allennlp peer run resumes from its last whole epoch checkpoint: the decision (fast,
no allennlp) and, on a tiny tagging set, the proof that the resumed run ends with the same
weights and dev scores as an uninterrupted one (slow: allennlp in the peer's venv)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from experiments.peer.run import (
    _prepare_work,
    complete_epochs,
    resume_point,
    resumed_after,
)
from tests.experiments.helpers import tiny_tagging_set


def test_a_run_resumes_only_its_own_configuration_from_a_whole_checkpoint() -> None:
    config = b'{"trainer": {"num_epochs": 3}}\n'
    assert resume_point(None, config, [1, 2]) is None  # no earlier attempt
    assert resume_point(b'{"trainer": {"num_epochs": 4}}\n', config, [1, 2]) is None
    assert resume_point(config + b" ", config, [1, 2]) is None  # byte for byte
    assert resume_point(config, config, []) is None  # killed before its first checkpoint
    assert resume_point(config, config, [2, 1]) == 2


def _checkpoint(model: Path, epoch: int, batch: int = 0) -> None:
    for state in ("model_state", "training_state"):
        torch.save({"epoch": epoch}, model / f"{state}_e{epoch}_b{batch}.th")


def test_the_work_folder_keeps_a_resumable_attempt_and_drops_torn_checkpoints(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    model = work / "run" / "model"
    model.mkdir(parents=True)
    config = b"{}\n"
    (work / "config.jsonnet").write_bytes(config)
    (work / "train.log").write_text("epoch 1\n")
    for epoch in (1, 2, 3):
        _checkpoint(model, epoch)
    _checkpoint(model, 2, batch=5)  # within the third epoch
    torn = model / "training_state_e3_b0.th"
    torn.write_bytes(torn.read_bytes()[:-30])  # killed while torch.save wrote it
    (model / "training_state_e4_b0.th").write_bytes(b"")  # its model state never written
    assert complete_epochs(model) == [1, 2]
    assert _prepare_work(work, config) == 2
    left = sorted(p.name for p in model.iterdir())
    assert left == [f"{s}_e{e}_b0.th" for s in ("model_state", "training_state") for e in (1, 2)]
    assert (work / "train.log").read_text() == "epoch 1\n"
    assert resumed_after(work) == [2]
    assert _prepare_work(work, config) == 2 and resumed_after(work) == [2, 2]


def test_another_configuration_or_no_checkpoint_starts_afresh(tmp_path: Path) -> None:
    work = tmp_path / "work"
    model = work / "run" / "model"
    model.mkdir(parents=True)
    (work / "config.jsonnet").write_bytes(b"{}\n")
    _checkpoint(model, 1)
    assert _prepare_work(work, b'{"seed": 1}\n') is None
    assert sorted(p.name for p in work.iterdir()) == ["config.jsonnet"]
    assert (work / "config.jsonnet").read_bytes() == b'{"seed": 1}\n'
    assert resumed_after(work) == []
    assert _prepare_work(work, b'{"seed": 1}\n') is None  # the same, but no checkpoint yet
    assert _prepare_work(tmp_path / "new", b"{}\n") is None
    assert (tmp_path / "new" / "config.jsonnet").read_bytes() == b"{}\n"


def _weights(model: Path, epoch: int) -> dict[str, torch.Tensor]:
    loaded: dict[str, torch.Tensor] = torch.load(model / f"model_state_e{epoch}_b0.th")
    return loaded


def _largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a if a[k].numel())


def _scored(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's per-epoch figures without its timings."""
    timings = ("train_cpu_s", "train_s", "peak_rss_mb")
    return [{k: v for k, v in e.items() if k not in timings} for e in record["epochs"]]


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_runs_weights_and_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three epochs of allennlp's crf_tagger on a tiny set, baseline and ELMo (whose biLM
    carries its LSTM state across batches), trained once uninterrupted and once killed after
    the first training batch of the second epoch (``PEER_KILL_AFTER_EPOCHS=1``, the timing
    callback's testing hook) and resumed: every epoch's weights are bit-identical, and so are
    the dev scores of the record."""
    import json

    from experiments.peer.run import (
        PeerRequest,
        _peer_job,
        _recipe,
        _run_peer,
        prepare_inputs,
        write_peer_data,
    )

    data = tiny_tagging_set(tmp_path)
    request = PeerRequest(
        "ner", str(data), seeds=(0,), epochs=3, batch_size=8, representations=("none", "elmo")
    )
    recipe = _recipe(request)
    root = tmp_path / "work" / "ner"
    root.mkdir(parents=True)
    files = write_peer_data(request, recipe, root)
    inputs = prepare_inputs(elmo=True)
    for rep in ("none", "elmo"):
        whole = _peer_job(request, recipe, files, inputs, rep, 0, tmp_path / "whole", root)
        killed = replace(
            whole,
            record=tmp_path / "killed" / whole.record.relative_to(tmp_path / "whole"),
            work=whole.work.with_name(whole.key + "-killed"),
        )
        _run_peer(whole, request, files, recipe, echo=print)
        monkeypatch.setenv("PEER_KILL_AFTER_EPOCHS", "1")
        with pytest.raises(RuntimeError, match=r"exit -9"):
            _run_peer(killed, request, files, recipe, echo=print)
        monkeypatch.delenv("PEER_KILL_AFTER_EPOCHS")
        model = killed.work / "run" / "model"
        assert complete_epochs(model) == [1] and not killed.record.exists()
        lines: list[str] = []
        _run_peer(killed, request, files, recipe, echo=lines.append)
        assert lines == [f"peer: resuming allennlp {whole.row} seed=0 after epoch 1 ({whole.key})"]
        for epoch in (1, 2, 3):
            a, b = _weights(whole.work / "run" / "model", epoch), _weights(model, epoch)
            assert all(torch.equal(a[k], b[k]) for k in a), (rep, epoch)
            print(f"{rep} epoch {epoch}: largest weight difference {_largest_difference(a, b)}")
        first, second = (json.loads(j.record.read_text()) for j in (whole, killed))
        assert first["resumed_after"] == [] and second["resumed_after"] == [1]
        assert _scored(first) == _scored(second)
        print(rep, "dev per epoch:", [e["metric"] for e in first["epochs"]])
        timing = [
            json.loads((j.work / "run/model/peer_timing.json").read_text()) for j in (whole, killed)
        ]
        assert [r["training_loss"] for r in timing[0]] == [r["training_loss"] for r in timing[1]]
        assert (killed.work / "train.log").read_text().count("==== resumed after epoch 1") == 1
