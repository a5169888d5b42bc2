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
    (args.out / "MODEL_CARD.md").write_text(card(config, figures), encoding="utf-8")
    print(json.dumps(figures, indent=2))
    return 0


def card(config: object, f: dict) -> str:
    """The model card, filled with the measured figures."""
    opts = config.model  # type: ignore[attr-defined]
    lstm, cnn = opts.lstm, opts.char_cnn
    v, t = f["valid"], f["test"]
    speed = f"{f['tokens_per_s_median']:,.0f}" if f["tokens_per_s_median"] else "n/a"
    return f"""# elmo-bench-small-en — model card

A small English ELMo-style biLM trained by this project's own code, shipped as the default biLM of
`bilm` and of the harness when no other is configured. It is **not** the published ELMo model
(Peters et al. 2018): it is about 30× smaller and trained on 2.3 M tokens instead of about 770 M
(the 1B Word Benchmark).

## Architecture
- char CNN: embedding {cnn.embedding_dim}, filters {[list(x) for x in cnn.filters]}
  ({cnn.n_filters} in all), {cnn.n_highway} highway layer(s), projection to {lstm.projection_dim}
- biLSTM: {lstm.n_layers} layers per direction, cell {lstm.dim}, projection {lstm.projection_dim},
  cell/projection clip {lstm.cell_clip}/{lstm.proj_clip},
  residual connections: {lstm.use_skip_connections}
- output: {opts.num_layers} layers of width {opts.output_dim}
- parameters: biLM {f["bilm_parameters"]:,}; softmax (training only) {f["softmax_parameters"]:,}
- file: `{DEFAULT_MODEL_NAME}`, safetensors, weights stored as float16
  ({f["release_bytes"]:,} bytes, sha256 `{f["release_sha256"]}`); loaded as float32.
  It holds the biLM, the softmax and the vocabulary ({f["vocab_size"]:,} words), so
  `python -m bilm evaluate` can compute perplexity.

## Training data
Public-domain English text, one tokenized sentence per line: Jane Austen's six novels, the King
James Bible, US presidential inaugural addresses (1789–2021) and State of the Union addresses
(1945–2006). {f["train_corpus_tokens"]:,} training tokens; separate valid and test files. The texts
are in the public domain (the KJV remains under Crown letters patent in the United Kingdom). The
corpus is not redistributed here; any text in the same format can be used to rebuild a model.

## Training
bilm-tf's recipe (two independent sentence streams, 20-step windows, state carried, shared
sampled softmax with {config.num_samples} negatives, Adagrad lr {config.lr},
clip {config.clip_norm},
dropout {config.dropout}), batch {config.batch_size} × {config.unroll_steps}, {f["steps"]:,} steps,
{f["train_tokens_seen"]:,} tokens per direction, seed {config.seed}. Median training speed
{speed} tokens/s on {f["threads"]} CPU threads ({f["machine"]}).

## Held-out perplexity (the shipped float16 weights, full softmax, state carried)
| split | forward | backward | average | tokens scored |
|---|---|---|---|---|
| valid | {v["forward"]:.1f} | {v["backward"]:.1f} | {v["average"]:.1f} | {v["tokens"]:,} |
| test | {t["forward"]:.1f} | {t["backward"]:.1f} | {t["average"]:.1f} | {t["tokens"]:,} |

Perplexities are over this model's own vocabulary (out-of-vocabulary words count as `<UNK>`),
so they are comparable only with models scored on the same vocabulary, e.g. the Kneser-Ney
trigram of `nox -s bench_pretrain`.

## Reproduce
```bash
nox -s pretrain_small -- --train train.txt --valid valid.txt --test test.txt
```
(`scripts/train_small_bilm.py`; git {f["git_sha"][:12]}, {f["date"]}.)

## Intended use and limits
A default for demos, tests and CPU experiments with the harness. Its domain is 19th-century
fiction, the KJV and political speeches; it knows little modern vocabulary. Do not compare its
downstream numbers with the paper's, which use the published 1B-Word-Benchmark biLM.
"""


if __name__ == "__main__":
    sys.exit(main())
