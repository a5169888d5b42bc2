"""GPU smoke run of the harness: one short SQuAD ``paper`` run with a full-size random biLM.

    nox -s gpu_smoke                      # = python scripts/gpu_smoke.py
    python scripts/gpu_smoke.py --examples 2000 --precision bf16 --device cuda:0

The biLM has the published architecture (2 × 4096/512 LSTM, 2048-filter char CNN, 2 highway
layers; ``BiLMOptions()`` defaults) with random weights, so nothing is downloaded; it runs live
on the GPU (no feature cache) at the input and output sites. Word vectors are random 300-d (the
paper's GloVe 840B is not needed for a smoke run). Prints wall time, training tokens/s (context
and question tokens of the training batches) and peak GPU memory. Without CUDA it exits with
status 1 and says so.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bilm.options import BiLMOptions  # noqa: E402
from experiments.runner import RunOptions, train  # noqa: E402
from experiments.spec import RunSpec  # noqa: E402
from tasks.registry import get_task  # noqa: E402
from tasks.squad.task import setup  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda or cuda:N")
    parser.add_argument("--precision", default="bf16", choices=("fp32", "bf16", "fp16"))
    parser.add_argument("--examples", type=int, default=1000, help="training (and dev) examples")
    parser.add_argument("--data", help="SQuAD folder (default: the bundled DEMO set)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(
            "gpu_smoke: CUDA is not available (no GPU, or a CPU build of torch): nothing was "
            "run. Install the CUDA build of torch 2.13.0 on a GPU machine (see README, Set-up).",
            file=sys.stderr,
        )
        return 1
    task = get_task("squad")
    overrides = ("word_vectors=random:300", "train.epochs=1")
    with tempfile.TemporaryDirectory() as tmp:
        options_path = Path(tmp) / "options.json"
        BiLMOptions().to_json(options_path)
        spec = RunSpec(
            task=task.name,
            task_version=task.version,
            representation="bilm-random",
            representation_config={"options": str(options_path)},
            sites=tuple(sorted(task.default_sites)),  # type: ignore[arg-type]
            mix=task.default_mix,
            preset="paper",
            overrides=overrides,
            data=args.data or "demo",
            limit=args.examples,
        )
        recipe = setup("paper", overrides, args.data)
        train_examples = list(recipe.splits["train"])[: args.examples]
        tokens = sum(recipe.size(e) + len(e.question_tokens) for e in train_examples)
        torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        outcome = train(
            spec,
            RunOptions(
                work_root=Path(tmp) / "work",
                device=args.device,
                precision=args.precision,
                progress=True,
            ),
        )
        wall = time.perf_counter() - started
    train_s = outcome.log[-1]["seconds"] if outcome.log else wall
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"device          {outcome.device}")
    print(f"examples        train {outcome.counts['train']}, dev {outcome.counts['dev']}")
    print(f"wall time       {wall:.1f} s (set-up, 1 epoch, dev scoring)")
    print(f"train tokens/s  {tokens / train_s:,.0f} (incl. the dev evaluation of the epoch)")
    print(f"peak GPU memory {peak:.2f} GiB")
    print(
        f"dev F1          {100 * outcome.metrics['dev_f1']:.1f} (1 epoch, random biLM: a smoke run)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
