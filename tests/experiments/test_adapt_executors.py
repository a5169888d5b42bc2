"""Adapted runs (``tasks.representations.adapt``) through the other ways of running: a LoRA run
trained in a job of submitit's local cluster (``executor="slurm"``: the spec pickled to the job,
the adapted biLM built there) is stored by the driver with the same numbers as the same run
trained in this process, and a fine-tuned run reports to an offline W&B run with its mode in the
configuration and its costs in the summary. (Ray is not installed in the dev environment; its
executor runs the same ``run_one`` as these.)"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest

from experiments.run.executors import run_sweep
from experiments.run.runner import RunOptions, run_spec, train
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore
from tasks.registry import get_task
from tests.experiments.helpers import without_timings
from tests.experiments.test_executor_slurm import local_cluster, needs_submitit
from tests.experiments.test_wandb_sink import decode_run

pytest.importorskip("peft")

NER = get_task("ner")
TINY = ("word_vectors=random:4", "hidden=[8,8]", "char_filters=4")


def _spec(mode: str) -> RunSpec:
    return RunSpec(
        task="ner",
        task_version=NER.version,
        representation="elmo",
        representation_config={"adapt": mode, "adapt_warmup": 0},
        limit=20,
        max_epochs=1,
        overrides=TINY,
    )


@needs_submitit
def test_a_lora_run_trains_in_a_slurm_job_as_it_does_here(tmp_path: Path) -> None:
    spec = _spec("lora")
    options = RunOptions(work_root=tmp_path / "work", progress=False, threads=1)
    run_one = functools.partial(run_spec, options=options)
    store = ResultsStore(tmp_path / "store")
    result = run_sweep([spec], run_one, store, "slurm", slurm=local_cluster(tmp_path))
    assert result.ran == (spec.run_id,)
    stored = store.get(spec.run_id)
    here = run_spec(spec, dataclasses.replace(options, work_root=tmp_path / "here"))
    assert stored.metrics == here.metrics
    assert without_timings(stored.log) == without_timings(here.log)
    trained = stored.timings["representation_trainable_params"]
    assert 0 < trained == here.timings["representation_trainable_params"]


def test_a_finetuned_run_reports_its_mode_and_costs_to_wandb(
    tmp_path: Path, offline_env: Path
) -> None:
    from experiments.run.wandb_sink import WandbOptions

    spec = _spec("finetune")
    wandb = WandbOptions(project="elmo-bench", group="adapt", directory=str(tmp_path / "wb"))
    options = RunOptions(work_root=tmp_path / "w", progress=False, threads=1, wandb=wandb)
    outcome = train(spec, options)
    (folder,) = (tmp_path / "wb" / "wandb").glob("offline-run-*")
    run = decode_run(folder)
    assert run["run"]["name"] == spec.run_id
    assert run["config"]["representation_config"] == {"adapt": "finetune", "adapt_warmup": 0}
    rows = [r for r in run["history"].values() if "dev_f1" in r]
    assert [r["dev_f1"] for r in rows] == [r["dev_f1"] for r in outcome.log]
    trained = outcome.costs["representation_trainable_params"]
    assert trained > 0 and run["summary"]["representation_trainable_params"] == trained
