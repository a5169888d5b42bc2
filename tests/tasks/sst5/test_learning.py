"""The ``mini`` BCN on ELMo features learns on every seed (issue #24: a BCN + ELMo run on real
sentence polarity once stayed at 50.0 on one seed of three, never learning).

DEMO data (CI runs it), the shipped small biLM at the task's mini sites (input and integrator
output, ELMo dropout 0.5), the first 4,000 training phrases, three epochs, one CPU thread; about
15 s per seed, hence ``slow``. Every seed must beat the majority class (20 %: the DEMO dev roots
are balanced over five labels) clearly, predict more than one label, be judged healthy by
:mod:`experiments.health`, and lower its training loss.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from experiments.named import base_spec
from experiments.runner import RunOptions, train

SEEDS = (0, 1, 2)
MAJORITY = 0.2  # five balanced labels on the DEMO dev roots


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_mini_bcn_on_elmo_learns_on_every_seed(seed: int, tmp_path: Path) -> None:
    spec = dataclasses.replace(
        base_spec("sst5", "mini", "demo", {}, ()), seed=seed, limit=4000, max_epochs=3
    )
    assert spec.representation == "elmo" and spec.sites == ("input", "output")
    threads = torch.get_num_threads()
    try:
        outcome = train(
            spec,
            RunOptions(
                work_root=tmp_path / "work", cache_dir=tmp_path / "cache", progress=False, threads=1
            ),
        )
    finally:
        torch.set_num_threads(threads)
    assert not outcome.health.dead, outcome.health.reasons
    assert outcome.metrics["dev_accuracy"] > MAJORITY + 0.08, outcome.log
    selected = next(r for r in outcome.log if r["step"] == outcome.best_step)
    assert selected["dev_prediction_values"] > 1
    assert outcome.log[-1]["train_loss"] < outcome.log[0]["train_loss"]
    assert all(r["grad_norm_mean"] > 0 for r in outcome.log)
