"""BiLM behaviour on tiny random models: shapes, masks, state policies, gradients, bad input."""

from __future__ import annotations

import pytest
import torch

from bilm import BiLM, batch_to_ids
from tests.bilm.helpers import SENTENCES, tiny_bilm, tiny_options


def run(model: BiLM, sentences: list[list[str]]) -> torch.Tensor:
    with torch.no_grad():
        return model(batch_to_ids(sentences)).layers


def test_shapes_mask_and_zero_padding() -> None:
    model = tiny_bilm()
    out = model(batch_to_ids(SENTENCES))
    assert out.layers.shape == (3, 4, 11, 16)  # (L+1, batch, time, 2P)
    assert out.mask.tolist()[1] == [True, True] + [False] * 9
    assert (out.layers[:, ~out.mask] == 0).all()  # exactly 0 at padding, every layer
    assert (out.layers[:, 2] == 0).all()  # the empty sentence
    # token layer is the char-CNN embedding duplicated
    assert torch.equal(out.layers[0, :, :, :8], out.layers[0, :, :, 8:])
    assert model.output_dim == 16 and model.num_layers == 3


def test_reset_is_invariant_to_batch_padding_order_and_history() -> None:
    model = tiny_bilm(state="reset")
    alone = [run(model, [s])[:, 0, : len(s)] for s in SENTENCES]
    run(model, [["warming", "up", "nothing"]] * 3)  # earlier calls must not matter
    together = run(model, list(reversed(SENTENCES)))
    for i, s in enumerate(reversed(SENTENCES)):
        torch.testing.assert_close(
            together[:, i, : len(s)], alone[len(SENTENCES) - 1 - i], atol=1e-5, rtol=0
        )
    padded = run(model, [SENTENCES[1], ["x"] * 30])
    torch.testing.assert_close(padded[:, 0, :2], alone[1], atol=1e-5, rtol=0)


def test_carry_depends_on_history_and_can_be_reset() -> None:
    model = tiny_bilm(state="carry")
    sentence = [SENTENCES[0]]
    first, second = run(model, sentence), run(model, sentence)
    assert (first - second).abs().max() > 1e-4  # same sentence, different vectors
    model.reset_states()
    torch.testing.assert_close(run(model, sentence), first, atol=0, rtol=0)
    # The first call from zero state equals the reset policy.
    torch.testing.assert_close(first, run(tiny_bilm(state="reset"), sentence), atol=1e-6, rtol=0)


def test_carry_rows_are_independent_and_unused_rows_keep_state() -> None:
    a, b = ["one", "two", "three"], ["four", "five"]
    model = tiny_bilm(state="carry")
    run(model, [a, b])
    run(model, [a])  # row 1 untouched by this call
    row1_after = run(model, [a, b])[:, 1]
    single = tiny_bilm(state="carry")
    run(single, [b])
    expected = run(single, [b])[:, 0]  # row 1 saw b, then b again
    torch.testing.assert_close(row1_after[:, :2], expected[:, :2], atol=1e-5, rtol=0)


def test_warm_is_deterministic_and_differs_from_reset() -> None:
    warm = tiny_bilm(state="warm")
    first = run(warm, SENTENCES)
    torch.testing.assert_close(run(warm, SENTENCES), first, atol=0, rtol=0)
    alone = run(warm, [SENTENCES[0]])
    torch.testing.assert_close(first[:, 0, :7], alone[:, 0], atol=1e-5, rtol=0)
    reset = run(tiny_bilm(state="reset"), SENTENCES)
    assert (first[1:] - reset[1:]).abs().max() > 1e-4
    torch.testing.assert_close(first[0], reset[0])  # the token layer has no state


def test_autograd_path_equals_inference_path_and_gives_gradients() -> None:
    model = tiny_bilm()
    ids = batch_to_ids(SENTENCES)
    fast = run(model, SENTENCES)
    slow = model(ids).layers
    assert slow.requires_grad
    torch.testing.assert_close(slow.detach(), fast, atol=1e-6, rtol=0)
    slow.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    assert model.char_cnn.char_embedding.weight.grad[0].abs().sum() == 0  # padding row


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_highway": 0},
        {"skip": False},
        {"n_layers": 1},
        {"activation": "tanh"},
        {"filters": ((1, 4), (2, 4)), "projection_dim": 8},  # F == P: no CNN projection
        {"dim": 8, "projection_dim": 8},  # P == C: no LSTM projection
    ],
)
def test_architecture_variants_run(kwargs: dict[str, object]) -> None:
    model = tiny_bilm(**kwargs)
    out = run(model, SENTENCES)
    assert out.shape[0] == model.options.num_layers
    assert torch.isfinite(out).all()


def test_empty_inputs() -> None:
    model = tiny_bilm(state="carry")
    empty = model(batch_to_ids([]))
    assert empty.layers.shape == (3, 0, 0, 16) and empty.mask.shape == (0, 0)
    blank = model(batch_to_ids([[], []]))
    assert blank.layers.shape == (3, 2, 0, 16)


def test_odd_text_gives_finite_vectors() -> None:
    out = run(tiny_bilm(), [["🙂", "\x00", "\u200b", "e\u0301", "\udcff", "x" * 500, "日本"]])
    assert torch.isfinite(out).all() and out.shape == (3, 1, 7, 16)


def test_bad_input_errors() -> None:
    model = tiny_bilm()
    with pytest.raises(ValueError, match="must be"):
        model(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="0..261"):
        model(torch.full((1, 2, 50), 262, dtype=torch.long))
    ids = batch_to_ids([["a", "b"]])
    ids[0, 0] = 0  # a hole before a real token
    with pytest.raises(ValueError, match="padding"):
        model(ids)
    with pytest.raises(ValueError, match="state must be one of"):
        BiLM(tiny_options(), state="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk", [1, 3, 32])
def test_time_chunked_inference_equals_autograd_path(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bilm import lstm

    monkeypatch.setattr(lstm, "TIME_CHUNK", chunk)
    model = tiny_bilm()
    long = [f"w{i % 13}" for i in range(70)]  # crosses several chunk boundaries
    sentences = [long, SENTENCES[0], [], long[:33]]
    ids = batch_to_ids(sentences)
    fast = run(model, sentences)
    slow = model(ids).layers.detach()
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=0)
