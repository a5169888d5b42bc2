"""Pretraining: learning, exact resume after kill -9, atomic checkpoints, export round trip."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from bilm.pretrain import (
    CHECKPOINT_NAME,
    PretrainConfig,
    load_training_checkpoint,
    preset,
    train,
)
from tests.conftest import REPO


def corpus(path: Path, n: int = 60, seed: int = 0) -> Path:
    """Template sentences: most positions are predictable, so an LM can learn them quickly."""
    rng = random.Random(seed)
    lines = [
        f"the {rng.choice(['big', 'small', 'red'])} {rng.choice(['cat', 'dog'])} "
        f"{rng.choice(['sat', 'ran'])} {rng.choice(['on', 'under'])} the "
        f"{rng.choice(['mat', 'log'])} ."
        for _ in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def config(**kw: object) -> PretrainConfig:
    return replace(preset("tiny"), **kw)  # type: ignore[arg-type]


def losses(out: Path) -> list[tuple[int, float, float]]:
    rows = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss_fwd"], r["loss_bwd"]) for r in rows if "loss" in r]


def params(out: Path) -> dict[str, torch.Tensor]:
    return load_training_checkpoint(out / CHECKPOINT_NAME)["model"]


def test_training_lowers_the_loss_and_reports_perplexity(tmp_path: Path) -> None:
    text = corpus(tmp_path / "train.txt", n=200)
    cfg = config(
        max_steps=60,
        checkpoint_every=60,
        num_samples=None,
        optimizer="adam",
        lr=0.03,
        batch_size=8,
        dropout=0.0,
    )
    result = train(cfg, [text], tmp_path / "run", valid_files=[text], progress=False)
    history = losses(tmp_path / "run")
    assert result.steps == 60 and len(history) == 60
    first = sum(h[1] + h[2] for h in history[:5])
    last = sum(h[1] + h[2] for h in history[-5:])
    assert last < first * 0.8
    assert result.perplexity is not None
    # 14 word types + 3 specials; the template makes most tokens predictable
    assert 1 < result.perplexity["average"] < 4


def test_resume_is_exact(tmp_path: Path) -> None:
    text = corpus(tmp_path / "train.txt")
    cfg = config()
    train(cfg, [text], tmp_path / "a", progress=False)
    train(cfg, [text], tmp_path / "b", progress=False, stop_after=3)
    train(cfg, [text], tmp_path / "b", progress=False)
    assert losses(tmp_path / "a") == losses(tmp_path / "b")
    for name, value in params(tmp_path / "a").items():
        assert torch.equal(value, params(tmp_path / "b")[name]), name


KILLER = """
import os, signal, sys
from dataclasses import replace
import torch
torch.set_num_threads(1)
from bilm import pretrain
cfg = replace(pretrain.preset("tiny"), max_steps=int(sys.argv[3]))
kill_at, mode = int(sys.argv[4]), sys.argv[5]
if mode == "write":  # die in the middle of writing a checkpoint
    real = pretrain.torch.save
    def dying_save(obj, handle):
        if obj["step"] >= kill_at:
            handle.write(b"partial")
            handle.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        real(obj, handle)
    pretrain.torch.save = dying_save
def on_step(step, metrics):
    if mode == "step" and step == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
pretrain.train(cfg, [sys.argv[1]], sys.argv[2], progress=False, on_step=on_step)
"""


def run_child(text: Path, out: Path, max_steps: int, kill_at: int, mode: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(text), str(out), str(max_steps), str(kill_at), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode


@pytest.mark.parametrize(("kill_at", "mode"), [(3, "step"), (4, "write")])
def test_kill_9_then_resume_matches_uninterrupted(tmp_path: Path, kill_at: int, mode: str) -> None:
    text = corpus(tmp_path / "train.txt")
    assert run_child(text, tmp_path / "a", 6, 99, "none") == 0
    assert run_child(text, tmp_path / "b", 6, kill_at, mode) == -signal.SIGKILL
    # the previous checkpoint survived intact (step 2; the kill hit step 3 or the write of 4)
    assert load_training_checkpoint(tmp_path / "b" / CHECKPOINT_NAME)["step"] == 2
    assert run_child(text, tmp_path / "b", 6, 99, "none") == 0
    assert losses(tmp_path / "a") == losses(tmp_path / "b")
    for name, value in params(tmp_path / "a").items():
        assert torch.equal(value, params(tmp_path / "b")[name]), name


def test_full_disk_during_checkpoint_keeps_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bilm import pretrain

    text = corpus(tmp_path / "train.txt")
    out = tmp_path / "run"
    train(config(max_steps=2), [text], out, progress=False)
    before = (out / CHECKPOINT_NAME).read_bytes()

    def full_disk(obj: object, handle: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pretrain.torch, "save", full_disk)
    with pytest.raises(OSError, match="no space left on the device"):
        train(config(max_steps=4), [text], out, progress=False)
    assert (out / CHECKPOINT_NAME).read_bytes() == before
    assert [p.name for p in out.iterdir() if ".tmp" in p.name] == []


def test_vocab_or_config_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    text = corpus(tmp_path / "train.txt")
    out = tmp_path / "run"
    train(config(max_steps=2), [text], out, progress=False)
    with pytest.raises(ValueError, match="another config"):
        train(config(max_steps=2, lr=0.1), [text], out, progress=False)
    (out / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nzebra\n")
    with pytest.raises(ValueError, match="another vocabulary"):
        train(config(max_steps=2), [text], out, progress=False)


def test_config_json_overrides_and_errors(tmp_path: Path) -> None:
    cfg = PretrainConfig.from_dict({"base": "tiny", "lr": 0.3})
    assert cfg.lr == 0.3 and cfg.model == preset("tiny").model
    again = PretrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())), base=preset("tiny"))
    assert again == cfg
    with pytest.raises(ValueError, match="unknown config keys"):
        PretrainConfig.from_dict({"learning_rate": 1})


def sessions(out: Path) -> list[dict[str, object]]:
    rows = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    return [r["session"] for r in rows if "session" in r]


@pytest.mark.usefixtures("cpu_bf16")
def test_bf16_on_cpu_resumes_exactly_and_is_recorded(tmp_path: Path) -> None:
    text = corpus(tmp_path / "train.txt")
    cfg = config()
    kw = {"progress": False, "device": "cpu", "precision": "bf16"}
    train(cfg, [text], tmp_path / "a", **kw)  # type: ignore[arg-type]
    train(cfg, [text], tmp_path / "b", stop_after=3, **kw)  # type: ignore[arg-type]
    train(cfg, [text], tmp_path / "b", **kw)  # type: ignore[arg-type]
    assert losses(tmp_path / "a") == losses(tmp_path / "b")
    for name, value in params(tmp_path / "a").items():
        assert value.dtype == torch.float32, name  # mixed precision: fp32 weights
        assert torch.equal(value, params(tmp_path / "b")[name]), name
    assert [(s["device"], s["precision"], s["resumed"]) for s in sessions(tmp_path / "b")] == [
        ("cpu", "bf16", False),
        ("cpu", "bf16", True),
    ]
    payload = load_training_checkpoint(tmp_path / "b" / CHECKPOINT_NAME)
    assert payload["device"] == "cpu" and payload["precision"] == "bf16"
    assert payload["scaler"] == {} and payload["rng_cuda"] == []
    # bf16 really ran: the losses differ from an fp32 run's
    train(cfg, [text], tmp_path / "c", progress=False, device="cpu")
    assert losses(tmp_path / "c") != losses(tmp_path / "a")


def test_resume_from_another_device_type_warns_and_continues(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = corpus(tmp_path / "train.txt")
    out = tmp_path / "run"
    train(config(), [text], out, progress=False, stop_after=2, device="cpu")
    payload = load_training_checkpoint(out / CHECKPOINT_NAME)
    # as a CUDA run would have written it: a 16-byte philox sampler state, CUDA RNG states
    payload.update(device="cuda:0", rng_sampler=torch.zeros(16, dtype=torch.uint8))
    payload["rng_cuda"] = [torch.zeros(16, dtype=torch.uint8)]
    torch.save(payload, out / CHECKPOINT_NAME)
    with caplog.at_level("WARNING", logger="bilm.pretrain"):
        result = train(config(), [text], out, progress=False, device="cpu")
    assert result.steps == config().max_steps
    assert "written on cuda with fp32, resumed on cpu with fp32" in caplog.text


def test_impossible_device_or_precision_is_a_clear_error(tmp_path: Path) -> None:
    from bilm.devices import DeviceError

    text = corpus(tmp_path / "train.txt")
    with pytest.raises(DeviceError, match="fp16 needs a CUDA device"):
        train(config(), [text], tmp_path / "a", progress=False, device="cpu", precision="fp16")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="CUDA is not available"):
            train(config(), [text], tmp_path / "b", progress=False, device="cuda")
