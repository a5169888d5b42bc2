"""The step loop of :mod:`tasks.nn.packed_rnn` against ``nn.LSTM``/``nn.GRU`` themselves."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils._python_dispatch import TorchDispatchMode

from tasks.nn import packed_rnn
from tasks.nn.layers import BiGRU, BiLSTM, run_rnn

#: Lengths with ties, a length-1 row and rows ending at different steps; not sorted.
LENGTHS = torch.tensor([3, 7, 1, 7, 5, 2])


def _outputs_and_grads(rnn: nn.RNNBase, x: Tensor, stepwise: bool, bf16: bool) -> list[Tensor]:
    """The packed output and the gradients of ``x`` and every weight, one way or the other."""
    x = x.clone().requires_grad_()
    rnn.zero_grad(set_to_none=True)
    packed = pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        assert packed_rnn.applies(rnn, packed)
        out = packed_rnn.packed_rnn(rnn, packed) if stepwise else rnn(packed)[0]
    data = out.data.float()
    weights = torch.randn(data.shape, generator=torch.Generator().manual_seed(1))
    (data * weights).sum().backward()
    assert x.grad is not None
    return [data.detach(), x.grad] + [p.grad for p in rnn.parameters()]  # type: ignore[misc]


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16-autocast"])
@pytest.mark.parametrize("bidirectional", [True, False], ids=["bi", "uni"])
@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_outputs_and_every_gradient_are_bitwise_torchs(
    kind: type[nn.RNNBase], bidirectional: bool, bf16: bool
) -> None:
    torch.manual_seed(0)
    rnn = kind(6, 4, batch_first=True, bidirectional=bidirectional)
    x = torch.randn(len(LENGTHS), int(LENGTHS.max()), 6)  # (batch, time, in)
    ours = _outputs_and_grads(rnn, x, stepwise=True, bf16=bf16)
    torchs = _outputs_and_grads(rnn, x, stepwise=False, bf16=bf16)
    assert ours[0].shape == (int(LENGTHS.sum()), 4 * (2 if bidirectional else 1))
    for a, b in zip(ours, torchs, strict=True):
        assert torch.equal(a, b)


def test_without_biases_too() -> None:
    torch.manual_seed(0)
    rnn = nn.GRU(5, 3, batch_first=True, bidirectional=True, bias=False)
    x = torch.randn(len(LENGTHS), int(LENGTHS.max()), 5)
    ours = _outputs_and_grads(rnn, x, stepwise=True, bf16=False)
    for a, b in zip(ours, _outputs_and_grads(rnn, x, stepwise=False, bf16=False), strict=True):
        assert torch.equal(a, b)


class _Shapes(TorchDispatchMode):
    """Counts the output shapes of the operations run inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: Counter[tuple[int, ...]] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if isinstance(out, Tensor):
            self.shapes[tuple(out.shape)] += 1
        return out


@pytest.mark.parametrize("stepwise", [True, False], ids=["step-loop", "torch-loop"])
def test_backward_writes_the_projection_gradient_once_not_once_a_step(stepwise: bool) -> None:
    # torch's loop narrows each step out of the whole input projection: backward fills and adds
    # a (tokens, 4h) tensor for every step; the step loop's split writes it once
    torch.manual_seed(0)
    rnn = nn.LSTM(6, 4, batch_first=True)
    lengths = torch.tensor([12, 12, 9, 4])
    x = torch.randn(4, 12, 6, requires_grad=True)
    packed = pack_padded_sequence(x, lengths, batch_first=True)
    out = packed_rnn.packed_rnn(rnn, packed) if stepwise else rnn(packed)[0]
    with _Shapes() as mode:
        out.data.sum().backward()
    full = mode.shapes[(int(lengths.sum()), 16)]  # the projection's gradient, (tokens, 4h)
    assert full <= 2 if stepwise else full >= 12


def test_applies_only_where_it_is_the_same_computation() -> None:
    lstm, gru = nn.LSTM(3, 2), nn.GRU(3, 2, bidirectional=True)
    packed = pack_padded_sequence(torch.randn(2, 4, 3), torch.tensor([4, 2]), batch_first=True)
    assert packed_rnn.applies(lstm, packed) and packed_rnn.applies(gru, packed)
    assert not packed_rnn.applies(lstm, torch.randn(2, 4, 3))  # padded: torch's own kernels
    assert not packed_rnn.applies(nn.LSTM(3, 2, num_layers=2), packed)
    assert not packed_rnn.applies(nn.LSTM(3, 4, proj_size=2), packed)
    assert not packed_rnn.applies(nn.RNN(3, 2), packed)
    uniform = pack_padded_sequence(torch.randn(2, 4, 3), torch.tensor([4, 4]), batch_first=True)
    assert not packed_rnn.applies(lstm, uniform) and packed_rnn.applies(gru, uniform)
    with torch.no_grad():  # forward alone: torch's C++ loop is cheaper to call
        assert not packed_rnn.applies(lstm, packed)
    with packed_rnn.torch_loop():
        assert not packed_rnn.applies(lstm, packed)
    assert packed_rnn.applies(lstm, packed)


@pytest.mark.parametrize("lengths", [[6, 2, 4, 1], [6, 6, 6, 6], [1, 1, 1, 1]], ids=str)
@pytest.mark.parametrize("module", [BiLSTM, BiGRU])
def test_task_layers_train_bitwise_alike_either_way(
    module: type[nn.Module], lengths: list[int]
) -> None:
    # one length for every sequence: torch's LSTM runs oneDNN's kernel, not its loop
    torch.manual_seed(0)
    layer = module(5, 3)
    x = torch.randn(4, 6, 5)  # (batch, time, in)
    mask = torch.arange(6)[None, :] < torch.tensor(lengths)[:, None]  # (batch, time)
    grads = []
    for torchs in (False, True):
        layer.zero_grad(set_to_none=True)
        if torchs:
            with packed_rnn.torch_loop():
                out = layer(x, mask)
        else:
            out = layer(x, mask)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        grads.append([out.detach()] + [p.grad for p in layer.parameters()])
    for a, b in zip(*grads, strict=True):
        assert torch.equal(a, b)


def test_run_rnn_takes_the_step_loop_in_training_and_torchs_in_evaluation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[bool] = []
    original = packed_rnn.packed_rnn
    monkeypatch.setattr(packed_rnn, "packed_rnn", lambda r, x: taken.append(True) or original(r, x))
    gru = nn.GRU(3, 2, bidirectional=True)
    packed = pack_padded_sequence(torch.randn(2, 4, 3), torch.tensor([4, 2]), batch_first=True)
    trained = run_rnn(gru, packed)
    assert taken == [True]
    with torch.no_grad():
        evaluated = run_rnn(gru, packed)
    assert taken == [True]
    assert torch.equal(trained.data.detach(), evaluated.data)


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_a_module_called_twice_in_one_graph_sums_its_gradients_as_torch_does(
    kind: type[nn.RNNBase],
) -> None:
    # a shared encoder (ESIM's premise and hypothesis, SQuAD's phrase layer over paragraph and
    # question) gets one recurrent-weight gradient per step of both calls, which autograd adds
    # in the order its engine runs them: a loop that summed each call's steps apart first would
    # round differently, so the per-step nodes stay autograd's own
    torch.manual_seed(0)
    rnn = kind(5, 4, batch_first=True, bidirectional=True)
    inputs = [
        (torch.randn(6, 9, 5), torch.tensor([9, 3, 7, 1, 9, 5])),
        (torch.randn(3, 4, 5), torch.tensor([4, 2, 3])),
    ]
    grads = []
    for stepwise in (True, False):
        rnn.zero_grad(set_to_none=True)
        total = torch.zeros(())
        for i, (x, lengths) in enumerate(inputs):
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out = packed_rnn.packed_rnn(rnn, packed) if stepwise else rnn(packed)[0]
            weights = torch.randn(out.data.shape, generator=torch.Generator().manual_seed(i))
            total = total + (out.data * weights).sum()
        total.backward()
        grads.append([p.grad for p in rnn.parameters()])
    for a, b in zip(*grads, strict=True):
        assert torch.equal(a, b)
