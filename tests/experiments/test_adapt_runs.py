"""Adapted runs through the one loop (``tasks.representations.adapt``): the mode and its options
are part of a run's identity (``frozen`` is the configuration without them), each mode learns
NER's DEMO set, a fine-tuned or LoRA run's record holds its costs, ``predict`` rebuilds the
adapted representation from the spec and the run's checkpoint and writes the run's own dev
predictions again, and ``run --spec`` replays the run to the same numbers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from experiments.cli import main
from experiments.run.runner import train
from experiments.run.setup import RunOptions
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore
from tasks.registry import get_task
from tests.contract.test_tasks import case_of, untrained_score

pytest.importorskip("peft")

NER = get_task("ner")
TINY = ["word_vectors=random:4", "hidden=[8,8]", "char_filters=4"]


def _spec(**config: object) -> RunSpec:
    return RunSpec(
        task="ner", task_version=NER.version, representation="elmo", representation_config=config
    )


def test_the_mode_and_its_options_are_the_runs_identity() -> None:
    ids = {
        _spec().run_id,
        _spec(adapt="finetune").run_id,
        _spec(adapt="lora").run_id,
        _spec(adapt="lora", lora_rank=4).run_id,
        _spec(directions="forward").run_id,
    }
    assert len(ids) == 5
    assert _spec(adapt="frozen").run_id == _spec().run_id  # frozen runs are what they were
    assert _spec(adapt="frozen").representation_config == {}
    with pytest.raises(ValueError, match="lora_rank needs adapt=lora"):
        _spec(adapt="finetune", lora_rank=4)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["frozen", "finetune", "lora"])
def test_each_mode_learns_ner(mode: str, tmp_path: Path) -> None:
    """NER's contract learning run (400 DEMO sentences, 4 epochs) with the shipped biLM at the
    input in each mode: the loss falls and dev F1 beats the untrained model, and the run's
    record says how many of its parameters trained (slow: 1.5–2.5 minutes a mode on one
    AMD EPYC thread with the live biLM)."""
    case = case_of(NER)
    learning = case.learning
    config = {} if mode == "frozen" else {"adapt": mode, "adapt_warmup": 0}
    spec = RunSpec(
        task="ner",
        task_version=NER.version,
        representation="elmo",
        representation_config=config,
        limit=learning.limit,
        overrides=learning.overrides,
    )
    threads = torch.get_num_threads()
    try:
        options = RunOptions(work_root=tmp_path, progress=False, threads=1)
        outcome = train(spec, options)
    finally:
        torch.set_num_threads(threads)
    losses = [float(line["train_loss"]) for line in outcome.log]
    assert losses[-1] < (learning.loss_ratio or 1.0) * losses[0], losses
    recipe = NER.setup(NER.presets[0], (*learning.overrides, *case.tiny), None)
    required = learning.factor * untrained_score(NER, recipe, learning.limit) + learning.margin
    assert outcome.metrics["dev_f1"] > required
    represented = outcome.costs["representation_trainable_params"]
    assert (represented > 0) == (mode != "frozen")
    assert outcome.costs["trainable_params"] > represented
    assert outcome.costs["train_cpu_s_per_epoch"] > 0 and outcome.costs["peak_rss_mb"] > 0


@pytest.mark.parametrize("mode", ["finetune", "lora"])
def test_predict_rebuilds_an_adapted_run(mode: str, tmp_path: Path) -> None:
    dirs = ["--store", str(tmp_path / "store"), "--work", str(tmp_path / "work")]
    dirs += ["--cache", str(tmp_path / "cache"), "--quiet"]
    argv = ["run", "ner", "--repr", "elmo", "--repr-set", f"adapt={mode}", "adapt_warmup=0"]
    assert main([*argv, "--limit", "20", "--max-epochs", "1", "--set", *TINY, *dirs]) == 0
    (run_id,) = ResultsStore(tmp_path / "store").run_ids("ner")
    record = ResultsStore(tmp_path / "store").get(run_id)
    assert record.spec.representation_config == {"adapt": mode, "adapt_warmup": 0}
    assert record.timings["representation_trainable_params"] > 0
    dev = (NER.demo() / "eng.testa").read_text(encoding="utf-8").split("\n\n")
    source = tmp_path / "first.conll"
    source.write_text("\n\n".join(dev[: 20 + 1]) + "\n")  # -DOCSTART- and the first 20
    out = tmp_path / "predicted.txt"
    assert main(["predict", run_id, "--input", str(source), "--out", str(out), *dirs[:6]]) == 0
    written = (tmp_path / "store" / "ner" / run_id / "predictions-dev.txt").read_text()
    assert out.read_text() == written
    # replayed from its spec into another store: the same run, the same numbers
    spec = tmp_path / "store" / "ner" / run_id / "spec.json"
    again = ["--store", str(tmp_path / "again"), "--work", str(tmp_path / "work2"), "--quiet"]
    assert main(["run", "--spec", str(spec), *again]) == 0
    assert dict(ResultsStore(tmp_path / "again").get(run_id).metrics) == dict(record.metrics)
