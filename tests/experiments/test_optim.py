"""The loop's optimizers: the multi-tensor (``foreach``) updates equal torch's per-tensor ones."""

from __future__ import annotations

import pytest
import torch

from experiments.run.optim import build_optimizer
from tasks.core import Optimizer, TrainConfig

#: Every optimizer the presets declare, with non-default arguments where it has them.
OPTIMIZERS = {
    "adam": Optimizer("adam", lr=1e-3, betas=(0.9, 0.98), eps=1e-7, weight_decay=1e-4),
    "adadelta": Optimizer("adadelta", lr=1.0, rho=0.95, eps=1e-6),
    "adagrad": Optimizer("adagrad", lr=0.05, eps=1e-10),
    "sgd": Optimizer("sgd", lr=0.1, momentum=0.9, weight_decay=1e-5),
}


def _per_tensor(o: Optimizer, params: list[torch.Tensor]) -> torch.optim.Optimizer:
    """The same optimizer through torch's per-tensor loop (its CPU default)."""
    common = {"lr": o.lr, "weight_decay": o.weight_decay, "foreach": False}
    if o.name == "adam":
        return torch.optim.Adam(params, betas=o.betas, eps=o.eps, **common)
    if o.name == "adadelta":
        return torch.optim.Adadelta(params, rho=o.rho, eps=o.eps, **common)
    if o.name == "adagrad":
        return torch.optim.Adagrad(params, eps=o.eps, **common)
    return torch.optim.SGD(params, momentum=o.momentum, **common)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_loops_optimizer_updates_bitwise_as_the_per_tensor_loop(name: str) -> None:
    torch.manual_seed(0)
    shapes = [(30, 7), (13,), (1, 1), (4, 5, 6)]
    ours = [torch.randn(s, requires_grad=True) for s in shapes]
    plain = [t.detach().clone().requires_grad_() for t in ours]
    built = build_optimizer(TrainConfig(optimizer=OPTIMIZERS[name]), ours)
    reference = _per_tensor(OPTIMIZERS[name], plain)
    assert built.defaults["foreach"] is True
    for step in range(20):
        for i, (a, b) in enumerate(zip(ours, plain, strict=True)):
            if step % 7 == 3 and i == 1:  # a parameter no gradient reached this step
                a.grad = b.grad = None
                continue
            grad = torch.randn_like(a) * 10.0 ** (step % 5 - 2)
            a.grad, b.grad = grad.clone(), grad.clone()
        if step == 10:  # the loop's schedules change the rate between steps
            for opt in (built, reference):
                for group in opt.param_groups:
                    group["lr"] *= 0.5
        built.step()
        reference.step()
    assert all(torch.equal(a, b) for a, b in zip(ours, plain, strict=True))
    assert not torch.equal(ours[0], torch.zeros_like(ours[0]))
