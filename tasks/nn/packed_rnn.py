"""A one-layer ``nn.LSTM``/``nn.GRU`` over a packed sequence on the CPU, computed by the same
operations as torch's own loop but without its quadratic backward.

For packed input on the CPU torch runs ``PackedLayer`` and ``ReversedPackedLayer`` of
``aten/src/ATen/native/RNN.cpp`` (pytorch/pytorch, read at commit 012234a6): one input
projection for every step at once, then a loop that takes each step's rows with ``narrow``.
Autograd differentiates each ``narrow`` into a zero tensor of the whole projection's size with
the step's rows filled in, and adds it into the projection's gradient, so backward fills and
adds ``steps`` full-size (tokens, gates) tensors: O(T²) memory traffic per layer, the same
effect as slicing a precomputed projection in a Python time loop (``docs/peer.md``, "Speed").
Here the projection is cut once with ``split``, whose backward concatenates the step gradients
once. Every other operation is the C++ loop's, in its order (``LSTMCell``/``GRUCell`` with the
input projected beforehand, the hidden state narrowed as sequences end in the forward direction
and extended with the initial state as they start in the reverse one), so outputs and every
gradient are bitwise those of ``nn.LSTM``/``nn.GRU`` in float32 and under CPU bf16 autocast
(``tests/tasks/common/test_packed_rnn.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

#: Whether :func:`applies` may choose the step loop here (off inside :func:`torch_loop`).
_ENABLED: ContextVar[bool] = ContextVar("packed_rnn_step_loop", default=True)

#: An LSTM cell's state ``(h, c)`` or a GRU cell's ``h``.
_State = tuple[Tensor, Tensor] | Tensor


@contextmanager
def torch_loop() -> Iterator[None]:
    """Within the block every RNN runs torch's own loop: for timing both side by side
    (``benchmarks/recurrent_floor.py``). Results are the same either way."""
    token = _ENABLED.set(False)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def applies(rnn: object, x: object) -> bool:
    """Whether :func:`packed_rnn` computes ``rnn(x)[0]``: a one-layer ``nn.LSTM`` (no
    projection) or ``nn.GRU`` over a packed CPU sequence while autograd records (forward
    alone gains nothing from it: torch's C++ loop is cheaper to call).

    An ``nn.LSTM`` over sequences that all have one length is left to torch: there it does
    not run its C++ loop but oneDNN's LSTM (with ``torch.backends.mkldnn`` disabled its output
    is the loop's again; measured with torch 2.13), whose arithmetic is not the loop's, so
    the step loop would change the numbers of such a batch (a DEMO SST-5 epoch has many:
    short phrases of one length share a batch)."""
    return (
        _ENABLED.get()
        and type(rnn) in (nn.LSTM, nn.GRU)
        and isinstance(x, PackedSequence)
        and x.data.device.type == "cpu"
        and torch.is_grad_enabled()
        and rnn.num_layers == 1  # type: ignore[attr-defined]
        and getattr(rnn, "proj_size", 0) == 0
        and not (type(rnn) is nn.LSTM and _one_length(x))
    )


def _one_length(x: PackedSequence) -> bool:
    """Whether every sequence in ``x`` has the same length: its rows per step never fall
    (they cannot rise), so the first step has as many as the last."""
    return bool(x.batch_sizes[0] == x.batch_sizes[-1])


def _lstm_cell(projected: Tensor, state: _State, w_hh: Tensor, b_hh: Tensor | None) -> _State:
    """One LSTM step: ``projected`` (batch, 4h) is the step's input projection with its bias."""
    h, c = state
    gates = F.linear(h, w_hh, b_hh).add_(projected)  # (batch, 4h)
    i, f, g, o = gates.unsafe_chunk(4, 1)
    i, f, g, o = i.sigmoid_(), f.sigmoid_(), g.tanh_(), o.sigmoid_()
    c = (f * c).add_(i * g)  # (batch, h)
    return o * c.tanh(), c


def _gru_cell(projected: Tensor, state: _State, w_hh: Tensor, b_hh: Tensor | None) -> _State:
    """One GRU step: ``projected`` (batch, 3h) is the step's input projection with its bias."""
    assert isinstance(state, Tensor)
    x_r, x_z, x_n = projected.unsafe_chunk(3, 1)
    h_r, h_z, h_n = F.linear(state, w_hh, b_hh).unsafe_chunk(3, 1)
    reset = h_r.add_(x_r).sigmoid_()
    update = h_z.add_(x_z).sigmoid_()
    new = x_n.add(h_n.mul_(reset)).tanh_()  # (batch, h)
    return (state - new).mul_(update).add_(new)


def _rows(state: _State, start: int, length: int) -> _State:
    """Rows ``start:start + length`` of a state."""
    if isinstance(state, Tensor):
        return state.narrow(0, start, length)
    return state[0].narrow(0, start, length), state[1].narrow(0, start, length)


def _extend(state: _State, extra: _State) -> _State:
    """``state`` with ``extra``'s rows after its own."""
    if isinstance(state, Tensor):
        assert isinstance(extra, Tensor)
        return torch.cat([state, extra])
    return torch.cat([state[0], extra[0]]), torch.cat([state[1], extra[1]])


def _direction(rnn: nn.RNNBase, x: PackedSequence, suffix: str, reverse: bool) -> Tensor:
    """One direction of a one-layer RNN over ``x``: (tokens, h), ``x.data``'s row order."""
    w_ih, w_hh = getattr(rnn, "weight_ih_l0" + suffix), getattr(rnn, "weight_hh_l0" + suffix)
    b_ih = getattr(rnn, "bias_ih_l0" + suffix) if rnn.bias else None
    b_hh = getattr(rnn, "bias_hh_l0" + suffix) if rnn.bias else None
    lstm = isinstance(rnn, nn.LSTM)
    cell = _lstm_cell if lstm else _gru_cell
    sizes: list[int] = x.batch_sizes.tolist()
    steps = F.linear(x.data, w_ih, b_ih).split(sizes)  # each (sizes[t], gates)
    zeros = x.data.new_zeros(sizes[0], rnn.hidden_size)  # nn.LSTM's default initial state
    initial: _State = (zeros, zeros) if lstm else zeros
    outputs: list[Tensor] = []
    if not reverse:
        state, last = initial, sizes[0]
        for step, size in zip(steps, sizes, strict=True):
            if size < last:
                state = _rows(state, 0, size)
            last = size
            state = cell(step, state, w_hh, b_hh)
            outputs.append(state[0] if lstm else state)  # type: ignore[arg-type]
    else:
        last = sizes[-1]
        state = _rows(initial, 0, last)
        for t in range(len(sizes) - 1, -1, -1):
            size = sizes[t]
            if size > last:
                state = _extend(state, _rows(initial, last, size - last))
            last = size
            state = cell(steps[t], state, w_hh, b_hh)
            outputs.append(state[0] if lstm else state)  # type: ignore[arg-type]
        outputs.reverse()
    return torch.cat(outputs, 0)  # (tokens, h)


def packed_rnn(rnn: nn.RNNBase, x: PackedSequence) -> PackedSequence:
    """``rnn(x)[0]`` for a case :func:`applies` accepts, bitwise, with a linear-time backward.

    Args:
        rnn: a one-layer ``nn.LSTM`` (no projection) or ``nn.GRU``, either direction count.
        x: a packed sequence on the CPU.

    Returns:
        The output sequence, packed like ``x``: data (tokens, directions · hidden).
    """
    outputs = [_direction(rnn, x, "", reverse=False)]
    if rnn.bidirectional:
        outputs.append(_direction(rnn, x, "_reverse", reverse=True))
    data = torch.cat(outputs, -1) if len(outputs) > 1 else outputs[0]  # (tokens, dirs·h)
    return PackedSequence(data, x.batch_sizes, x.sorted_indices, x.unsorted_indices)
