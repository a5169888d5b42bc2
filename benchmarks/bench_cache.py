"""Feature-cache benchmark: a 6-run λ × LastOnly sweep with and without the frozen-feature cache.

Usage::

    python benchmarks/bench_cache.py [--threads 1] [--sentences 600] [--epochs 3] [--batch 32]
        [--checkpoint PATH] [--dtype float16] [--json PATH] [--tiny]

The sweep is Table 2's axes on one frozen representation (``elmo`` from ``--checkpoint``, default
the shipped small model, or a random biLM with the reduced stand-in architecture of TASKS_SPEC §6
when neither exists): λ ∈ {0, 1, 0.001} × mode ∈ {all, last}. Each run trains a stand-in task
model, a token-level linear probe over ``Injector(sites={"input"})``, for ``--epochs`` epochs on a
synthetic tagging set (random words, Zipf frequencies, a label per word type).

* **without cache**: every batch is featurized and run through the representation, every epoch of
  every run (what a naive harness does);
* **with cache**: :meth:`FeatureCache.build` once (timed, in a fresh folder), then every batch is a
  :meth:`FeatureCache.lookup`.

Both paths use the same seeds and batch order, so their final losses agree to the cache's precision
(printed). Wall-clock of both, the ratio, the build time and the cache size are printed. Run on an
otherwise idle machine. ``--tiny`` is a seconds-long smoke test (tiny biLM, 60 sentences, 1 epoch).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``tasks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import add_standard_arguments, write_json  # noqa: E402
from bilm import BiLM, BiLMOptions, CharCNNOptions, LSTMOptions, init_weights  # noqa: E402
from bilm.weights import save_checkpoint  # noqa: E402
from tasks.common.feature_cache import FeatureCache  # noqa: E402
from tasks.common.inject import Injector, MixSpec, mix_penalty  # noqa: E402
from tasks.representations import Layers, Representation, build_representation  # noqa: E402

SWEEP = [MixSpec(mode=mode, lam=lam) for lam in (0.0, 1.0, 0.001) for mode in ("all", "last")]
NUM_TAGS = 5


def stand_in_options(tiny: bool) -> BiLMOptions:
    """The reduced ELMo of TASKS_SPEC §6 (3 × 128-d layers), or the test suite's tiny biLM."""
    if tiny:
        lstm = LSTMOptions(dim=24, projection_dim=8, n_layers=2, cell_clip=3.0, proj_clip=3.0)
        cnn = CharCNNOptions(embedding_dim=4, filters=((1, 4), (2, 6), (3, 6)), n_highway=1)
    else:
        lstm = LSTMOptions(dim=256, projection_dim=64, n_layers=2, cell_clip=3.0, proj_clip=3.0)
        cnn = CharCNNOptions(
            embedding_dim=16, filters=((1, 16), (2, 16), (3, 32), (4, 64)), n_highway=2
        )
    return BiLMOptions(lstm=lstm, char_cnn=cnn)


def representation(args: argparse.Namespace, folder: Path) -> tuple[Representation, str]:
    """The frozen representation under test and a line describing it."""
    if args.checkpoint is not None:
        return build_representation("elmo", checkpoint=args.checkpoint), str(args.checkpoint)
    if not args.tiny:
        try:
            return build_representation("elmo"), "shipped default model"
        except FileNotFoundError:
            pass
    model = init_weights(BiLM(stand_in_options(args.tiny)), seed=0)
    path = save_checkpoint(model, folder / "stand-in.safetensors")
    what = "tiny random biLM" if args.tiny else "random biLM, TASKS_SPEC §6 stand-in sizes"
    return build_representation("elmo", checkpoint=path), what


def synthetic_data(n: int, seed: int) -> tuple[list[list[str]], list[list[int]]]:
    """Random-letter words with Zipf frequencies; each word type has a fixed tag."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(800)
    ]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    tag = {w: rng.randrange(NUM_TAGS) for w in vocab}
    sentences = [rng.choices(vocab, weights, k=rng.randint(4, 30)) for _ in range(n)]
    return sentences, [[tag[w] for w in s] for s in sentences]


class Probe(nn.Module):
    """Stand-in task model: injected representation → linear tagger."""

    def __init__(self, rep: Representation, mix: MixSpec) -> None:
        super().__init__()
        self.injector = Injector(rep, frozenset({"input"}), mix, dropout=0.1)
        self.out = nn.Linear(self.injector.extra_dim("input"), NUM_TAGS)

    def forward(self, layers: Layers, tags: torch.Tensor) -> torch.Tensor:
        injected = self.injector(layers)
        empty = layers.mask.new_zeros(*layers.mask.shape, 0, dtype=torch.float)  # (B, T, 0)
        logits = self.out(self.injector.concat("input", empty, injected))  # (batch, time, tags)
        return nn.functional.cross_entropy(logits[layers.mask], tags[layers.mask])


def train_sweep(
    rep: Representation,
    batches: list[list[int]],
    sentences: list[list[str]],
    tags: torch.Tensor,
    get_layers: Callable[[list[int]], Layers],
    epochs: int,
) -> list[float]:
    """Train one probe per sweep configuration; returns each run's final-epoch mean loss."""
    finals = []
    for run, mix in enumerate(SWEEP):
        torch.manual_seed(run)
        model = Probe(rep, mix)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        losses: list[float] = []
        for _ in range(epochs):
            losses = []
            for batch in batches:
                layers = get_layers(batch)
                width = layers.mask.shape[1]
                loss = model(layers, tags[batch, :width]) + mix_penalty(model)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        finals.append(sum(losses) / len(losses))
    return finals


def run(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        folder = Path(tmp)
        rep, what = representation(args, folder)
        sentences, tag_lists = synthetic_data(args.sentences, seed=0)
        longest = max(len(s) for s in sentences)
        tags = torch.zeros(len(sentences), longest, dtype=torch.long)  # (n, time)
        for i, row in enumerate(tag_lists):
            tags[i, : len(row)] = torch.tensor(row)
        order = list(range(len(sentences)))
        random.Random(1).shuffle(order)
        batches = [order[i : i + args.batch] for i in range(0, len(order), args.batch)]

        def direct(batch: list[int]) -> Layers:
            return rep(rep.featurize([sentences[i] for i in batch]))  # collate + forward

        start = time.perf_counter()
        plain = train_sweep(rep, batches, sentences, tags, direct, args.epochs)
        no_cache_s = time.perf_counter() - start

        start = time.perf_counter()
        cache = FeatureCache.build(
            rep,
            sentences,
            folder / "cache",
            dtype=args.dtype,
            batch_size=args.batch,
            progress=False,
        )
        build_s = time.perf_counter() - start
        cached = train_sweep(rep, batches, sentences, tags, cache.lookup, args.epochs)
        cache_s = time.perf_counter() - start
        size = sum(p.stat().st_size for p in cache.path.iterdir())

    return {
        "representation": what,
        "layers": [rep.num_layers, rep.output_dim],
        "sentences": len(sentences),
        "tokens": sum(len(s) for s in sentences),
        "epochs": args.epochs,
        "batch": args.batch,
        "threads": args.threads,
        "dtype": args.dtype,
        "runs": [
            {"mode": m.mode, "lam": m.lam, "final_loss_no_cache": a, "final_loss_cache": b}
            for m, a, b in zip(SWEEP, plain, cached, strict=True)
        ],
        "no_cache_s": no_cache_s,
        "cache_s": cache_s,
        "cache_build_s": build_s,
        "cache_bytes": size,
        "speedup": no_cache_s / cache_s,
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        f"representation: {result['representation']} "
        f"({result['layers'][0]} layers x {result['layers'][1]})",
        f"data: {result['sentences']} sentences, {result['tokens']} tokens; "
        f"{result['epochs']} epochs x {len(result['runs'])} runs, batch {result['batch']}, "
        f"{result['threads']} thread(s)",
        "",
        "| mode | λ | final loss, no cache | final loss, cache |",
        "|---|---|---|---|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['mode']} | {r['lam']:g} | {r['final_loss_no_cache']:.4f} "
            f"| {r['final_loss_cache']:.4f} |"
        )
    lines += [
        "",
        f"without cache: {result['no_cache_s']:.2f} s",
        f"with cache:    {result['cache_s']:.2f} s "
        f"(build {result['cache_build_s']:.2f} s, {result['cache_bytes'] / 1e6:.2f} MB "
        f"{result['dtype']})",
        f"ratio (without / with): {result['speedup']:.2f}x",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="feature-cache sweep benchmark")
    add_standard_arguments(parser, threads=1)
    parser.add_argument("--sentences", type=int, default=600, help="synthetic sentences (600)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run (3)")
    parser.add_argument("--batch", type=int, default=32, help="batch size (32)")
    parser.add_argument("--checkpoint", type=Path, help="biLM checkpoint (default: shipped)")
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    parser.add_argument("--tiny", action="store_true", help="seconds-long smoke test")
    args = parser.parse_args(argv)
    if args.tiny:
        args.sentences, args.epochs = min(args.sentences, 60), 1
    result = run(args)
    print(report(result))
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
