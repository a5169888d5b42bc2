"""Fine-tuning a biLM on a task's text: gains, outputs, exact resume, CLI."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from bilm import load_checkpoint, save_checkpoint
from bilm.__main__ import main
from bilm.finetune import OUTPUT_NAME, PERPLEXITY_NAME, finetune
from bilm.pretrain import (
    CHECKPOINT_NAME,
    load_language_model,
    load_training_checkpoint,
    preset,
    save_language_model,
    train,
)
from tests.bilm.helpers import tiny_bilm

# Adam, no dropout, full softmax: a tiny model learns the template text within one short run.
CONFIG = replace(
    preset("tiny"),
    optimizer="adam",
    lr=0.03,
    dropout=0.0,
    num_samples=None,
    batch_size=8,
    checkpoint_every=4,
)


def corpus(path: Path, n: int, seed: int, words: tuple[str, ...] = ("cat", "dog")) -> Path:
    """Template sentences (most positions predictable); ``words`` vary the vocabulary."""
    rng = random.Random(seed)
    lines = [
        f"the {rng.choice(['big', 'small', 'red'])} {rng.choice(words)} "
        f"{rng.choice(['sat', 'ran'])} {rng.choice(['on', 'under'])} the "
        f"{rng.choice(['mat', 'log'])} ."
        for _ in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Task text (with words the pretraining text lacks), a biLM-only and an LM checkpoint."""
    root = tmp_path_factory.mktemp("finetune")
    pre = corpus(root / "pre.txt", 100, 1, ("cat", "dog"))
    train(replace(CONFIG, max_steps=20, checkpoint_every=20), [pre], root / "pre", progress=False)
    lm, vocab = load_language_model(root / "pre")
    bilm_only = save_checkpoint(tiny_bilm(seed=3), root / "bilm-only.safetensors")
    return {
        "train": corpus(root / "train.txt", 150, 2, ("cow", "hen")),
        "valid": corpus(root / "valid.txt", 40, 3, ("cow", "hen")),
        "lm": save_language_model(lm, vocab, root / "lm.safetensors"),
        "pre_dir": root / "pre",
        "bilm_only": bilm_only,
    }


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path).state_dict()


@pytest.mark.parametrize("source", ["lm", "bilm_only"])
def test_finetuning_lowers_perplexity_and_writes_a_checkpoint(
    task: dict[str, Path], tmp_path: Path, source: str
) -> None:
    out = tmp_path / "run"
    result = finetune(
        [task["train"]],
        task["valid"],
        out,
        checkpoint=task[source],
        epochs=2,
        config=CONFIG,
        progress=False,
    )
    assert result.after["average"] < result.before["average"]
    assert result.after["tokens"] == result.before["tokens"] > 0
    report = json.loads((out / PERPLEXITY_NAME).read_text())
    assert report["valid"] == str(task["valid"]) and report["tokens"] > 0
    assert set(report["before"]) == {"forward", "backward", "average", "tokens"}
    # the output is a project checkpoint (biLM for the harness, LM for `bilm evaluate`)
    assert result.checkpoint == out / OUTPUT_NAME
    tuned, original = weights(result.checkpoint), weights(task[source])
    assert tuned.keys() == original.keys()
    assert any(not torch.equal(tuned[k], original[k]) for k in tuned)
    lm, vocab = load_language_model(result.checkpoint)
    assert "cow" in vocab and "hen" in vocab
    if source == "lm":  # pretrained softmax reused; the task words were added
        assert "cat" in vocab and report["new_words"] >= 2
    else:
        assert (out / "warmup" / CHECKPOINT_NAME).exists()
    # idempotent: a finished run is reported, not redone
    again = finetune([task["train"]], task["valid"], out, checkpoint=task[source], config=CONFIG)
    assert again.report == result.report


def test_before_is_the_untouched_input_lm_when_no_word_is_new(
    task: dict[str, Path], tmp_path: Path
) -> None:
    from bilm.pretrain import evaluate_perplexity

    pre = task["pre_dir"].parent / "pre.txt"
    result = finetune(
        [pre], pre, tmp_path / "run", checkpoint=task["pre_dir"], config=CONFIG, progress=False
    )
    lm, vocab = load_language_model(task["pre_dir"])
    assert result.report["new_words"] == 0
    assert result.before == pytest.approx(evaluate_perplexity(lm, vocab, [pre]))


def test_resume_after_interruption_is_exact(task: dict[str, Path], tmp_path: Path) -> None:
    def run(out: Path, stop: tuple[str, int] | None = None) -> None:
        def on_step(phase: str, step: int, metrics: dict[str, float]) -> None:
            if (phase, step) == stop:
                raise KeyboardInterrupt

        finetune(
            [task["train"]],
            task["valid"],
            out,
            checkpoint=task["bilm_only"],
            config=CONFIG,
            progress=False,
            on_step=on_step,
        )

    run(tmp_path / "a")
    for stop in (("warmup", 6), ("finetune", 7)):  # past a checkpoint, mid-way to the next
        with pytest.raises(KeyboardInterrupt):
            run(tmp_path / "b", stop)
    assert load_training_checkpoint(tmp_path / "b" / CHECKPOINT_NAME)["step"] == 4
    run(tmp_path / "b")
    a, b = weights(tmp_path / "a" / OUTPUT_NAME), weights(tmp_path / "b" / OUTPUT_NAME)
    for name, value in a.items():
        assert torch.equal(value, b[name]), name
    ra = json.loads((tmp_path / "a" / PERPLEXITY_NAME).read_text())
    rb = json.loads((tmp_path / "b" / PERPLEXITY_NAME).read_text())
    assert (ra["before"], ra["after"]) == (rb["before"], rb["after"])


def test_other_inputs_in_the_same_directory_are_refused(
    task: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    (out).mkdir()
    (out / "request.json").write_text(json.dumps({"source": "something else"}))
    with pytest.raises(ValueError, match="other inputs"):
        finetune([task["train"]], task["valid"], out, checkpoint=task["lm"], config=CONFIG)


def test_cli_help_and_tiny_run(
    task: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["finetune", "--help"]) == 0
    assert "perplexity" in capsys.readouterr().out
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base": "tiny", "num_samples": None, "dropout": 0.0}))
    args = ["finetune", "--train", str(task["train"]), "--valid", str(task["valid"])]
    args += ["--out", str(tmp_path / "run"), "--checkpoint", str(task["lm"])]
    args += ["--config", str(config), "--device", "cpu", "--quiet"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["checkpoint"] == str(tmp_path / "run" / OUTPUT_NAME)
    assert {"before", "after", "valid", "tokens"} <= set(report)
    assert load_checkpoint(report["checkpoint"]).options == load_checkpoint(task["lm"]).options
    # usage errors: exit status 2
    assert main([*args, "--options", "o.json"]) == 2
    assert main([*args[:-4], "--epochs", "0"]) == 2
