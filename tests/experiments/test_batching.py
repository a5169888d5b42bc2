"""Training batches with ``TrainConfig.bucket_noise`` (allennlp's bucket sampler with
``padding_noise``): membership re-drawn every epoch, deterministic per seed and epoch, today's
plan at noise 0, evaluation batches untouched, and an exact resume after ``kill -9`` mid-epoch."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import torch

from experiments.run.runner import RunOptions, epoch_seed, train
from experiments.run.spec import RunSpec
from tasks.core import Batching, TrainConfig, batch_plan
from tests.conftest import REPO
from tests.experiments.helpers import without_timings
from tests.experiments.toy_task import SCHEDULED, registered

NOISY = (*SCHEDULED, "train.bucket_noise=0.2")


def sorted_plan(sizes: Sequence[int], config: TrainConfig, seed: int | None) -> list[list[int]]:
    """The plan before ``bucket_noise`` existed, step by step: stable sort by size, cut, and
    ``random.Random(seed).shuffle`` of the batches."""
    if config.batching == "document":
        chunks = [[i] for i in range(len(sizes))]
    else:
        order = sorted(range(len(sizes)), key=lambda i: sizes[i])
        chunks = []
        if config.batching == "examples":
            for start in range(0, len(order), config.batch_size):
                chunks.append(order[start : start + config.batch_size])
        else:
            current: list[int] = []
            for i in order:
                longest = max([sizes[j] for j in current] + [sizes[i]])
                if current and longest * (len(current) + 1) > config.batch_size:
                    chunks.append(current)
                    current = []
                current.append(i)
            if current:
                chunks.append(current)
    if seed is not None:
        random.Random(seed).shuffle(chunks)
    return chunks


def sizes_of(n: int = 400, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(1, 60) for _ in range(n)]


def config(batching: Batching, noise: float = 0.0) -> TrainConfig:
    budget = 200 if batching == "tokens" else 16
    return TrainConfig(batching=batching, batch_size=budget, bucket_noise=noise)


def membership(plan: list[list[int]]) -> set[frozenset[int]]:
    return {frozenset(batch) for batch in plan}


@pytest.mark.parametrize("batching", ["examples", "tokens", "document"])
@pytest.mark.parametrize("seed", [None, 0, 30_021])
def test_noise_zero_is_the_plan_of_before(batching: Batching, seed: int | None) -> None:
    sizes = sizes_of()
    assert batch_plan(sizes, config(batching), seed) == sorted_plan(sizes, config(batching), seed)


@pytest.mark.parametrize("batching", ["examples", "tokens"])
def test_noise_redraws_membership_every_epoch_and_is_deterministic(batching: Batching) -> None:
    sizes, noisy = sizes_of(), config(batching, 0.1)
    epochs = [batch_plan(sizes, noisy, epoch_seed(3, epoch)) for epoch in range(3)]
    assert membership(epochs[0]) != membership(epochs[1]) != membership(epochs[2])
    assert epochs[1] == batch_plan(sizes, noisy, epoch_seed(3, 1))  # same seed and epoch
    assert membership(epochs[0]) != membership(batch_plan(sizes, noisy, epoch_seed(4, 0)))
    plain = [batch_plan(sizes, config(batching), epoch_seed(3, epoch)) for epoch in range(2)]
    assert membership(plain[0]) == membership(plain[1])  # without noise only the order changes
    for plan in epochs:
        assert sorted(i for batch in plan for i in batch) == list(range(len(sizes)))


def test_noisy_batches_keep_the_budget_and_similar_sizes() -> None:
    sizes, noise = sizes_of(), 0.1
    tokens = batch_plan(sizes, config("tokens", noise), 7)
    assert all(max(sizes[i] for i in b) * len(b) <= 200 or len(b) == 1 for b in tokens)
    examples = batch_plan(sizes, config("examples", noise), 7)
    assert sorted(len(b) for b in examples)[1:] == [16] * (len(examples) - 1)
    spread = [max(sizes[i] for i in b) - min(sizes[i] for i in b) for b in examples]
    assert sum(spread) / len(spread) < 0.25 * 60  # still buckets (random batches: about 50)


def test_evaluation_batches_and_documents_ignore_the_noise() -> None:
    sizes = sizes_of()
    batchings: tuple[Batching, ...] = ("examples", "tokens", "document")
    for batching in batchings:
        noisy, plain = config(batching, 0.3), config(batching)
        assert batch_plan(sizes, noisy, None) == batch_plan(sizes, plain, None)
    assert batch_plan(sizes, config("document", 0.3), 5) == batch_plan(sizes, config("document"), 5)


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[object]:
    with registered(tmp_path / "toy-demo") as task:
        yield task


def toy_spec(overrides: tuple[str, ...]) -> RunSpec:
    return RunSpec(
        task="toy",
        task_version=1,
        representation="none",
        sites=(),
        dropout=0.0,
        seed=3,
        overrides=overrides,
    )


strip = without_timings


def opts(work: Path) -> RunOptions:
    return RunOptions(work_root=work, progress=False)


def test_a_noisy_run_killed_mid_epoch_resumes_exactly(toy: object, tmp_path: Path) -> None:
    spec = toy_spec(NOISY)
    reference = train(spec, opts(tmp_path / "ref"))
    plain = train(toy_spec(SCHEDULED), opts(tmp_path / "plain"))
    assert strip(reference.log) != strip(plain.log)  # the noise reached the loop
    child = f"""
import os, signal, torch
torch.set_num_threads({torch.get_num_threads()})
from pathlib import Path
from experiments.run import runner
from experiments.run.spec import RunSpec
from tests.experiments.toy_task import registered
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
                   seed=3, overrides={NOISY!r})
    runner.train(spec, runner.RunOptions(work_root=Path({str(tmp_path / "k")!r}), progress=False))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    saved = torch.load(tmp_path / "k" / "toy" / spec.run_id / "checkpoint.pt", weights_only=True)
    state = json.loads(saved["state"])
    assert state["step"] == 14 and state["epoch"] == 1 and state["batch"] > 0  # mid-epoch 2
    resumed = train(spec, opts(tmp_path / "k"))
    assert strip(resumed.log) == strip(reference.log)
    assert resumed.metrics == reference.metrics


def test_shuffled_batches_are_random_every_epoch_and_sorted_for_evaluation() -> None:
    rng = random.Random(1)
    sizes = [rng.randint(1, 60) for _ in range(100)]
    config = TrainConfig(batching="shuffled", batch_size=16)
    first, second = batch_plan(sizes, config, 0), batch_plan(sizes, config, 1)
    for plan in (first, second):
        assert sorted(i for batch in plan for i in batch) == list(range(100))
        assert [len(b) for b in plan] == [16] * 6 + [4]
    assert first != second and first == batch_plan(sizes, config, 0)
    # random membership: the batches are not length buckets (their size ranges overlap)
    assert max(max(sizes[i] for i in b) - min(sizes[i] for i in b) for b in first) > 30
    examples = TrainConfig(batching="examples", batch_size=16)
    assert batch_plan(sizes, config, None) == batch_plan(sizes, examples, None)
