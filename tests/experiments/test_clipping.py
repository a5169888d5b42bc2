"""Gradient clipping in the loop's optimizer step: ``TrainConfig.clip_value`` clamps every
gradient element to ``[-v, v]`` (allennlp's ``grad_clipping``) on the unscaled gradients, before
``clip_norm``. Plain SGD makes the applied update ``-lr × clipped gradient``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from experiments.run import runner
from experiments.run.resolve import resolve
from experiments.run.setup import Run, RunOptions
from experiments.run.setup import set_up as set_up_run
from experiments.run.spec import RunSpec
from tasks.core import loss_of
from tasks.features.inject import mix_penalty
from tests.experiments.toy_task import registered

LR = 0.5


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[object]:
    with registered(tmp_path / "toy-demo") as task:
        yield task


def set_up(work: Path, *overrides: str) -> Run:
    spec = RunSpec(
        task="toy",
        task_version=1,
        representation="none",
        sites=(),
        dropout=0.0,
        seed=1,
        overrides=("train.optimizer.name=sgd", f"train.optimizer.lr={LR}", *overrides),
    )
    return set_up_run(resolve(spec), RunOptions(work_root=work, progress=False))


def step(run: Run) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """The raw gradients of one batch (computed here), and the weights before and after the
    loop's step on it."""
    batch = run.recipe.collate(run.splits["train"][:16], run.represent)
    run.model.train()
    run.model.zero_grad(set_to_none=True)
    (loss_of(run.model(batch)) + mix_penalty(run.model)).backward()
    grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in run.trainable]
    before = [p.detach().clone() for p in run.trainable]
    runner._train_batch(run, runner.LoopState(lr=LR), batch)
    return grads, before, [p.detach().clone() for p in run.trainable]


def norm_clipped(grads: list[torch.Tensor], max_norm: float) -> list[torch.Tensor]:
    """torch's ``clip_grad_norm_`` by hand: scale by ``max_norm / (norm + 1e-6)`` when below 1."""
    norm = torch.cat([g.double().flatten() for g in grads]).norm()
    coef = min(1.0, max_norm / (float(norm) + 1e-6))
    return [g * coef for g in grads]


def assert_update(before: list, after: list, expected: list[torch.Tensor]) -> None:
    """``after`` is SGD's ``before - lr × expected`` (updates are about 1e-3 here)."""
    for b, a, g in zip(before, after, expected, strict=True):
        torch.testing.assert_close(a, b.add(g.to(b.dtype), alpha=-LR), rtol=0, atol=1e-7)


def test_clip_value_clamps_every_gradient_element(toy: object, tmp_path: Path) -> None:
    v = 0.01
    grads, before, after = step(set_up(tmp_path / "v", f"train.clip_value={v}"))
    flat = torch.cat([g.flatten() for g in grads])
    assert (flat.abs() > v).sum() > 10 and ((flat.abs() < v) & (flat != 0)).sum() > 10
    assert_update(before, after, [g.clamp(-v, v) for g in grads])
    _, _, unclipped = step(set_up(tmp_path / "none"))
    assert not all(torch.equal(a, u) for a, u in zip(after, unclipped, strict=True))


def test_clip_value_comes_before_the_norm_clipping(toy: object, tmp_path: Path) -> None:
    v, max_norm = 0.01, 0.02
    run = set_up(tmp_path / "both", f"train.clip_value={v}", f"train.clip_norm={max_norm}")
    grads, before, after = step(run)
    clamped = [g.clamp(-v, v) for g in grads]
    assert float(torch.cat([g.flatten() for g in clamped]).norm()) > max_norm  # both act
    assert_update(before, after, norm_clipped(clamped, max_norm))


def test_clip_value_acts_on_unscaled_gradients(toy: object, tmp_path: Path) -> None:
    """With a grad scaler enabled (fp16 on CUDA; here an enabled CPU scaler), the clamp sees
    the true gradients: clamping the scaled ones would clip every element to ``v / scale``."""
    v = 0.01
    run = set_up(tmp_path / "scaled", f"train.clip_value={v}")
    run.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12)
    grads, before, after = step(run)
    assert_update(before, after, [g.clamp(-v, v) for g in grads])
