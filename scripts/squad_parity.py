"""The SQuAD weight-transplant check: one trained ``dialog_qa`` run's weights in the project's
model with every ``dialog_qa`` choice, the same batch on both sides (:mod:`tasks.squad.parity`).

    python scripts/squad_parity.py runs/peer/squad/peer/RUN/run/model --epoch 10
    python scripts/squad_parity.py RUN_DIR --epoch init --paragraphs 8

``RUN_DIR`` is the serialization folder of an allennlp run of ``nox -s peer -- --task squad``
(``runs/peer/squad/peer/<key>/run/model``; it keeps every epoch's weights). The peer side
(``experiments/peer/allennlp_side/peer_qa_dump.py``) runs in the peer's venv
(``python -m experiments.peer.venv`` builds it) on the first ``--paragraphs`` training
paragraphs of the run's own data file; the project reads the same questions from ``--data``
(the data the run was made from, ``demo`` by default). Prints the largest difference of the
span log-probabilities, both losses, the largest relative gradient difference, and after
``--steps`` optimizer steps on the batch (each side's own optimizer from its own configuration:
allennlp's ``trainer.optimizer``, the project's ``train.optimizer``) the losses and the largest
relative weight difference; exit status 1 when any is further apart than float32 rounding
allows (``--tolerance``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments.data.real_sets import data_path
from experiments.peer.venv import PEER_SIDE, peer_env, peer_venv
from experiments.run.optim import build_optimizer
from tasks.registry import get_task
from tasks.squad.parity import DIALOG_QA_CHOICES, compare
from tasks.squad.peer import PEER


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="an allennlp serialization folder")
    parser.add_argument("--epoch", default="10", help="weights after epoch N, or init")
    parser.add_argument("--paragraphs", type=int, default=4, help="training paragraphs read")
    parser.add_argument("--data", default="demo", help="the data the run was made from")
    parser.add_argument("--python", type=Path, help="the peer venv's python (default: its own)")
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps on the batch")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args(argv)
    config = args.run_dir / "config.json"
    if not config.is_file():
        parser.error(f"{config} not found: pass an allennlp serialization folder")
    train = Path(json.loads(config.read_text(encoding="utf-8"))["train_data_path"])
    python = args.python or peer_venv() / "bin" / "python"
    if not python.is_file():
        parser.error(f"{python} not found: build the peer venv (python -m experiments.peer.venv)")
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dialog_qa.pt"
        command = [str(python), str(PEER_SIDE / "peer_qa_dump.py"), str(args.run_dir)]
        command += [args.epoch, str(train), str(args.paragraphs), str(dump)]
        command += ["--steps", str(args.steps)]
        env = {**peer_env(), "OMP_NUM_THREADS": "1"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode:
            print(done.stderr[-4000:], file=sys.stderr)
            return done.returncode
        overrides = [*PEER.overrides, *DIALOG_QA_CHOICES]
        recipe = get_task("squad").setup("paper", overrides, data_path(args.data))
        train_config = recipe.config.train
        report = compare(recipe, dump, lambda params: build_optimizer(train_config, params))
    print(f"dialog_qa {args.run_dir} after epoch {args.epoch}; project: {' '.join(overrides)}")
    print("\n".join(report.lines()))
    worst = report.worst()
    print(f"{'PASS' if worst <= args.tolerance else 'FAIL'} (tolerance {args.tolerance:g})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
