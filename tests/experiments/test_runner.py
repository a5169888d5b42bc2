"""The one training loop, on a toy task defined only in tests/ and on SQuAD: determinism, exact
resume after kill -9 with a learning-rate schedule and EMA, the ELMo path (injector, cache, λ,
LastOnly), the NaN guard, devices, and the CLI (run, sweep, reproduce, render)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from bilm.scalar_mix import MixSpec
from experiments.__main__ import main
from experiments.run import runner, scoring
from experiments.run.resolve import resolve
from experiments.run.runner import RunOptions, train
from experiments.run.setup import set_up
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore
from tasks.features.inject import Injector
from tasks.squad.task import VERSION as SQUAD_VERSION
from tests.conftest import REPO
from tests.experiments.helpers import cli_dirs, without_timings
from tests.experiments.test_wandb_sink import decode_run
from tests.experiments.toy_task import SCHEDULED, registered


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[object]:
    with registered(tmp_path / "toy-demo") as task:
        yield task


def toy_spec(**changes: object) -> RunSpec:
    fields: dict[str, object] = {
        "task": "toy",
        "task_version": 1,
        "representation": "none",
        "sites": (),
        "dropout": 0.0,
        "seed": 3,
    }
    return RunSpec(**{**fields, **changes})  # type: ignore[arg-type]


def opts(work: Path, **changes: object) -> RunOptions:
    return dataclasses.replace(RunOptions(work_root=work, progress=False), **changes)


strip = without_timings


def test_toy_task_learns_and_is_deterministic(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(eval_splits=("dev", "test"))
    a = train(spec, opts(tmp_path / "a"))
    b = train(spec, opts(tmp_path / "b"))
    assert a.metrics == b.metrics and strip(a.log) == strip(b.log)
    assert a.log[0]["train_loss"] > a.log[-1]["train_loss"]  # the loss falls
    assert a.metrics["dev_accuracy"] > 0.75  # majority class is about 0.5
    assert set(a.metrics) == {"dev_accuracy", "test_accuracy"}
    lines = a.predictions["test"].read_text().split()
    assert len(lines) == a.counts["test"] == 80


def test_resume_after_kill_9_with_schedule_and_ema(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(overrides=SCHEDULED)
    reference = train(spec, opts(tmp_path / "ref"))
    assert [r["lr"] for r in reference.log][-1] < 0.03  # the exponential decay ran
    assert len(reference.log) >= 4  # evaluated every 7 steps, mid-epoch too
    child = f"""
import os, signal, sys, torch
torch.set_num_threads({torch.get_num_threads()})
from pathlib import Path
from experiments.run import runner
from experiments.run.spec import RunSpec
from tests.experiments.test_wandb_sink import decode_run
from tests.experiments.toy_task import SCHEDULED, registered
real = runner._train_batch
count = {{"n": 0}}
def killing(run, state, batch):
    count["n"] += 1
    if count["n"] == 17:  # after the evaluations at steps 7 and 14, inside epoch 2
        os.kill(os.getpid(), signal.SIGKILL)
    real(run, state, batch)
runner._train_batch = killing
with registered(Path({str(tmp_path / "toy-demo")!r})):
    spec = RunSpec(task="toy", task_version=1, representation="none", sites=(), dropout=0.0,
                   seed=3, overrides=SCHEDULED)
    runner.train(spec, runner.RunOptions(work_root=Path({str(tmp_path / "k")!r}), progress=False))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    saved = torch.load(tmp_path / "k" / "toy" / spec.run_id / "checkpoint.pt", weights_only=True)
    state = json.loads(saved["state"])
    assert state["step"] == 14 and state["batch"] > 0  # killed mid-epoch, after two evals
    resumed = train(spec, opts(tmp_path / "k"))
    assert strip(resumed.log) == strip(reference.log)
    assert resumed.metrics == reference.metrics


def test_elmo_path_uses_the_injector_and_the_cache(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks.features.feature_cache import FeatureCache

    built = []
    real_build = FeatureCache.build

    def spy(*args: object, **kwargs: object) -> FeatureCache:
        cache = real_build(*args, **kwargs)  # type: ignore[arg-type]
        built.append(cache)
        return cache

    monkeypatch.setattr(FeatureCache, "build", spy)
    spec = toy_spec(
        representation="elmo",
        sites=("input", "output"),
        mix=MixSpec("all", 0.001),
        dropout=0.5,
        overrides=("train.epochs=2",),
    )
    outcome = train(spec, opts(tmp_path / "w", cache_dir=tmp_path / "cache"))
    assert len(built) == 1 and any((tmp_path / "cache").iterdir())
    for site in ("input", "output"):
        weights = outcome.layer_weights[site]
        assert len(weights) == 3 and abs(sum(weights) - 1) < 1e-6
        assert max(weights) - min(weights) > 1e-4  # the mix weights were trained
    assert outcome.log[0]["layer_weights"].keys() == {"input", "output"}


def _first_step_grads(spec: RunSpec, work: Path, w: torch.Tensor) -> tuple[torch.Tensor, Injector]:
    run = set_up(resolve(spec), opts(work))
    injector = next(m for m in run.model.modules() if isinstance(m, Injector))
    with torch.no_grad():
        for mix in injector.mixes.values():
            if mix.weights.requires_grad:
                mix.weights.copy_(w)
    batch = run.recipe.collate(run.splits["train"][:8], run.represent)
    torch.manual_seed(0)
    runner._train_batch(run, runner.LoopState(lr=1e-3), batch)
    mix = injector.mixes["input"]
    grad = mix.weights.grad.clone() if mix.weights.grad is not None else torch.zeros(3)
    return grad, injector


def test_lambda_adds_exactly_2_lambda_w_to_the_mix_gradient(toy: object, tmp_path: Path) -> None:
    w = torch.tensor([0.3, -0.2, 0.5])
    base = toy_spec(representation="elmo", sites=("input",), dropout=0.5)
    g0, _ = _first_step_grads(dataclasses.replace(base, mix=MixSpec("all", 0.0)), tmp_path / "a", w)
    lam = 0.25
    g1, _ = _first_step_grads(dataclasses.replace(base, mix=MixSpec("all", lam)), tmp_path / "b", w)
    assert g0.abs().sum() > 0
    torch.testing.assert_close(g1 - g0, 2 * lam * w, rtol=0, atol=1e-6)


def test_last_only_freezes_the_mix_weights(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(representation="elmo", sites=("input",), mix=MixSpec("last"), dropout=0.5)
    outcome = train(dataclasses.replace(spec, overrides=("train.epochs=1",)), opts(tmp_path))
    assert outcome.layer_weights["input"] == [0.0, 0.0, 1.0]
    run = set_up(resolve(spec), opts(tmp_path / "again"))
    mix = next(m for m in run.model.modules() if isinstance(m, Injector)).mixes["input"]
    assert not mix.weights.requires_grad and mix.gamma.requires_grad


def test_plateau_schedule_lowers_the_learning_rate(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(
        overrides=(
            "train.epochs=6",
            "train.optimizer.lr=0.00001",  # too small to improve: every evaluation is a plateau
            "train.schedule.kind=plateau",
            "train.schedule.patience=1",
            "train.schedule.factor=0.5",
        )
    )
    log = train(spec, opts(tmp_path)).log
    lrs = [r["lr"] for r in log]
    assert lrs[0] == pytest.approx(1e-5) and lrs[-1] < lrs[0]


def test_early_stopping_and_limit(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(
        limit=20, overrides=("train.epochs=8", "train.patience=1", "train.optimizer.lr=0.00001")
    )
    outcome = train(spec, opts(tmp_path))
    assert outcome.counts == {"train": 20, "dev": 20}
    assert outcome.epochs_run < 8


def test_non_finite_losses_stop_the_run(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.experiments import toy_task

    real = toy_task.ToyModel.forward

    def nan_forward(self, batch):  # type: ignore[no-untyped-def]
        out = real(self, batch)
        return toy_task.ToyOutput(out.loss * float("nan"), out.predictions)

    monkeypatch.setattr(toy_task.ToyModel, "forward", nan_forward)
    with pytest.raises(FloatingPointError, match="non-finite"):
        train(toy_spec(), opts(tmp_path))


@pytest.mark.usefixtures("cpu_bf16")
def test_device_and_precision_are_checked_and_recorded(toy: object, tmp_path: Path) -> None:
    from bilm.devices import DeviceError

    with pytest.raises(DeviceError):
        train(toy_spec(), opts(tmp_path, device="cuda:7"))
    with pytest.raises(DeviceError, match="fp16"):
        train(toy_spec(), opts(tmp_path, device="cpu", precision="fp16"))
    spec = toy_spec(overrides=("train.epochs=1",))
    before = torch.get_num_threads()
    try:
        outcome = train(spec, opts(tmp_path / "bf16", device="cpu", precision="bf16", threads=1))
        assert outcome.device == "cpu, 1 thread, bf16"  # the thread count shapes CPU results
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads"):
        train(spec, opts(tmp_path / "bad", device="cpu", threads=0))
    record = runner.run_spec(spec, opts(tmp_path / "fp32", device="cpu"))
    assert record.provenance.device.startswith("cpu, ")
    assert "predictions-dev.txt" in record.attachments


def test_missing_test_split_is_a_clear_error(tmp_path: Path) -> None:
    spec = RunSpec(
        task="squad",
        task_version=SQUAD_VERSION,
        representation="none",
        sites=(),
        dropout=0.0,
        eval_splits=("dev", "test"),
        limit=8,
        overrides=("word_vectors=random:4", "hidden=4", "char_filters=4"),
    )
    with pytest.raises(ValueError, match="no test split.*hidden"):
        train(spec, opts(tmp_path))


def test_cli_run_sweep_reproduce_render_on_the_toy_task(
    toy: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = cli_dirs(tmp_path)
    assert main(["run", "toy", "--repr", "none", "--seeds", "0", *common]) == 0
    first = capsys.readouterr()
    assert "done" in first.err and '"dev_accuracy"' in first.out
    assert main(["run", "toy", "--repr", "none", "--seeds", "0", *common]) == 0
    assert "stored" in capsys.readouterr().err
    sweep = [
        "sweep",
        "toy",
        "--repr",
        "elmo",
        "--lam",
        "0,1",
        "--sites",
        "input,input+output",
        "--seeds",
        "0",
        "--set",
        "train.epochs=1",
        *common,
    ]
    assert main(sweep) == 0
    out = capsys.readouterr()
    assert out.err.count(" done ") == 4
    assert "elmo λ=1 input+output" in out.out and "elmo λ=0 input" in out.out
    assert main(["reproduce", "toy_elmo", "--seeds", "0", "--set", "train.epochs=1", *common]) == 0
    table = capsys.readouterr().out
    assert "Toy (Acc.) — DEMO data" in table and "(dev; preset mini)" in table
    assert "(p=" in table and "paired bootstrap" in table  # units-dev.json of both runs
    assert "Sample efficiency (Toy): ELMo first reached" in table
    assert (
        main(
            [
                "render",
                "toy_elmo",
                "--seeds",
                "0",
                "--set",
                "train.epochs=1",
                "--store",
                str(tmp_path / "store"),
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == table
    # --seeds and --set: not the standard request, so the name carries its hash (docs/runs.md)
    (written,) = (tmp_path / "r" / "tables").glob("toy_elmo-mini-demo-*-table1.md")
    assert written.read_text() + "\n" == table
    stored = ResultsStore(tmp_path / "store").records("toy")
    # run: 1 baseline; sweep: 4 points; toy_elmo: its baseline (its ELMo run is a sweep point)
    assert len(stored) == 6


def test_wandb_gets_one_offline_run_per_training_run(
    toy: object, tmp_path: Path, offline_env: Path
) -> None:
    from experiments.run.wandb_sink import WandbOptions

    spec = toy_spec(
        representation="elmo",
        sites=("input",),
        mix=MixSpec("all", 0.001),
        dropout=0.5,
        overrides=("train.epochs=2",),
    )
    wandb = WandbOptions(project="elmo-bench", group="g1", directory=str(tmp_path / "wb"))
    outcome = train(spec, opts(tmp_path / "w", wandb=wandb))
    (folder,) = (tmp_path / "wb" / "wandb").glob("offline-run-*")
    run = decode_run(folder)
    assert run["run"]["name"] == spec.run_id and run["run"]["group"] == "g1"
    assert run["config"]["task"] == "toy" and run["config"]["mix"]["lam"] == 0.001
    assert run["config"]["train_config"]["epochs"] == 2
    rows = [r for r in run["history"].values() if "dev_accuracy" in r]
    assert [r["dev_accuracy"] for r in rows] == [r["dev_accuracy"] for r in outcome.log]
    assert all("lr" in r and "mix/input/s_2" in r and "mix/input/gamma" in r for r in rows)
    assert run["summary"]["dev_accuracy"] == outcome.metrics["dev_accuracy"]


def test_finetune_bilm_tunes_on_the_task_text_then_freezes_it(toy: object, tmp_path: Path) -> None:
    from tests.contract.helpers import write_tiny_checkpoint

    tiny = write_tiny_checkpoint(tmp_path)
    spec = toy_spec(
        representation="elmo",
        representation_config={"checkpoint": str(tiny), "finetune": True},
        sites=("input",),
        dropout=0.5,
        overrides=("train.epochs=1",),
    )
    outcome = train(spec, opts(tmp_path / "w"))
    ppl = outcome.finetune_ppl
    assert ppl["bilm_ppl_after"] < ppl["bilm_ppl_before"]
    record = runner.run_spec(spec, opts(tmp_path / "again"))  # the tuned biLM is reused
    assert record.metrics["bilm_ppl_after"] == ppl["bilm_ppl_after"]
    assert outcome.representation_fingerprint == record.provenance.representation_fingerprint


def test_a_checkpoint_of_another_configuration_is_not_resumed(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A preset changed without a version bump keeps the run id: its old checkpoint must not be
    resumed under the new configuration."""
    from tests.experiments import toy_task

    spec = toy_spec(overrides=("train.epochs=3",))
    train(spec, opts(tmp_path / "w"), stop_after_evals=1)
    real = toy_task.apply_overrides
    monkeypatch.setattr(toy_task, "apply_overrides", lambda c, o: real(c, [*o, "dim=4"]))
    resumed = train(spec, opts(tmp_path / "w"))
    fresh = train(spec, opts(tmp_path / "fresh"))
    assert "another configuration" in caplog.text
    assert strip(resumed.log) == strip(fresh.log) and len(fresh.log) == 3


def test_a_resumed_run_counts_the_wall_time_of_its_earlier_sittings(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's ``wall_s`` (``TrainOutcome.seconds``) and each log line's ``seconds`` run
    on from the checkpoint: a run stopped and resumed does not report only its last part."""
    spec = toy_spec(overrides=("train.epochs=3",))
    real = runner._train_batch

    def slow(run: object, state: runner.LoopState, batch: object) -> None:
        time.sleep(0.05)
        real(run, state, batch)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "_train_batch", slow)
    first = train(spec, opts(tmp_path / "w"), stop_after_evals=1)
    monkeypatch.setattr(runner, "_train_batch", real)
    saved = torch.load(tmp_path / "w" / "toy" / spec.run_id / "checkpoint.pt", weights_only=True)
    before = json.loads(saved["state"])["wall_s"]
    assert before >= 0.05 * first.log[0]["step"]  # the slow batches up to the checkpoint
    resumed = train(spec, opts(tmp_path / "w"))
    seconds = [line["seconds"] for line in resumed.log]
    assert seconds[0] == first.log[0]["seconds"] and seconds == sorted(seconds)
    assert resumed.seconds > seconds[-1] > before


def test_a_carry_run_resumes_exactly(
    toy: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The biLM's carried LSTM state is in the checkpoint: a carry run stopped after its first
    evaluation and resumed ends with the uninterrupted run's losses and metrics, to the bit (its
    state went on from where it was, not from zero). A checkpoint without the state (written
    before it was kept) is not resumed: the run starts afresh and still ends identical."""
    from experiments.run.checkpoint import CHECKPOINT
    from tests.contract.helpers import write_tiny_checkpoint

    tiny = write_tiny_checkpoint(tmp_path)
    spec = toy_spec(
        representation="elmo",
        representation_config={"checkpoint": str(tiny)},
        sites=("input",),
        state="carry",
        overrides=("train.epochs=3",),
    )
    whole = train(spec, opts(tmp_path / "whole"))
    train(spec, opts(tmp_path / "stopped"), stop_after_evals=1)
    saved = torch.load(
        tmp_path / "stopped" / spec.task / spec.run_id / CHECKPOINT, weights_only=True
    )
    assert set(saved["carried"]) == {"h", "c"}  # (layers, 2, rows, width)
    capsys.readouterr()
    resumed = train(spec, opts(tmp_path / "stopped"))
    assert "resumed from its checkpoint after epoch 1/3" in capsys.readouterr().err  # says so
    assert [r["train_loss"] for r in resumed.log] == [r["train_loss"] for r in whole.log]
    assert resumed.metrics == whole.metrics
    # an older checkpoint: no carried state in it
    train(spec, opts(tmp_path / "old"), stop_after_evals=1)
    path = tmp_path / "old" / spec.task / spec.run_id / CHECKPOINT
    payload = torch.load(path, weights_only=True)
    del payload["carried"]
    torch.save(payload, path)
    again = train(spec, opts(tmp_path / "old"))
    assert [r["train_loss"] for r in again.log] == [r["train_loss"] for r in whole.log]
    assert again.metrics == whole.metrics


def test_eval_lines_report_each_evaluation(
    toy: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs in worker processes report one stderr line per evaluation instead of bars."""
    spec = toy_spec(overrides=("train.epochs=2",))
    train(spec, opts(tmp_path, eval_lines=True))
    lines = [line for line in capsys.readouterr().err.splitlines() if spec.run_id in line]
    assert [line.split(" epoch ")[1].split(":")[0] for line in lines] == ["1/2", "2/2"]
    assert all("best" in line for line in lines)


def test_off_a_terminal_training_prints_a_line_about_every_minute(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Between evaluations a run off a terminal is never silent for long: a line (batches done,
    running loss, seconds) once :data:`experiments.run.progress.LINE_EVERY_S` has passed (here a
    clock that moves 25 s a batch: a line every third batch)."""
    from experiments.run import progress

    ticks = iter(range(0, 100_000, 25))
    monkeypatch.setattr(progress, "now", lambda: float(next(ticks)))
    spec = toy_spec(overrides=("train.epochs=1",))
    train(spec, opts(tmp_path, eval_lines=True))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "batch " in line and spec.run_id in line]
    batches = math.ceil(160 / 16)  # the toy's training examples and batch size
    assert len(lines) == batches // 3, err
    assert lines[0].split(": ")[1].startswith("batch 3/10, loss ") and lines[0].endswith("75 s")
    bar = progress.LineBar("r", 0, 1, 0, 5, every=60.0, clock=iter([0.0, 59.0, 61.0]).__next__)
    bar.update()  # 59 s: nothing yet
    bar.update()  # 61 s: a line
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("eval_lines", [False, True])
def test_improving_evaluations_never_count_against_patience(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, eval_lines: bool
) -> None:
    """Patience 1 with a dev score that rises at every evaluation runs every epoch; one that
    falls stops after one bad evaluation. (A misplaced ``else`` once counted improvements as
    bad evaluations whenever per-evaluation lines were off.)"""
    real_score = scoring.score
    for values, epochs_run in (([0.1, 0.2, 0.3, 0.4], 4), ([0.4, 0.3, 0.2, 0.1], 2)):
        scores = iter(values)

        def rising(run: object, split: str, scores: object = scores) -> tuple[dict, object]:
            metrics, predictions = real_score(run, split)  # type: ignore[arg-type]
            if split == "dev":  # the final scoring after the last evaluation keeps the real one
                try:
                    metrics = {**metrics, "accuracy": next(scores)}  # type: ignore[call-overload]
                except StopIteration:
                    pass
            return metrics, predictions

        monkeypatch.setattr(scoring, "score", rising)
        spec = toy_spec(overrides=("train.epochs=4", "train.patience=1"), seed=len(values))
        work = tmp_path / f"{values[0]}-{eval_lines}"
        outcome = train(spec, opts(work, eval_lines=eval_lines))
        assert outcome.epochs_run == epochs_run, values


def test_training_subsets_are_nested_ordered_and_seed_independent() -> None:
    from experiments.run.setup import training_subset

    examples = list(range(1000))
    small, large = training_subset(examples, 0.01), training_subset(examples, 0.1)
    assert len(small) == 10 and len(large) == 100 and set(small) <= set(large)
    assert small == sorted(small) and training_subset(examples, 0.01) == small
    assert training_subset(examples, 0.0001) == [training_subset(examples, 0.001)[0]]
    assert training_subset(examples, 1.0) == examples


def test_epoch_units_store_each_evaluations_dev_statistics(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(max_epochs=3)
    plain = train(spec, opts(tmp_path / "a"))
    with_units = train(spec, opts(tmp_path / "b", epoch_units=True))
    assert strip(plain.log) == [
        {k: v for k, v in r.items() if k != "units_file"} for r in strip(with_units.log)
    ]
    assert plain.metrics == with_units.metrics  # the statistics change no number
    assert all("units_file" not in r for r in plain.log)
    for record in with_units.log:
        assert record["train_cpu_s"] > 0 and record["peak_rss_mb"] > 0
        path = with_units.predictions[record["units_file"]]
        data = json.loads(path.read_text())
        correct = sum(row[0] for row in data["rows"])
        # accuracy rows are (correct, 1): their mean is the evaluation's dev accuracy
        assert correct / len(data["rows"]) == pytest.approx(record["dev_accuracy"])
    assert len({r["units_file"] for r in with_units.log}) == len(with_units.log)


def test_a_work_folder_another_process_trains_in_is_refused(toy: object, tmp_path: Path) -> None:
    """Two commands with their own stores but one work root must not train one run in one
    folder (each would resume from and overwrite the other's checkpoint)."""
    from experiments.run.checkpoint import WORK_LOCK, WorkFolderBusy
    from experiments.run.store import lock_file

    spec = toy_spec(overrides=("train.epochs=1",))
    other = lock_file(tmp_path / "w" / "toy" / spec.run_id / WORK_LOCK, blocking=False)
    assert other is not None  # the other process's hold (a second open file description)
    with pytest.raises(WorkFolderBusy, match=f"run {spec.run_id} is being trained by another"):
        train(spec, opts(tmp_path / "w"))
    assert not (tmp_path / "w" / "toy" / spec.run_id / "checkpoint.pt").exists()
    other.close()
    first = train(spec, opts(tmp_path / "w"))  # released: trains, and releases in turn
    again = train(spec, opts(tmp_path / "w", fresh=True))
    assert strip(again.log) == strip(first.log)


def test_a_record_names_the_commit_its_run_started_from(
    toy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout that moves on while a run trains (records committed between runs) must not
    lend the record its later commit: both commit fields are read before training."""
    from experiments.run import store

    states = iter([("a" * 40, False)])
    monkeypatch.setattr(store, "git_state", lambda repo: next(states, ("b" * 40, True)))
    record = runner.run_spec(toy_spec(overrides=("train.epochs=1",)), opts(tmp_path / "w"))
    assert (record.provenance.git_sha, record.provenance.git_dirty) == ("a" * 40, False)
    assert (record.provenance.code["git_sha"], record.provenance.code["git_dirty"]) == (
        "a" * 40,
        False,
    )
