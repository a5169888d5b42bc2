"""Speed and memory paths of inference (docs/exactness.md): per-word input products, the LRU token
cache, token-budget batches streamed to HDF5, int8 GEMMs. Each must equal (or, for int8, stay
close to) the straightforward computation."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from bilm import BiLM, batch_to_ids
from bilm.embed import Sentence, embed_file, plan_batches
from tests.bilm.helpers import tiny_bilm

h5py = pytest.importorskip("h5py")

WORDS = ["the", "cat", "sat", "on", "mat", ".", "a", "dog", "ran", "far", "away", "!"]


def batches_with_repeats() -> list[list[list[str]]]:
    """Three batches sharing words, with repeats inside sentences and a long sentence."""
    rng = np.random.default_rng(0)

    def sentence(n: int) -> list[str]:
        return [WORDS[i] for i in rng.integers(0, len(WORDS), n)]

    return [
        [sentence(9), sentence(3), [], sentence(14)],
        [sentence(20), sentence(5)],
        [sentence(7), ["unseen", "words", "only"], sentence(12)],
    ]


def straightforward(model: BiLM, sentences: list[list[str]], monkeypatch: pytest.MonkeyPatch):
    """Layers without the per-word table and without the token cache."""
    from bilm import lstm

    with monkeypatch.context() as patch:
        patch.setattr(lstm, "MAX_TABLE_WORDS", 0)
        model.set_token_cache(0)
        with torch.no_grad():
            return model(batch_to_ids(sentences)).layers


def test_per_word_paths_equal_straightforward(monkeypatch: pytest.MonkeyPatch) -> None:
    from bilm import lstm

    model = tiny_bilm(seed=1)
    expected = [straightforward(model, b, monkeypatch) for b in batches_with_repeats()]
    calls: list[int] = []
    original = lstm.LSTMWithProjection._input_product

    def spy(self: lstm.LSTMWithProjection, x: torch.Tensor, out: torch.Tensor | None = None):
        calls.append(x.shape[0])
        return original(self, x, out)

    monkeypatch.setattr(lstm.LSTMWithProjection, "_input_product", spy)
    model.set_token_cache(6)  # smaller than the vocabulary: entries get evicted
    with torch.no_grad():
        got = [model(batch_to_ids(b)).layers for b in batches_with_repeats()]
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    assert model.token_cache_hits > 0 and model.token_cache_misses > 0
    assert len(model._token_cache) == 6
    # Layer 0 built per-word tables: some input products had fewer rows than positions.
    assert min(calls) <= len(WORDS) + 2


def test_token_cache_follows_weight_changes() -> None:
    model = tiny_bilm(seed=2)
    model.set_token_cache(100)
    ids = batch_to_ids([["a", "b", "a"]])
    with torch.no_grad():
        before = model(ids).layers
        model.char_cnn.highway.bias[0].add_(0.5)  # in place: the cache must notice
        after = model(ids).layers
        model.set_token_cache(0)
        fresh = model(ids).layers
    torch.testing.assert_close(after, fresh, atol=1e-6, rtol=0)
    assert not torch.allclose(before, after)
    with pytest.raises(ValueError, match="max_words"):
        model.set_token_cache(-1)


def test_plan_batches_token_budget() -> None:
    lengths = [30, 2, 9, 9, 1, 0, 12, 3, 3]
    chunk = [Sentence(i, ["w"] * n) for i, n in enumerate(lengths)]
    batches = plan_batches(chunk, batch_size=4, sort=True, max_tokens=40)
    assert sorted(s.index for b in batches for s in b) == list(range(len(lengths)))
    for batch in batches:
        width = max(len(s.tokens) for s in batch) + 2
        assert len(batch) <= 4
        assert len(batch) == 1 or len(batch) * width <= 40
    assert [len(s.tokens) for s in batches[0]] == [30]  # over budget alone: a batch of its own
    # Without sorting (carried state) batches stay consecutive runs of batch_size.
    fixed = plan_batches(chunk, batch_size=4, sort=False, max_tokens=40)
    assert [len(b) for b in fixed] == [4, 4, 1]


def test_streamed_hdf5_equals_whole_batch_result(tmp_path: Path) -> None:
    model = tiny_bilm(seed=3)
    lines = [" ".join(s) for b in batches_with_repeats() for s in b]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sentences = [line.split() for line in lines]
    with torch.no_grad():
        whole = model(batch_to_ids(sentences)).layers.numpy()  # one batch, no streaming
    out = tmp_path / "out.hdf5"
    # Tiny budget and chunks: many batches, each written and released before the next.
    embed_file(
        model,
        tmp_path / "in.txt",
        out,
        batch_size=3,
        max_tokens=24,
        lines_per_chunk=4,
        token_cache=5,
        progress=False,
    )
    assert model._token_cache_size == 0  # the model's own setting is restored
    with h5py.File(out, "r") as f:
        for i, tokens in enumerate(sentences):
            np.testing.assert_allclose(f[str(i)][...], whole[:, i, : len(tokens)], atol=1e-5)


def test_int8_deviation_is_bounded_and_reversible() -> None:
    model = tiny_bilm(seed=4)
    ids = batch_to_ids(batches_with_repeats()[0])
    with torch.no_grad():
        exact = model(ids).layers
        model.quantize_int8()
        assert model.int8 and model.char_cnn.int8
        clone = copy.deepcopy(model)  # packed int8 weights are dropped by copies, not shared
        assert not clone.int8
        quantized = model(ids).layers
        model.quantize_int8(False)
        back = model(ids).layers
    deviation = (quantized - exact).abs().max().item()
    assert 0 < deviation <= 0.05 * exact.abs().max().item()
    torch.testing.assert_close(back, exact, atol=0, rtol=0)


def test_cli_precision_int8_and_max_tokens(tmp_path: Path) -> None:
    from bilm.__main__ import main
    from bilm.weights import save_checkpoint

    model = tiny_bilm(seed=5)
    checkpoint = save_checkpoint(model, tmp_path / "tiny.safetensors")
    lines = [" ".join(s) for s in batches_with_repeats()[1]]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["embed", "--checkpoint", str(checkpoint), "--input", str(src), "--quiet"]
    argv += ["--device", "cpu", "--max-tokens", "10"]
    assert main([*argv, "--output", str(tmp_path / "fp32.hdf5")]) == 0
    assert main([*argv, "--output", str(tmp_path / "int8.hdf5"), "--precision", "int8"]) == 0
    with h5py.File(tmp_path / "fp32.hdf5", "r") as f32, h5py.File(tmp_path / "int8.hdf5") as i8:
        for key in ("0", "1"):
            exact, approx = f32[key][...], i8[key][...]
            assert exact.shape == approx.shape
            assert 0 < np.abs(exact - approx).max() <= 0.05 * np.abs(exact).max()


def test_inference_under_bf16_autocast_takes_the_per_word_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The per-word table came back in bf16 under autocast and could not be gathered into the
    # float32 step buffers (--precision bf16 with a live biLM failed); it is float32 now, and
    # the LSTM steps match the straightforward path under the same autocast.
    model = tiny_bilm(seed=2).eval()
    batch = batches_with_repeats()[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = straightforward(model, batch, monkeypatch)
        model.set_token_cache(0)
        with torch.no_grad():
            got = model(batch_to_ids(batch)).layers
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
