"""`python -m bilm pretrain | evaluate | export` and the release file format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from bilm import batch_to_ids, load_checkpoint, load_official
from bilm.__main__ import main
from bilm.pretrain import load_language_model, save_language_model
from tests.bilm.test_pretrain import corpus


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pretrain")
    text = corpus(root / "train.txt", n=80)
    out = root / "run"
    args = ["pretrain", "--train", str(text), "--valid", str(text), "--out", str(out)]
    assert main([*args, "--config", "tiny", "--quiet"]) == 0
    return text, out


def test_pretrain_writes_checkpoint_vocab_log(trained: tuple[Path, Path], capsys) -> None:
    _, out = trained
    assert {"checkpoint.pt", "vocab.txt", "config.json", "log.jsonl"} <= {
        p.name for p in out.iterdir()
    }
    records = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert records[-1]["eval"]["average"] > 1


def test_evaluate_prints_perplexities(trained: tuple[Path, Path], capsys) -> None:
    text, out = trained
    capsys.readouterr()
    assert main(["evaluate", "--input", str(text), "--checkpoint", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"forward", "backward", "average", "tokens"}
    assert result["average"] == pytest.approx((result["forward"] + result["backward"]) / 2)


def test_export_round_trips_through_the_official_loader(
    trained: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    _, out = trained
    assert main(["export", "--checkpoint", str(out), "--out", str(tmp_path / "x")]) == 0
    exported = load_official(tmp_path / "x" / "options.json", tmp_path / "x" / "weights.hdf5")
    assert (
        json.loads((tmp_path / "x" / "options.json").read_text())["char_cnn"]["n_characters"] == 262
    )
    original = load_language_model(out)[0].bilm
    ids = batch_to_ids([["the", "big", "cat", "."], ["a"]])
    with torch.no_grad():
        torch.testing.assert_close(exported(ids).layers, original(ids).layers, atol=0, rtol=0)


def test_embed_takes_the_pretraining_folder_as_evaluate_and_export_do(
    trained: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    """``embed --checkpoint OUT`` used to say "not a readable safetensors checkpoint"."""
    import h5py

    _, out = trained
    src = tmp_path / "in.txt"
    src.write_text("the big cat .\na\n", encoding="utf-8")
    argv = ["embed", "--checkpoint", str(out), "--input", str(src), "--quiet", "--state", "carry"]
    assert main([*argv, "--output", str(tmp_path / "v.hdf5"), "--layers", "top"]) == 0
    original = load_language_model(out)[0].bilm
    with torch.no_grad():
        expected = original(batch_to_ids([["the", "big", "cat", "."]])).layers[-1, 0]
    with h5py.File(tmp_path / "v.hdf5", "r") as f:
        torch.testing.assert_close(torch.from_numpy(f["0"][...]), expected, atol=1e-5, rtol=0)
    checkpoint = out / "checkpoint.pt"
    assert main([*argv[:2], str(checkpoint), *argv[3:], "--output", str(tmp_path / "w.hdf5")]) == 0


def test_release_file_fp16(trained: tuple[Path, Path], tmp_path: Path) -> None:
    text, out = trained
    model, vocab = load_language_model(out)
    path = save_language_model(model, vocab, tmp_path / "m.safetensors", dtype=torch.float16)
    again, vocab2 = load_language_model(path)
    assert vocab2 == vocab
    bilm = load_checkpoint(path)  # the biLM alone, softmax ignored
    ids = batch_to_ids([["the", "red", "dog"]])
    with torch.no_grad():
        torch.testing.assert_close(bilm(ids).layers, again.bilm(ids).layers)
        torch.testing.assert_close(
            bilm(ids).layers, model.bilm(ids).layers, atol=1e-2, rtol=1e-2
        )  # fp16 storage rounds the weights


def test_bad_config_and_missing_files_exit_cleanly(tmp_path: Path, capsys) -> None:
    text = corpus(tmp_path / "t.txt")
    assert (
        main(["pretrain", "--train", str(text), "--out", str(tmp_path / "o"), "--config", "nope"])
        == 2
    )
    assert "neither a preset nor an existing file" in capsys.readouterr().err
    assert (
        main(
            [
                "pretrain",
                "--train",
                str(tmp_path / "missing.txt"),
                "--out",
                str(tmp_path / "o"),
                "--config",
                "tiny",
                "--quiet",
            ]
        )
        == 1
    )
    assert "missing.txt" in capsys.readouterr().err
    assert main(["evaluate", "--input", str(text), "--checkpoint", str(text)]) == 1


@pytest.mark.usefixtures("cpu_bf16")
def test_device_and_precision_flags(tmp_path: Path, capsys) -> None:
    text = corpus(tmp_path / "train.txt", n=40)
    args = ["pretrain", "--train", str(text), "--config", "tiny", "--quiet", "--max-steps", "2"]
    out = tmp_path / "run"
    assert main([*args, "--out", str(out), "--device", "cpu", "--precision", "bf16"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["device"] == "cpu" and summary["precision"] == "bf16"
    records = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert records[0]["session"]["device"] == "cpu"
    assert records[0]["session"]["precision"] == "bf16"
    bad = tmp_path / "bad"
    assert main([*args, "--out", str(bad), "--device", "cpu", "--precision", "fp16"]) == 2
    assert "fp16 needs a CUDA device" in capsys.readouterr().err
    assert main([*args, "--out", str(bad), "--device", "tpu"]) == 2
    assert "expected auto | cpu | cuda | cuda:N" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main([*args, "--out", str(bad), "--device", "cuda:1"]) == 2
        assert "CUDA is not available" in capsys.readouterr().err
