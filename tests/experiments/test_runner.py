"""The one training loop: determinism, exact resume after kill -9, NaN guard, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from experiments.__main__ import main
from experiments.runner import train_run
from tasks.common.inject import MixSpec
from tasks.registry import get_task
from tests.conftest import REPO

TINY = [
    "limit=40",
    "word_vectors=random:8",
    "hidden=6",
    "char_filters=6",
    "epochs=3",
    "patience=5",
    "batch_size=8",
]


def run(work: Path, **kw: object) -> object:
    return train_run(
        get_task("squad"),
        config="mini",
        overrides=TINY,
        representation="none",
        representation_config={},
        sites=frozenset(),
        mix=MixSpec(),
        dropout=0.0,
        seed=3,
        work_dir=work,
        progress=False,
        **kw,  # type: ignore[arg-type]
    )


def strip(log: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in log]


def test_same_seed_same_result_and_resume_is_exact(tmp_path: Path) -> None:
    a = run(tmp_path / "a")
    b = run(tmp_path / "b")
    assert a.metrics == b.metrics and strip(a.log) == strip(b.log)  # type: ignore[attr-defined]
    run(tmp_path / "c", stop_after_epochs=1)
    c = run(tmp_path / "c")
    assert strip(c.log) == strip(a.log)  # type: ignore[attr-defined]
    assert c.metrics == a.metrics  # type: ignore[attr-defined]


KILLER = """
import os, signal, sys, torch
torch.set_num_threads(int(sys.argv[3]))  # as the parent: float sums depend on the thread count
from experiments import runner
from tasks.common.inject import MixSpec
from tasks.registry import get_task
steps = {"n": 0}
kill_at = int(sys.argv[2])
real_step = torch.optim.Adam.step
def step(self, *a, **k):
    steps["n"] += 1
    if steps["n"] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_step(self, *a, **k)
torch.optim.Adam.step = step
TINY = %r
runner.train_run(get_task("squad"), config="mini", overrides=TINY, representation="none",
    representation_config={}, sites=frozenset(), mix=MixSpec(), dropout=0.0, seed=3,
    work_dir=sys.argv[1], progress=False)
""".replace("%r", repr(TINY))


def test_kill_9_mid_epoch_then_resume(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    reference = run(tmp_path / "ref")
    # 40 examples / batch 8 = 5 steps per epoch: step 8 is inside epoch 2
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(tmp_path / "k"), "8", str(torch.get_num_threads())],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    saved = torch.load(tmp_path / "k" / "checkpoint.pt", weights_only=True)
    assert json.loads(saved["state"])["epoch"] == 1
    resumed = run(tmp_path / "k")
    assert strip(resumed.log) == strip(reference.log)  # type: ignore[attr-defined]
    assert resumed.metrics == reference.metrics  # type: ignore[attr-defined]


def test_non_finite_losses_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.squad import model as squad_model

    real = squad_model.BiDAFSelfAttention.forward

    def nan_forward(self, batch):  # type: ignore[no-untyped-def]
        out = real(self, batch)
        return squad_model.SquadOutput(
            out.loss * float("nan"), out.spans, out.start_logits, out.end_logits
        )

    monkeypatch.setattr(squad_model.BiDAFSelfAttention, "forward", nan_forward)
    with pytest.raises(FloatingPointError, match="non-finite"):
        run(tmp_path / "nan")


def test_cli_run_stores_and_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "run",
        "squad",
        "--repr",
        "none",
        "--seeds",
        "0",
        "--store",
        str(tmp_path / "s"),
        "--quiet",
        "--set",
        *[t for t in TINY if not t.startswith("epochs=")],
        "epochs=1",
    ]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "1 ran" in first.err and '"f1"' in first.out
    assert main(args) == 0
    assert "1 already stored" in capsys.readouterr().err
