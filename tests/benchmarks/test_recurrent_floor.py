"""``benchmarks/recurrent_floor.py``: the RNN calls and the matrix products of an epoch, recorded
and replayed alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from benchmarks import recurrent_floor
from experiments.run.spec import RunSpec, baseline_of
from tasks.registry import get_task


def test_replay_runs_forward_and_backward_of_every_call() -> None:
    torch.manual_seed(0)
    gru = nn.GRU(4, 3, batch_first=True, bidirectional=True)
    packed = pack_padded_sequence(torch.randn(2, 5, 4), torch.tensor([5, 3]), batch_first=True)
    seconds = recurrent_floor.replay([(gru, packed), (gru, torch.randn(2, 5, 4))])
    assert seconds > 0.0
    assert all(p.grad is None for p in gru.parameters())  # cleared after each call


def test_squad_epoch_records_its_five_gru_calls_per_batch(tmp_path: Path, capsys) -> None:
    task = get_task("squad")
    spec = baseline_of(RunSpec(task="squad", task_version=task.version, preset="mini", limit=40))
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec.to_dict()))
    result = recurrent_floor.main(["--spec", str(path), "--batches", "2", "--repeats", "1"])
    # per batch: context and question through the phrase GRU, the residual, start and end GRUs
    assert result["batches"] == 2 and result["rnn_calls"] == 10
    assert 0.0 < result["recurrent_cpu_s"] < result["epoch_cpu_s"]
    assert 0.0 < result["product_cpu_s"] < result["epoch_cpu_s"] and result["product_gflop"] > 0
    # side by side with torch's own packed loop: the same work, timed both ways
    assert result["torch_loop_epoch_cpu_s"] > 0.0 and result["torch_loop_recurrent_cpu_s"] > 0.0
    out = capsys.readouterr().out
    assert "RNN calls alone" in out and "matrix products" in out
    assert "torch's own packed RNN loop" in out


def test_product_flops_count_two_per_multiply_add() -> None:
    assert recurrent_floor.product_flops(("aten::mm", ((2, 3), (3, 5)))) == 2 * 2 * 3 * 5
    assert recurrent_floor.product_flops(("aten::addmm", ((5,), (2, 3), (3, 5)))) == 60
    assert recurrent_floor.product_flops(("aten::bmm", ((4, 2, 3), (4, 3, 5)))) == 240
    baddbmm = ("aten::baddbmm", ((4, 2, 5), (4, 2, 3), (4, 3, 5)))
    assert recurrent_floor.product_flops(baddbmm) == 240
    with pytest.raises(ValueError, match="not a matrix product"):
        recurrent_floor.product_flops(("aten::add", ((2,), (2,))))


def test_replay_products_runs_every_recorded_shape() -> None:
    counts = {("aten::mm", ((4, 3), (3, 2))): 5, ("aten::addmm", ((2,), (4, 3), (3, 2))): 2}
    assert recurrent_floor.replay_products(counts) > 0.0
    with pytest.raises(KeyError):
        recurrent_floor.replay_products({("aten::add", ((2,), (2,))): 1})


def test_plugin_specs_are_refused(tmp_path: Path) -> None:
    spec = RunSpec(task="squad", task_version=get_task("squad").version, representation="os:system")
    with pytest.raises(SystemExit, match="plug-in"):
        recurrent_floor.measure(spec, 1, 1, "cpu", tmp_path)
