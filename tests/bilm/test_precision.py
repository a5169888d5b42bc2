"""Inference precisions and the CUDA-graph loop: bf16 stays close to float32 with
float32 outputs and state; the static-buffer loop that CUDA graphs capture computes exactly what
the eager float32 loop computes (on the CPU, where nothing is captured)."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from bilm import BiLM, batch_to_ids, load_official
from bilm import lstm as lstm_module
from bilm.lstm import LSTMWithProjection, active_counts, cpu_bf16_unit
from tests.bilm.helpers import SENTENCES, tiny_bilm
from tests.conftest import shared_path

#: Varied lengths (an empty one, one crossing several time chunks) and repeated words.
BATCHES = [
    SENTENCES,
    [[f"w{i % 7}" for i in range(n)] for n in (30, 12, 12, 3, 1)],
    [["x", "y", "z"]] * 4,
]


def layers(model: BiLM, sentences: list[list[str]]) -> torch.Tensor:
    with torch.no_grad():
        return model(batch_to_ids(sentences)).layers


# ------------------------------------------------------------------------------------ bf16
def test_bf16_deviation_is_bounded_and_everything_stays_float32() -> None:
    model = tiny_bilm(seed=3, state="carry", dim=64, projection_dim=16)
    exact = [layers(model, b) for b in BATCHES]
    fp32_carry = model._carry
    model.reset_states()
    assert model.to_precision("bf16") is model and model.precision == "bf16"
    assert model.char_cnn.precision == "bf16"
    approx = [layers(model, b) for b in BATCHES]
    for got, want in zip(approx, exact, strict=True):
        assert got.dtype == torch.float32
        deviation = (got - want).abs().max().item()
        assert 0 < deviation <= 0.02 * want.abs().max().item()
    assert model._carry is not None and fp32_carry is not None
    for state, reference in zip(model._carry, fp32_carry, strict=True):
        assert state.dtype == torch.float32  # carried h and c
        assert (state - reference).abs().max().item() <= 0.05 * reference.abs().max().item()


@pytest.mark.parametrize("onednn", [True, False])
def test_bf16_cell_keeps_float32_state_and_uses_bf16_products(
    onednn: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not onednn:  # a CPU where oneDNN has no bf16: plain torch.mm on bf16 tensors
        monkeypatch.setattr(lstm_module, "_onednn_bf16", lambda: False)
    cell = tiny_bilm(seed=1, dim=32, projection_dim=8).lstms[1][0]
    x = torch.randn(6, 3, 8, generator=torch.Generator().manual_seed(0))  # (T, B, P)
    lengths = [6, 4, 1]
    h0, c0 = torch.zeros(3, 8), torch.zeros(3, 32)
    with torch.no_grad():
        want = cell(x, lengths, h0, c0)
        cell.set_bf16()
        got = cell(x, lengths, h0, c0)
        ops = lstm_module._StepOps(cell, x, 3)
    assert ops.bf16_state is not None and ops.bf16_proj is not None
    assert ops.bf16_state[1] is (onednn and lstm_module._onednn_bf16())  # packed or plain
    for a, b in zip(got, want, strict=True):
        assert a.dtype == torch.float32
        assert 0 < (a - b).abs().max().item() <= 0.02 * max(b.abs().max().item(), 1.0)
    assert torch.equal(got[0][5, 1:], torch.zeros(2, 8))  # past each row's end: exactly 0


def test_precision_switches_are_exclusive_and_reversible() -> None:
    model = tiny_bilm(seed=4)
    exact = layers(model, BATCHES[1])
    model.to_precision("int8")
    assert model.precision == "int8" and model.int8
    model.to_precision("bf16")
    assert model.precision == "bf16" and not model.int8 and not model.char_cnn.int8
    model.quantize_int8()
    assert model.precision == "int8" and model.char_cnn.precision == "int8"
    clone = copy.deepcopy(model.to_precision("bf16"))  # oneDNN operands are not copied
    assert clone.precision == "bf16"
    torch.testing.assert_close(layers(clone, BATCHES[0]), layers(model, BATCHES[0]), rtol=0, atol=0)
    model.to_precision("fp32")
    assert torch.equal(layers(model, BATCHES[1]), exact)
    with pytest.raises(ValueError, match="precision must be one of"):
        model.to_precision("fp16")  # type: ignore[arg-type]


def test_bf16_operands_follow_weight_changes() -> None:
    model = tiny_bilm(seed=5).to_precision("bf16")
    before = layers(model, BATCHES[0])
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)  # in place: the cached bf16 operands must be remade
    fresh = tiny_bilm(seed=5)
    with torch.no_grad():
        for p in fresh.parameters():
            p.mul_(0.5)
    after = layers(model, BATCHES[0])
    assert not torch.equal(after, before)
    assert torch.equal(after, layers(fresh.to_precision("bf16"), BATCHES[0]))


def test_cpu_bf16_unit_reads_cpuinfo_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cpu_bf16_unit() in (None, "AVX-512-bf16", "AMX")
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported", raising=False)
    info = tmp_path / "cpuinfo"
    for flags, unit in (("avx2 avx512f", None), ("avx512f avx512_bf16", "AVX-512-bf16"),
                        ("avx512_bf16 amx_bf16 amx_tile", "AMX")):  # fmt: skip
        info.write_text(f"processor\t: 0\nflags\t\t: fpu {flags}\n", encoding="utf-8")
        assert cpu_bf16_unit(info) == unit
    assert cpu_bf16_unit(tmp_path / "missing") is None


def test_cli_embed_precision_bf16(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    from bilm.__main__ import main
    from bilm.weights import save_checkpoint

    checkpoint = save_checkpoint(tiny_bilm(seed=6), tmp_path / "tiny.safetensors")
    src = tmp_path / "in.txt"
    src.write_text("\n".join(" ".join(s) for s in BATCHES[1]) + "\n", encoding="utf-8")
    argv = ["embed", "--checkpoint", str(checkpoint), "--input", str(src), "--quiet"]
    argv += ["--device", "cpu"]
    assert main([*argv, "--output", str(tmp_path / "fp32.hdf5")]) == 0
    assert main([*argv, "--output", str(tmp_path / "bf16.hdf5"), "--precision", "bf16"]) == 0
    with h5py.File(tmp_path / "fp32.hdf5") as f32, h5py.File(tmp_path / "bf16.hdf5") as b16:
        for key in ("0", "2"):
            exact, approx = f32[key][...], b16[key][...]
            assert approx.dtype == np.float32 and exact.shape == approx.shape
            assert 0 < np.abs(exact - approx).max() <= 0.02 * np.abs(exact).max()


def test_feature_cache_builds_bf16_as_its_own_entry(tmp_path: Path) -> None:
    from tasks.features.feature_cache import CacheError, FeatureCache
    from tasks.representations.elmo import ElmoRepresentation

    rep = ElmoRepresentation(tiny_bilm(seed=7))
    sequences = [s for s in BATCHES[1] if s]
    exact = FeatureCache.build(rep, sequences, tmp_path, dtype="float32", progress=False)
    approx = FeatureCache.build(
        rep, sequences, tmp_path, dtype="float32", progress=False, precision="bf16"
    )
    assert approx.path != exact.path and not approx.reused
    assert approx.path == FeatureCache.folder_for(rep, sequences, tmp_path, "float32", "bf16")
    assert rep.bilm.precision == "fp32"  # restored after the build
    assert approx.meta["precision"] == "bf16" and "precision" not in exact.meta
    a = exact.lookup(range(len(sequences))).tensors
    b = approx.lookup(range(len(sequences))).tensors
    assert 0 < (a - b).abs().max().item() <= 0.02 * a.abs().max().item()
    again = FeatureCache.build(rep, sequences, tmp_path, dtype="float32", progress=False)
    assert again.reused and again.path == exact.path
    with pytest.raises(ValueError, match="precision must be one of"):
        FeatureCache.build(rep, sequences, tmp_path, progress=False, precision="fp16")

    class NoBiLM:
        name, trainable, state_policy, num_layers, output_dim = "plain", False, "reset", 1, 4

    with pytest.raises(CacheError, match="only biLM representations"):
        FeatureCache.build(NoBiLM(), sequences, tmp_path, precision="bf16")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the CUDA-graph loop
def test_graph_loop_without_capture_equals_the_eager_fp32_loop_exactly() -> None:
    model = tiny_bilm(seed=8, state="carry")
    eager = [layers(model, b) for b in BATCHES * 2]
    eager_carry = model._carry
    model.reset_states()
    assert model.use_cuda_graphs() is model and model.cuda_graphs
    graphed = [layers(model, b) for b in BATCHES * 2]  # repeated shapes reuse their buffers
    for got, want in zip(graphed, eager, strict=True):
        assert torch.equal(got, want)
    assert model._carry is not None and eager_carry is not None
    assert all(torch.equal(a, b) for a, b in zip(model._carry, eager_carry, strict=True))
    cell = model.lstms[0][0]
    assert cell._graphs is not None and 0 < len(cell._graphs) <= lstm_module.GRAPH_SHAPES
    assert all(entry.graph is None for entry in cell._graphs.values())  # CPU: not captured
    model.use_cuda_graphs(False)
    assert not model.cuda_graphs and cell._graphs is None


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cell_graph_path_equals_eager_path_per_direction(precision: str) -> None:
    """The same step function, on static buffers or not, in both directions and precisions."""
    for reverse in (False, True):
        cell = LSTMWithProjection(8, 16, 4, 3.0, 3.0, reverse)
        generator = torch.Generator().manual_seed(int(reverse))
        with torch.no_grad():
            for p in cell.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        cell.set_bf16(precision == "bf16")
        x = torch.randn(9, 4, 8, generator=generator)  # (T, B, P)
        lengths = [9, 7, 7, 2]
        h0, c0 = torch.randn(4, 4, generator=generator), torch.randn(4, 16, generator=generator)
        counts = active_counts(lengths, 9)
        with torch.no_grad():
            want = cell._run_inference(x, counts, h0, c0)
            cell.use_graphs(shapes=1)
            got = cell(x, lengths, h0, c0)
            again = cell(x, lengths, h0, c0)  # replayed from the same buffers
            assert cell._graphs is not None and len(cell._graphs) == 1
            cell(x[:5], [5, 5, 3, 1], h0, c0)  # another shape evicts the first (shapes=1)
            assert len(cell._graphs) == 1
        for a, b, c in zip(got, again, want, strict=True):
            assert torch.equal(a, c) and torch.equal(b, c)
        assert got[0].data_ptr() != again[0].data_ptr()  # fresh tensors, not the buffers


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
def test_graph_and_eager_paths_agree_over_many_time_chunks(precision: str) -> None:
    """Both paths run the cell's one loop (``_loop``) over the same chunks: several time chunks,
    chunks narrowed by a wide batch, the per-word table, a row that never runs, carried state."""
    cases = [(70, [70, 40, 1]), (40, [40] * 6 + [25] * 6 + [3] * 7 + [0])]  # (T, lengths)
    for reverse, (steps, lengths) in itertools.product((False, True), cases):
        batch = len(lengths)
        cell = LSTMWithProjection(8, 16, 4, 3.0, 3.0, reverse)
        generator = torch.Generator().manual_seed(steps + int(reverse))
        with torch.no_grad():
            for p in cell.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        if precision == "bf16":
            cell.set_bf16()
        elif precision == "int8":
            cell.quantize_int8()
        words = torch.randn(5, 8, generator=generator)  # (U, P)
        word_index = torch.randint(0, 5, (steps, batch), generator=generator)  # (T, B)
        x = words[word_index]  # (T, B, P)
        h0 = torch.randn(batch, 4, generator=generator)  # carried state
        c0 = torch.randn(batch, 16, generator=generator)
        counts = active_counts(lengths, steps)
        assert len(lstm_module.chunk_plan(steps, batch, counts, reverse)) > 2
        for by_word in ((None, None), (words, word_index)):
            with torch.no_grad():
                cell.use_graphs(False)
                want = cell(x, lengths, h0, c0, *by_word)
                cell.use_graphs()
                got = cell(x, lengths, h0, c0, *by_word)
            for a, b in zip(got, want, strict=True):
                assert torch.equal(a, b)


def test_graph_buffers_are_dropped_when_weights_change() -> None:
    model = tiny_bilm(seed=9).use_cuda_graphs()
    layers(model, BATCHES[2])
    cell = model.lstms[0][1]
    assert cell._graphs is not None and len(cell._graphs) == 1
    with torch.no_grad():
        cell.w_state.mul_(0.5)
    got = layers(model, BATCHES[0])
    assert len(cell._graphs) == 1  # the old shape is gone with the old weights
    assert torch.equal(got, layers(model.use_cuda_graphs(False), BATCHES[0]))
    with pytest.raises(ValueError, match="shapes must be >= 1"):
        cell.use_graphs(shapes=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_graph_replay_equals_eager_on_the_gpu(precision: str) -> None:
    model = tiny_bilm(seed=10).cuda().to_precision(precision)  # type: ignore[arg-type]
    ids = batch_to_ids(BATCHES[1]).cuda()
    with torch.no_grad():
        eager = model(ids).layers
        model.use_cuda_graphs()
        captured = model(ids).layers
        replayed = model(ids).layers
    cell = model.lstms[0][0]
    assert cell._graphs is not None
    assert all(entry.graph is not None for entry in cell._graphs.values())
    assert torch.equal(captured, eager) and torch.equal(replayed, eager)


# ---------------------------------------------------------------- TF fixture, graph loop
@pytest.mark.shared
def test_fixture_protocol_through_the_graph_loop_is_bit_identical() -> None:
    """The TF fixture's carried-state protocol, eager and through the static-buffer loop."""
    options = str(shared_path("fixtures", "elmo", "options.json"))
    weights = str(shared_path("fixtures", "elmo", "lm_weights.hdf5"))
    sentences = json.loads(shared_path("fixtures", "elmo", "sentences.json").read_text())
    runs = []
    for graphs in (False, True):
        model = load_official(options, weights, state="carry").use_cuda_graphs(graphs)
        runs.append([layers(model, [sentences[k][i].split() for k in range(3)]) for i in range(10)])
    for eager, graphed in zip(*runs, strict=True):
        assert torch.equal(eager, graphed)
