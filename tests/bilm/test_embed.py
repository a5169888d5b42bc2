"""The ``embed`` command: allennlp ``elmo`` HDF5 layout, order/state rules, errors, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import bilm.__main__ as cli
from bilm import BiLM, BiLMOptions, CharCNNOptions, LSTMOptions, batch_to_ids
from bilm.__main__ import main
from bilm.bilm import StatePolicy
from bilm.embed import EmbedError, EmbedStats, Sentence, embed_file, plan_batches, scan_input
from bilm.weights import init_weights, load_checkpoint, save_checkpoint
from tests.conftest import shared_path

h5py = pytest.importorskip("h5py")

LINES = [
    "The cat sat on the mat .",
    "Hello world",
    "",
    "A much  longer sentence\twith more tokens than the others !",
    "naïve café ☕",
    "Hello world",
    "x",
]
DIM = 12  # 2P of the tiny model
NUM_LAYERS = 3  # L + 1


def tiny_options() -> BiLMOptions:
    """A biLM that runs in milliseconds (2 layers, P = 6, C = 16)."""
    return BiLMOptions(
        lstm=LSTMOptions(dim=16, projection_dim=6, n_layers=2, cell_clip=3.0, proj_clip=3.0),
        char_cnn=CharCNNOptions(embedding_dim=4, filters=((1, 4), (2, 6), (3, 6)), n_highway=1),
    )


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A random tiny model saved as a project checkpoint."""
    model = init_weights(BiLM(tiny_options()), seed=3)
    return save_checkpoint(model, tmp_path / "tiny.safetensors")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_output(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str] | None]:
    """Datasets of an embedding file, and its decoded sentence_to_index (None when absent)."""
    with h5py.File(path, "r") as f:
        data = {k: f[k][...] for k in f if k != "sentence_to_index"}
        index = json.loads(f["sentence_to_index"][0]) if "sentence_to_index" in f else None
    return data, index


def alone(model: BiLM, tokens: list[str]) -> np.ndarray:
    """(L+1, n, 2P) for one sentence run by itself."""
    with torch.no_grad():
        return model(batch_to_ids([tokens])).layers[:, 0, : len(tokens)].numpy()


def embed(
    checkpoint: Path, tmp_path: Path, state: StatePolicy = "reset", **kwargs: object
) -> tuple[EmbedStats, dict[str, np.ndarray], dict[str, str] | None]:
    """Run embed_file on tmp_path/in.txt with a fresh model; the stats and the file's content."""
    model = load_checkpoint(checkpoint, state=state)
    out = tmp_path / f"out_{state}.hdf5"
    stats = embed_file(model, tmp_path / "in.txt", out, progress=False, **kwargs)  # type: ignore[arg-type]
    return stats, *read_output(out)


# ---------------------------------------------------------------------------------- layout
def test_layout_all_average_top(checkpoint: Path, tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", LINES)
    stats, full, index = embed(checkpoint, tmp_path, batch_size=3)
    assert sorted(full, key=int) == [str(i) for i in range(len(LINES))]
    for i, line in enumerate(LINES):
        assert full[str(i)].dtype == np.float32
        assert full[str(i)].shape == (NUM_LAYERS, len(line.split()), DIM)
    assert full["2"].shape == (NUM_LAYERS, 0, DIM)  # the empty line
    assert stats.sentences == len(LINES)
    assert stats.tokens == sum(len(line.split()) for line in LINES)
    assert stats.output == tmp_path / "out_reset.hdf5" and stats.tokens_per_second >= 0
    assert "embedded 7 sentences" in stats.summary()

    _, average, _ = embed(checkpoint, tmp_path, layers="average", batch_size=3)
    _, top, _ = embed(checkpoint, tmp_path, layers="top", batch_size=3)
    for key, value in full.items():
        assert average[key].shape == top[key].shape == value.shape[1:]
        assert average[key].dtype == top[key].dtype == np.float32
        np.testing.assert_allclose(average[key], value.mean(axis=0), atol=1e-6)
        np.testing.assert_array_equal(top[key], value[-1])


def test_sentence_to_index(checkpoint: Path, tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", LINES)
    _, _, index = embed(checkpoint, tmp_path)
    assert index == {
        "The cat sat on the mat .": "0",
        "Hello world": "5",  # repeated sentence: the last line wins, as in allennlp
        "": "2",
        "A much longer sentence with more tokens than the others !": "3",  # whitespace joined
        "naïve café ☕": "4",
        "x": "6",
    }
    _, data, none = embed(checkpoint, tmp_path, sentence_index=False)
    assert none is None and len(data) == len(LINES)


def test_empty_input_file(checkpoint: Path, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"")
    stats, data, index = embed(checkpoint, tmp_path)
    assert (stats.sentences, stats.tokens, data, index) == (0, 0, {}, {})


def test_only_empty_lines(checkpoint: Path, tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", ["", "  ", ""])
    _, data, _ = embed(checkpoint, tmp_path, layers="top")
    assert {k: v.shape for k, v in data.items()} == {str(i): (0, DIM) for i in range(3)}


def test_bom_and_crlf(checkpoint: Path, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"\xef\xbb\xbfHello world\r\nThe cat\r\nlast")
    _, data, index = embed(checkpoint, tmp_path)
    assert index == {"Hello world": "0", "The cat": "1", "last": "2"}
    model = load_checkpoint(checkpoint)
    np.testing.assert_allclose(data["0"], alone(model, ["Hello", "world"]), atol=1e-5)


# ---------------------------------------------------------------------------------- order/state
@pytest.mark.parametrize("state", ["reset", "warm"])
@pytest.mark.parametrize("lines_per_chunk", [None, 2])
def test_sorting_does_not_change_vectors(
    checkpoint: Path, tmp_path: Path, state: StatePolicy, lines_per_chunk: int | None
) -> None:
    """Sorted, chunked batches give each line the vectors it gets when run alone."""
    write_lines(tmp_path / "in.txt", LINES)
    _, data, _ = embed(checkpoint, tmp_path, state, batch_size=3, lines_per_chunk=lines_per_chunk)
    model = load_checkpoint(checkpoint, state=state)
    for i, line in enumerate(LINES):
        np.testing.assert_allclose(data[str(i)], alone(model, line.split()), atol=1e-5, rtol=0)


def test_plan_batches_sorts_only_when_asked() -> None:
    chunk = [Sentence(i, ["w"] * n) for i, n in enumerate([1, 3, 0, 3, 2])]
    sorted_batches = plan_batches(chunk, 2, sort=True)
    assert [[s.index for s in b] for b in sorted_batches] == [[1, 3], [4, 0], [2]]
    assert [[s.index for s in b] for b in plan_batches(chunk, 2, sort=False)] == [
        [0, 1],
        [2, 3],
        [4],
    ]


@pytest.mark.parametrize("lines_per_chunk", [None, 3, 4])
def test_carry_keeps_file_order(
    checkpoint: Path, tmp_path: Path, lines_per_chunk: int | None
) -> None:
    """Carry mode = consecutive batches in file order through one carry-mode biLM."""
    write_lines(tmp_path / "in.txt", LINES)
    _, data, _ = embed(checkpoint, tmp_path, "carry", batch_size=3, lines_per_chunk=lines_per_chunk)
    reference = load_checkpoint(checkpoint, state="carry")
    tokens = [line.split() for line in LINES]
    with torch.no_grad():
        for start in range(0, len(LINES), 3):
            batch = tokens[start : start + 3]
            layers = reference(batch_to_ids(batch)).layers  # (L+1, B, T, 2P)
            for row, sentence in enumerate(batch):
                expected = layers[:, row, : len(sentence)].numpy()
                np.testing.assert_allclose(data[str(start + row)], expected, atol=1e-6, rtol=0)
    # and the state really flowed: later lines differ from running them alone
    fresh = load_checkpoint(checkpoint, state="reset")
    assert np.abs(data["3"] - alone(fresh, tokens[3])).max() > 1e-4


def test_eval_mode_no_grad_and_mode_restored(checkpoint: Path, tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", LINES)
    model = load_checkpoint(checkpoint).train()
    seen: list[tuple[bool, bool]] = []
    forward = model.forward

    def spy(char_ids: torch.Tensor):  # type: ignore[no-untyped-def]
        seen.append((model.training, torch.is_grad_enabled()))
        return forward(char_ids)

    model.forward = spy  # type: ignore[method-assign]
    embed_file(model, tmp_path / "in.txt", tmp_path / "o.hdf5", batch_size=2, progress=False)
    assert seen and set(seen) == {(False, False)}
    assert model.training


# ---------------------------------------------------------------------------------- errors
def test_invalid_utf8_names_file_and_line(checkpoint: Path, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"fine line\nstill fine\nbad \xff byte\nok\n")
    out = tmp_path / "out.hdf5"
    with pytest.raises(EmbedError, match=r"in\.txt: line 3 .*not valid UTF-8"):
        embed_file(load_checkpoint(checkpoint), tmp_path / "in.txt", out, progress=False)
    assert [p.name for p in tmp_path.iterdir() if "out.hdf5" in p.name] == []  # nor a temporary
    with pytest.raises(EmbedError, match="line 3"):
        scan_input(tmp_path / "in.txt")


def test_missing_input(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(EmbedError, match="nope.txt: input file not found"):
        embed_file(load_checkpoint(checkpoint), tmp_path / "nope.txt", tmp_path / "o.hdf5")


def test_bad_arguments(checkpoint: Path, tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", LINES)
    model = load_checkpoint(checkpoint)
    with pytest.raises(EmbedError, match="batch_size"):
        embed_file(model, tmp_path / "in.txt", tmp_path / "o.hdf5", batch_size=0)
    with pytest.raises(EmbedError, match="layers"):
        embed_file(model, tmp_path / "in.txt", tmp_path / "o.hdf5", layers="first")  # type: ignore[arg-type]
    with pytest.raises(EmbedError, match="overwrite the input"):
        embed_file(model, tmp_path / "in.txt", tmp_path / "in.txt")
    with pytest.raises(EmbedError, match="does not exist"):
        embed_file(model, tmp_path / "in.txt", tmp_path / "no" / "o.hdf5")


def test_failure_leaves_no_partial_output(checkpoint: Path, tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", LINES)
    out = tmp_path / "out.hdf5"
    out.write_bytes(b"previous result")
    model = load_checkpoint(checkpoint)
    forward, calls = model.forward, []

    def failing(char_ids: torch.Tensor):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return forward(char_ids)

    model.forward = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="boom"):
        embed_file(model, tmp_path / "in.txt", out, batch_size=2, progress=False)
    assert out.read_bytes() == b"previous result"
    assert [p.name for p in tmp_path.iterdir() if "out.hdf5" in p.name] == ["out.hdf5"]


def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_rerun_removes_the_temporary_a_killed_run_left(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kill -9`` during ``bilm embed`` left a hidden ~100 MB temporary that a
    successful rerun did not remove. Only temporaries of this output whose process is gone and
    that nobody holds a lock on are removed."""
    src, out = write_lines(tmp_path / "in.txt", LINES), tmp_path / "out.hdf5"
    gone = dead_pid()
    stale = tmp_path / f".out.hdf5.tmp-{gone}-0123abcd"
    stale.write_bytes(b"\0" * 4096)  # what a killed run left (h5py's half-written file)
    kept = [
        tmp_path / f".other.hdf5.tmp-{gone}-0123abcd",  # another output's
        tmp_path / f".out.hdf5.tmp-{os.getppid()}-0123abcd",  # a live process's
        tmp_path / f".out.hdf5.tmp-{gone}-locked00",  # someone holds a lock on it
        tmp_path / ".out.hdf5.notes",  # not a temporary name
    ]
    for path in kept:
        path.write_bytes(b"keep")
    held = os.open(kept[2], os.O_RDONLY)
    fcntl = pytest.importorskip("fcntl")
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        argv = ["embed", "--checkpoint", str(checkpoint), "--input", str(src)]
        assert main([*argv, "--output", str(out), "--device", "cpu"]) == 0
    finally:
        os.close(held)
    assert out.is_file() and not stale.exists()
    assert all(path.read_bytes() == b"keep" for path in kept)
    assert f"removed {stale}" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- tokenize
def test_tokenize_with_spacy(checkpoint: Path, tmp_path: Path) -> None:
    pytest.importorskip("spacy")
    write_lines(tmp_path / "in.txt", ["Hello,  world! It's fine.", ""])
    _, data, index = embed(checkpoint, tmp_path, tokenize=True)
    assert index == {"Hello , world ! It 's fine .": "0", "": "1"}
    assert data["0"].shape == (NUM_LAYERS, 8, DIM) and data["1"].shape == (NUM_LAYERS, 0, DIM)


def test_tokenize_without_spacy_is_actionable(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "spacy", None)
    write_lines(tmp_path / "in.txt", LINES)
    with pytest.raises(EmbedError, match=r"pip install"):
        embed(checkpoint, tmp_path, tokenize=True)


# ---------------------------------------------------------------------------------- CLI
def test_cli_checkpoint(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = write_lines(tmp_path / "in.txt", LINES), tmp_path / "cli.hdf5"
    argv = ["embed", "--checkpoint", str(checkpoint), "--input", str(src), "--output", str(out)]
    assert main([*argv, "--layers", "top", "--batch-size", "2", "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    assert "embedded 7 sentences, 26 tokens" in err and "tokens/s" in err
    data, index = read_output(out)
    assert data["3"].shape == (11, DIM) and index is not None and index["x"] == "6"
    model = load_checkpoint(checkpoint)
    np.testing.assert_allclose(data["0"], alone(model, LINES[0].split())[-1], atol=1e-5)

    assert main([*argv, "--quiet", "--forget-sentences", "--state", "carry"]) == 0
    assert capsys.readouterr().err == ""
    assert read_output(out)[1] is None


def test_cli_help_lists_embed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "embed" in capsys.readouterr().out
    assert main(["embed", "--help"]) == 0
    assert "carry" in capsys.readouterr().out
    assert main([]) == 2


def test_cli_usage_errors(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_lines(tmp_path / "in.txt", LINES)
    io = ["--input", str(src), "--output", str(tmp_path / "o.hdf5")]
    assert main(["embed", "--options", "o.json", *io]) == 2
    assert "--options and --weights go together" in capsys.readouterr().err
    assert main(["embed", "--checkpoint", str(checkpoint), "--weights", "w.hdf5", *io]) == 2
    assert "either --checkpoint or --options/--weights" in capsys.readouterr().err
    assert main(["embed", "--checkpoint", str(checkpoint), "--batch-size", "0", *io]) == 2
    assert "must be >= 1" in capsys.readouterr().err


def test_cli_without_model_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> Path:
        raise FileNotFoundError("the shipped default model is missing")

    monkeypatch.setattr(cli, "default_checkpoint_path", missing)
    src = write_lines(tmp_path / "in.txt", LINES)
    assert main(["embed", "--input", str(src), "--output", str(tmp_path / "o.hdf5")]) == 2
    err = capsys.readouterr().err
    assert "--options" in err and "--weights" in err and "--checkpoint" in err
    assert "Traceback" not in err and not (tmp_path / "o.hdf5").exists()


def test_cli_uses_default_model_when_available(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "default_checkpoint_path", lambda: checkpoint)
    src, out = write_lines(tmp_path / "in.txt", LINES), tmp_path / "o.hdf5"
    assert main(["embed", "--input", str(src), "--output", str(out), "--quiet"]) == 0
    assert len(read_output(out)[0]) == len(LINES)

    def missing() -> Path:
        raise FileNotFoundError("not downloaded")

    monkeypatch.setattr(cli, "default_checkpoint_path", missing)
    assert main(["embed", "--input", str(src), "--output", str(out), "--quiet"]) == 2


def test_cli_runtime_errors_exit_1(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ["embed", "--checkpoint", str(checkpoint), "--output", str(tmp_path / "o.hdf5")]
    assert main([*model, "--input", str(tmp_path / "nope.txt")]) == 1
    err = capsys.readouterr().err
    assert "nope.txt: input file not found" in err and "Traceback" not in err
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xc3\x28\n")
    assert main([*model, "--input", str(tmp_path / "bad.txt")]) == 1
    assert "bad.txt: line 2" in capsys.readouterr().err
    src = write_lines(tmp_path / "in.txt", LINES)
    bad = ["embed", "--checkpoint", str(src), "--input", str(src), "--output", str(tmp_path / "x")]
    assert main(bad) == 1
    assert "not a readable safetensors checkpoint" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cli_device_cuda_without_cuda_is_one_line_exit_2(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No CUDA ("Torch not compiled with CUDA enabled") used to end in a traceback, exit 1."""
    src, out = write_lines(tmp_path / "in.txt", LINES), tmp_path / "o.hdf5"
    argv = ["embed", "--checkpoint", str(checkpoint), "--input", str(src), "--output", str(out)]
    for device in ("cuda", "cuda:1"):
        assert main([*argv, "--device", device]) == 2
        captured = capsys.readouterr()
        assert captured.err.strip().splitlines() == [
            "bilm embed: error: CUDA is not available (torch built without CUDA or no GPU): "
            "use --device cpu"
        ]
        assert not out.exists()


def test_cli_ctrl_c_is_one_line_exit_130(
    checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "embed_file", interrupted)
    src, out = write_lines(tmp_path / "in.txt", LINES), tmp_path / "o.hdf5"
    argv = ["embed", "--checkpoint", str(checkpoint), "--input", str(src), "--output", str(out)]
    assert main([*argv, "--device", "cpu"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["bilm embed: interrupted"]


def test_cli_options_with_fewer_layers_than_the_weights_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``"n_layers": 1`` used to drop the second biLSTM and exit 0."""
    from bilm.weights import export_official

    options, weights = export_official(init_weights(BiLM(tiny_options()), seed=3), tmp_path)
    data = json.loads(options.read_text())
    data["lstm"]["n_layers"] = 1
    options.write_text(json.dumps(data))
    src, out = write_lines(tmp_path / "in.txt", LINES), tmp_path / "o.hdf5"
    argv = ["embed", "--options", str(options), "--weights", str(weights), "--quiet"]
    assert main([*argv, "--input", str(src), "--output", str(out)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"bilm embed: error: {options}: options lstm.n_layers=1 but {weights} holds 2 LSTM layers"
    )
    assert not out.exists()


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    from bilm.version import package_version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"bilm {package_version()}\n"


# ---------------------------------------------------------------------------------- fixture
@pytest.mark.shared
def test_cli_carry_reproduces_tensorflow_fixture(tmp_path: Path) -> None:
    """The fixture protocol through the CLI: 30 lines, carry, batches of 3 in file order."""
    options = shared_path("fixtures", "elmo", "options.json")
    weights = shared_path("fixtures", "elmo", "lm_weights.hdf5")
    sentences = json.loads(shared_path("fixtures", "elmo", "sentences.json").read_text())
    lines = [sentences[k][i] for i in range(10) for k in range(3)]  # batch i = row k
    src, out = write_lines(tmp_path / "in.txt", lines), tmp_path / "out.hdf5"
    argv = ["embed", "--options", str(options), "--weights", str(weights), "--quiet"]
    argv += ["--input", str(src), "--output", str(out), "--state", "carry", "--batch-size", "3"]
    assert main([*argv, "--layers", "top"]) == 0
    data, index = read_output(out)
    assert index is not None and len(index) == 30
    for i in range(10):
        for k in range(3):
            path = shared_path("fixtures", "elmo", f"lm_embeddings_{k}.hdf5")
            with h5py.File(path, "r") as f:
                e = f[str(i)][...]  # (2, n, 16)
            expected = np.concatenate([e[0], e[1]], axis=-1)  # (n, 32)
            assert np.allclose(data[str(3 * i + k)], expected, atol=1e-6)
