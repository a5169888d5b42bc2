"""Checkpoints hold frozen parameters (fixed word vectors) by reference, never by value."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from bilm.devices import make_scaler
from experiments.run import runner
from experiments.run.checkpoint import CHECKPOINT, save_run
from experiments.run.runner import LoopState


def fake_run(work: Path, vectors: torch.Tensor) -> SimpleNamespace:
    """The parts of a run that :func:`~experiments.run.checkpoint.save_run` and the loop's
    ``_load`` use: a model with frozen word vectors."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding.from_pretrained(vectors, freeze=True), nn.Linear(8, 2))
    trainable = [p for p in model.parameters() if p.requires_grad]
    return SimpleNamespace(
        model=model,
        optimizer=torch.optim.Adam(trainable, lr=0.1),
        ema=None,
        scaler=make_scaler(torch.device("cpu"), "fp32"),
        device=torch.device("cpu"),
        work=work,
        config_json=lambda: '{"task": {"word_vectors": "random:8"}, "train": {"epochs": 1}}',
        identity="",  # experiments.run.setup.Run.identity: no run identity checked
        # what the loop's _load reads besides the parts: the state policy, the epoch budget,
        # and the run's name for its "resumed" line
        spec=SimpleNamespace(
            state="reset", run_id="0123456789ab", task="toy", representation="none", seed=0
        ),
        train_config=SimpleNamespace(epochs=1),
    )


def save(run: SimpleNamespace, state: LoopState) -> None:
    """The loop's checkpoint of ``state``, as its evaluation writes it."""
    save_run(run, state.to_json(), state.best_weights)


def step(run: SimpleNamespace) -> None:
    loss = run.model(torch.tensor([[1, 2, 3]])).square().sum()
    run.optimizer.zero_grad()
    loss.backward()
    run.optimizer.step()


def test_frozen_vectors_are_stored_once_by_reference_and_verified(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vectors = torch.randn(5000, 8, generator=torch.Generator().manual_seed(1))  # 160 kB
    run = fake_run(tmp_path, vectors)
    step(run)
    best = {k: v.detach().clone() for k, v in run.model.state_dict().items()}
    step(run)
    save(run, LoopState(step=2, best_weights=best))
    payload = torch.load(tmp_path / CHECKPOINT, weights_only=True)
    assert "0.weight" not in payload["model"] and "0.weight" not in payload["best_weights"]
    assert payload["frozen"]["0.weight"]["shape"] == [5000, 8]
    assert (tmp_path / CHECKPOINT).stat().st_size < 40_000  # the vectors would be 160 kB
    trained = {k: v.clone() for k, v in run.model.state_dict().items()}

    resumed = fake_run(tmp_path, vectors.clone())  # rebuilt from the same source
    state = runner._load(resumed)  # type: ignore[arg-type]
    assert state is not None and state.step == 2
    best_back = state.best_weights
    assert best_back is not None
    for name, value in resumed.model.state_dict().items():
        assert torch.equal(value, trained[name]), name
    for name, value in best.items():
        assert torch.equal(best_back[name], value), name
    assert best_back["0.weight"].data_ptr() == resumed.model[0].weight.data_ptr()  # no copy
    resumed.model.load_state_dict(best_back)  # what _finish does: strict, complete

    other = vectors.clone()
    other[7, 3] += 1.0  # the vector file changed under the same configuration
    with caplog.at_level(logging.WARNING):
        assert runner._load(fake_run(tmp_path, other)) is None  # type: ignore[arg-type]
    assert "other frozen tensors (0.weight" in caplog.text and "starting afresh" in caplog.text


def test_checkpoints_without_references_still_resume(tmp_path: Path) -> None:
    run = fake_run(tmp_path, torch.ones(4, 8))
    step(run)
    full = {k: v.clone() for k, v in run.model.state_dict().items()}
    save(run, LoopState(step=1))
    payload = torch.load(tmp_path / CHECKPOINT, weights_only=True)
    payload["model"] = full  # a checkpoint written before references existed
    del payload["frozen"]
    torch.save(payload, tmp_path / CHECKPOINT)
    resumed = fake_run(tmp_path, torch.ones(4, 8))
    state = runner._load(resumed)  # type: ignore[arg-type]
    assert state is not None and state.step == 1 and state.best_weights is None
    assert torch.equal(resumed.model[1].weight, full["1.weight"])


def test_a_full_disk_names_the_checkpoint_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk used to give torch's ``RuntimeError: [enforce fail at
    inline_container.cc:672] . unexpected pos …``, without the path or the cause."""
    from tests.bilm.test_files import filling_torch_save

    run = fake_run(tmp_path, torch.ones(4, 8))
    step(run)
    filling_torch_save(monkeypatch, room=600)
    with pytest.raises(OSError) as info:
        save(run, LoopState(step=1))
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / CHECKPOINT) in message
    assert "no space left on the device" in message
    assert list(tmp_path.iterdir()) == []  # no checkpoint, no temporary sibling
