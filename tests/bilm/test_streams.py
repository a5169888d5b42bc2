"""BiLM.run_streams (LM training path) agrees with the inference path and carries state."""

from __future__ import annotations

import torch

from bilm import batch_to_ids
from tests.bilm.helpers import tiny_bilm

SENT = ["the", "cat", "sat", "on", "a", "mat"]


def streams(sentence: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    fwd = ["<S>", *sentence, "</S>"]
    bwd = ["</S>", *reversed(sentence), "<S>"]
    return batch_to_ids([fwd]), batch_to_ids([bwd])


def test_streams_match_the_inference_path() -> None:
    model = tiny_bilm()
    f_ids, b_ids = streams(SENT)
    with torch.no_grad():
        top_f, top_b, _ = model.run_streams(f_ids, b_ids)
        top = model(batch_to_ids([SENT])).layers[-1, 0]  # (n, 2P)
    n, P = len(SENT), 8
    # forward stream index t+1 reads token t; backward stream index k reads token n-k
    torch.testing.assert_close(top_f[0, 1 : n + 1], top[:, :P], atol=1e-6, rtol=0)
    torch.testing.assert_close(top_b[0, 1 : n + 1].flip(0), top[:, P:], atol=1e-6, rtol=0)


def test_windows_with_carried_state_equal_one_long_window() -> None:
    model = tiny_bilm()
    f_ids, b_ids = streams(SENT)  # 8 positions
    with torch.no_grad():
        whole_f, whole_b, whole_state = model.run_streams(f_ids, b_ids)
        a_f, a_b, state = model.run_streams(f_ids[:, :5], b_ids[:, :5])
        b_f, b_b, end_state = model.run_streams(f_ids[:, 5:], b_ids[:, 5:], state)
    torch.testing.assert_close(torch.cat([a_f, b_f], 1), whole_f, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.cat([a_b, b_b], 1), whole_b, atol=1e-6, rtol=0)
    torch.testing.assert_close(end_state[0], whole_state[0], atol=1e-6, rtol=0)


def test_ragged_rows_any_order() -> None:
    model = tiny_bilm()
    short_f, short_b = streams(SENT[:2])
    long_f, long_b = streams(SENT)
    f = torch.zeros(2, 8, 50, dtype=torch.long)
    b = torch.zeros(2, 8, 50, dtype=torch.long)
    f[0, :4], b[0, :4] = short_f[0], short_b[0]
    f[1], b[1] = long_f[0], long_b[0]
    with torch.no_grad():
        top_f, top_b, _ = model.run_streams(f, b, lengths=torch.tensor([4, 8]))
        alone_f, alone_b, _ = model.run_streams(short_f, short_b)
    torch.testing.assert_close(top_f[0, :4], alone_f[0], atol=1e-6, rtol=0)
    torch.testing.assert_close(top_b[0, :4], alone_b[0], atol=1e-6, rtol=0)


def test_gradients_flow_in_training_mode() -> None:
    model = tiny_bilm().train()
    model.dropout = 0.1
    f_ids, b_ids = streams(SENT)
    top_f, top_b, state = model.run_streams(f_ids, b_ids)
    (top_f.sum() + top_b.sum()).backward()
    assert not state[0].requires_grad
    assert model.layers[1][1].w_state.grad is not None
