"""The highway LSTM layer against a step-by-step reference of He et al. (2017)'s equations
(deep_srl ``layer.py`` ``HighwayLSTMLayer``, allennlp ``AugmentedLstm``): the highway output is the
recurrent state, the highway gate reads ``x_t`` and ``h_{t-1}``, and recurrent dropout uses one
mask per sequence, the same at every time step, on the output and the state fed back alike."""

from __future__ import annotations

import torch
from torch import Tensor

from tasks.srl.model import AlternatingHighwayLSTM, HighwayLSTMLayer

IN, HIDDEN = 4, 3
LENGTHS = [5, 3, 1]


def _mask(lengths: list[int]) -> Tensor:
    return torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]


def _randomise(module: torch.nn.Module, seed: int = 0) -> None:
    """Random weights and biases everywhere (no orthogonal or zero structure to hide behind)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.7)


def _inputs(lengths: list[int], seed: int = 1) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    mask = _mask(lengths)
    x = torch.randn(len(lengths), max(lengths), IN, generator=g, dtype=torch.float64)
    return x * mask[:, :, None], mask


def reference(layer: HighwayLSTMLayer, xs: Tensor, keep: Tensor | None) -> Tensor:
    """He et al.'s highway LSTM over ONE unpadded sequence ``xs`` (time, in), one step at a time.

    deep_srl: ``W`` (input → i, f, o, t, j, k), ``U`` (state → i, f, o, t, j), ``b``; with the
    transform (highway) gate t written r and j written g:
    i, f, o, r = σ(W x_t + U h_{t-1} + b), g = tanh(W_g x_t + U_g h_{t-1} + b_g),
    c_t = f c_{t-1} + i g, h_t = dropout(r o tanh(c_t) + (1 − r) W_k x_t), h_t fed back.
    """
    h = layer.hidden
    w = layer.input_projection.weight.detach()  # (6h, in)
    u = layer.state_projection.weight.detach()  # (5h, h)
    b = layer.state_projection.bias.detach()  # (5h,)

    def block(matrix: Tensor, n: int) -> Tensor:
        return matrix[n * h : (n + 1) * h]

    state = torch.zeros(h, dtype=xs.dtype)
    memory = torch.zeros(h, dtype=xs.dtype)
    out = []
    for x_t in xs:

        def pre(n: int, x_t: Tensor = x_t, state: Tensor = state) -> Tensor:
            return block(w, n) @ x_t + block(u, n) @ state + block(b, n)

        i, f, o, r = (torch.sigmoid(pre(n)) for n in range(4))
        g = torch.tanh(pre(4))
        k = block(w, 5) @ x_t  # the carry: a linear map of the input, no bias
        memory = f * memory + i * g
        state = r * o * torch.tanh(memory) + (1.0 - r) * k
        if keep is not None:
            state = state * keep  # the dropped highway output is also what is fed back
        out.append(state)
    return torch.stack(out)


def test_layer_is_the_step_by_step_cell_with_a_per_sequence_mask() -> None:
    layer = HighwayLSTMLayer(IN, HIDDEN, 0.5).double().train()
    _randomise(layer)
    x, mask = _inputs(LENGTHS)
    g = torch.Generator().manual_seed(2)
    keep = torch.bernoulli(torch.full((3, HIDDEN), 0.5), generator=g).double() / 0.5
    keep[0] = 2.0  # one row without a dropped unit, so every path is exercised
    out = layer(x, mask, keep=keep)
    assert out.shape == (3, max(LENGTHS), HIDDEN)
    for row, length in enumerate(LENGTHS):
        expected = reference(layer, x[row, :length], keep[row])
        assert torch.allclose(out[row, :length], expected, atol=1e-12), row
        assert torch.all(out[row, length:] == 0)


def test_evaluation_uses_no_mask() -> None:
    layer = HighwayLSTMLayer(IN, HIDDEN, 0.5).double().eval()
    _randomise(layer, seed=3)
    x, mask = _inputs(LENGTHS, seed=4)
    assert layer.dropout_mask(3, x) is None
    out = layer(x, mask)
    for row, length in enumerate(LENGTHS):
        assert torch.allclose(out[row, :length], reference(layer, x[row, :length], None))


def test_stack_alternates_directions_like_the_reference() -> None:
    stack = AlternatingHighwayLSTM(IN, HIDDEN, 3, 0.1).double().eval()
    _randomise(stack, seed=5)
    x, mask = _inputs(LENGTHS, seed=6)
    out = stack(x, mask)
    for row, length in enumerate(LENGTHS):
        y = x[row, :length]
        for index, layer in enumerate(stack.layers):
            assert isinstance(layer, HighwayLSTMLayer)
            if index % 2 == 1:  # right to left from the sequence's own last token
                y = reference(layer, y.flip(0), None).flip(0)
            else:
                y = reference(layer, y, None)
        assert torch.allclose(out[row, :length], y, atol=1e-12), row
        assert torch.all(out[row, length:] == 0)


def test_the_drawn_mask_is_one_per_sequence_and_constant_over_time() -> None:
    layer = HighwayLSTMLayer(IN, 16, 0.5).double().train()
    x = torch.randn(1, 6, IN, dtype=torch.float64).expand(2, 6, IN)  # two identical sequences
    mask = torch.ones(2, 6, dtype=torch.bool)
    torch.manual_seed(7)
    drawn = layer.dropout_mask(2, x)
    assert drawn is not None and drawn.shape == (2, 16)
    assert set(drawn.unique().tolist()) <= {0.0, 2.0}
    torch.manual_seed(7)
    out = layer(x, mask)
    assert torch.equal(out, layer(x, mask, keep=drawn))  # forward draws exactly that mask
    assert not torch.allclose(out[0], out[1])  # identical rows, different masks
    for row in range(2):
        dropped = out[row] == 0  # (time, hidden)
        assert dropped.any()
        assert torch.equal(dropped, dropped[:1].expand_as(dropped))  # the same units each step
        assert torch.equal(dropped[0], drawn[row] == 0)


def test_gradients_reach_every_parameter() -> None:
    stack = AlternatingHighwayLSTM(IN, HIDDEN, 2, 0.1).train()
    x, mask = _inputs(LENGTHS, seed=8)
    stack(x.float(), mask).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in stack.parameters())
