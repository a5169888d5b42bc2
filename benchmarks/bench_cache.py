"""Feature-cache benchmark: a 6-run λ × LastOnly sweep with and without the frozen-feature cache.

Usage::

    python benchmarks/bench_cache.py [--threads 1] [--sentences 600] [--epochs 3] [--batch 32]
        [--checkpoint PATH] [--dtype float16] [--json PATH] [--tiny] [--out FILE]

The sweep is Table 2's axes on one frozen representation (``elmo`` from ``--checkpoint``, default
the shipped small model, or a random biLM when neither exists: the topology of Peters et al. 2018
§3.4 scaled down, by the project's choice, to 256 cells, 64-d projections and 128 char filters,
so 3 layers × 128-d): λ ∈ {0, 1, 0.001} × mode ∈ {all, last}. Each run trains a stand-in task
model, a token-level linear probe over ``Injector(sites={"input"})``, for ``--epochs`` epochs on a
synthetic tagging set (random words, Zipf frequencies, a label per word type).

* **without cache**: every batch is featurized and run through the representation, every epoch of
  every run (what a naive harness does);
* **with cache**: :meth:`FeatureCache.build` once (timed, in a fresh folder), then every batch is a
  :meth:`FeatureCache.lookup`.

Both paths use the same seeds and batch order, so their final losses agree to the cache's precision
(printed). Wall-clock of both, the ratio, the build time and the cache size are printed. Run on an
otherwise idle machine. ``--tiny`` is a seconds-long smoke test (tiny biLM, 60 sentences, 1 epoch).

**Storage and lookup** (``--storage-only`` skips the sweep; ``--skip-storage`` skips this): the
disk bytes per token and the time of one ``lookup`` of a batch of ``--lookup-batch`` sequences of
``--lookup-tokens`` tokens (SQuAD-like: 45 × 400) at ELMo's width (``--storage-dim``, 3 layers of
1,024), before and after the bounded-cache change, medians over ``--lookup-repeats`` batches:

* **before**: the full float16 form (every token's three layers), read the previous way (a float32
  ``(B, T, L, D)`` copy, then a permuted ``(L, B, T, D)`` copy);
* **after, full**: the same entry, read straight into the batch's ``(L, B, T, D)`` tensor;
* **after, reduced**: layer 0 stored once per distinct word (``context_free_layers = 1``), read
  the same way. All three are checked bit-identical.

The storage part uses a cheap synthetic representation with ELMo's shape (layer 0 a function of the
word, layers 1-2 running sums), so it measures the cache, not the biLM.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``tasks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import (  # noqa: E402
    add_standard_arguments,
    provenance,
    tee_stdout,
    write_json,
)
from bilm import BiLM, BiLMOptions, CharCNNOptions, LSTMOptions, init_weights  # noqa: E402
from bilm.weights import save_checkpoint  # noqa: E402
from tasks.features.feature_cache import FeatureCache  # noqa: E402
from tasks.features.inject import Injector, MixSpec, mix_penalty  # noqa: E402
from tasks.representations import Layers, Representation, build_representation  # noqa: E402

#: This script's path as the ``--out`` header's command names it.
SCRIPT = "benchmarks/bench_cache.py"
SWEEP = [MixSpec(mode=mode, lam=lam) for lam in (0.0, 1.0, 0.001) for mode in ("all", "last")]
NUM_TAGS = 5


def stand_in_options(tiny: bool) -> BiLMOptions:
    """A scaled-down ELMo (Peters et al. 2018 §3.4's topology, 3 × 128-d layers; the sizes are the
    project's choice), or the test suite's tiny biLM."""
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
    what = "tiny random biLM" if args.tiny else "random biLM, scaled-down stand-in sizes"
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


class WideStandIn:
    """A cheap frozen representation with ELMo's layout: ``(3, batch, time, dim)``.

    Layer 0 depends only on the word (declared with ``context_free_layers = 1``); layers 1 and 2
    are running sums over the sentence (context-dependent). Values stay within float16.

    Args:
        dim: layer width (ELMo: 1,024).
    """

    name = "wide-stand-in"
    trainable = False
    num_layers = 3
    context_free_layers = 1
    state_policy = "reset"

    def __init__(self, dim: int) -> None:
        self.output_dim = dim

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        """Word hashes ``(batch, time)``, 0 at padding."""
        time_ = max((len(s) for s in sentences), default=0)
        ids = torch.zeros(len(sentences), time_, dtype=torch.long)  # (batch, time)
        for b, sentence in enumerate(sentences):
            ids[b, : len(sentence)] = torch.tensor(
                [zlib.crc32(w.encode()) % 1_000_003 + 1 for w in sentence], dtype=torch.long
            )
        return {"ids": ids}

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        ids = features["ids"]  # (batch, time)
        mask = ids > 0  # (batch, time)
        freq = torch.arange(1, self.output_dim + 1, dtype=torch.float32)  # (dim,)
        token = torch.sin(ids[..., None].float() * freq * 1e-3) * mask[..., None]  # (B, T, D)
        steps = mask.float().cumsum(1).clamp(min=1)[..., None]  # (B, T, 1)
        first = token.cumsum(1) / steps  # (B, T, D) running mean
        second = torch.tanh(first.cumsum(1) / steps) * mask[..., None]  # (B, T, D)
        return Layers(torch.stack([token, first * mask[..., None], second]), mask)  # (3, B, T, D)

    def fingerprint(self) -> str:
        """Depends on the width only."""
        return f"wide-stand-in-{self.output_dim}"


def legacy_lookup(cache: FeatureCache, indices: Sequence[int]) -> Layers:
    """The lookup before this change, on a full-form entry: a float32 ``(B, T, L, D)`` copy,
    then a permuted contiguous ``(L, B, T, D)`` copy."""
    idx = np.asarray(list(indices), dtype=np.int64)  # (batch,)
    lengths = cache.lengths[idx]  # (batch,)
    time_ = int(lengths.max()) if idx.size else 0
    out = np.zeros((len(idx), time_, cache.num_layers, cache.output_dim), np.float32)  # (B,T,L,D)
    source = cache.layers
    for row, i in enumerate(idx):
        out[row, : lengths[row]] = source[cache.offsets[i] : cache.offsets[i + 1]]
    tensors = torch.from_numpy(out).permute(2, 0, 1, 3).contiguous()  # (L, B, T, D)
    mask = torch.arange(time_)[None, :] < torch.from_numpy(lengths)[:, None]  # (B, T)
    return Layers(tensors, mask)


def storage(args: argparse.Namespace) -> dict[str, Any]:
    """Bytes per token and lookup time per batch: before, after (full form), after (reduced)."""
    torch.set_num_threads(args.threads)
    rng = random.Random(2)
    vocab = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 12)))
        for _ in range(args.storage_vocab)
    ]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    count = args.lookup_batch * args.storage_batches
    sentences = [
        rng.choices(vocab, weights, k=rng.randint(args.lookup_tokens // 2, args.lookup_tokens))
        for _ in range(count - 1)
    ] + [rng.choices(vocab, weights, k=args.lookup_tokens)]  # at least one full-length one
    tokens = sum(len(s) for s in sentences)
    rep = WideStandIn(args.storage_dim)
    with tempfile.TemporaryDirectory(prefix="bench-cache-storage-") as tmp:
        built: dict[str, FeatureCache] = {}
        build_s: dict[str, float] = {}
        for form in ("full", "reduced"):
            start = time.perf_counter()
            built[form] = FeatureCache.build(
                rep,  # type: ignore[arg-type]
                sentences,
                Path(tmp) / form,
                dtype="float16",
                batch_size=16,
                progress=False,
                budget="unlimited",
                reduced=form == "reduced",
            )
            build_s[form] = time.perf_counter() - start
        entry_bytes = {
            form: sum(p.stat().st_size for p in cache.path.iterdir())
            for form, cache in built.items()
        }
        order = list(range(count))
        methods: dict[str, Callable[[list[int]], Layers]] = {
            "before": lambda b: legacy_lookup(built["full"], b),
            "after_full": built["full"].lookup,
            "after_reduced": built["reduced"].lookup,
        }
        times: dict[str, list[float]] = {name: [] for name in methods}
        batch_tokens = []
        for repeat in range(args.lookup_repeats):
            rng.shuffle(order)
            batch = order[: args.lookup_batch]
            results = {}
            names = list(methods)
            names = names[repeat % 3 :] + names[: repeat % 3]  # rotate: no method always first
            for name in names:
                start = time.perf_counter()
                results[name] = methods[name](batch)
                times[name].append(time.perf_counter() - start)
            first = results["before"]
            for name in ("after_full", "after_reduced"):
                if not torch.equal(results[name].tensors, first.tensors):
                    raise AssertionError(f"{name} lookup differs from the previous lookup")
            batch_tokens.append(int(first.mask.sum()))
            del results, first
        for cache in built.values():
            cache.close()
    batch_bytes = 4 * rep.num_layers * args.lookup_batch * args.lookup_tokens * args.storage_dim
    return {
        "dim": args.storage_dim,
        "layers": rep.num_layers,
        "sequences": count,
        "tokens": tokens,
        "distinct_words": len({w for s in sentences for w in s}),
        "batch": args.lookup_batch,
        "batch_time": args.lookup_tokens,
        "median_batch_tokens": statistics.median(batch_tokens),
        "repeats": args.lookup_repeats,
        "threads": args.threads,
        "bytes_per_token": {
            "before": entry_bytes["full"] / tokens,
            "after_full": entry_bytes["full"] / tokens,
            "after_reduced": entry_bytes["reduced"] / tokens,
        },
        "build_s": build_s,
        "lookup_s_median": {name: statistics.median(t) for name, t in times.items()},
        "lookup_s_all": times,
        "batch_tensor_bytes": batch_bytes,
    }


def storage_report(result: dict[str, Any]) -> str:
    """The storage and lookup table."""
    b, t = result["bytes_per_token"], result["lookup_s_median"]
    lines = [
        f"storage: {result['layers']} layers x {result['dim']}, float16; {result['sequences']} "
        f"sequences, {result['tokens']} tokens, {result['distinct_words']} distinct words",
        f"lookup: batches of {result['batch']} sequences "
        f"(median {result['median_batch_tokens']:.0f} tokens, padded to <= "
        f"{result['batch_time']}), median of {result['repeats']}, "
        f"{result['threads']} thread(s); outputs checked bit-identical",
        "",
        "| | bytes per token | lookup per batch (median) |",
        "|---|---|---|",
        f"| before (full fp16, fp32 + permuted copies) | {b['before']:.0f} "
        f"| {t['before'] * 1e3:.1f} ms |",
        f"| after, full form (direct) | {b['after_full']:.0f} | {t['after_full'] * 1e3:.1f} ms |",
        f"| after, reduced form (direct) | {b['after_reduced']:.0f} "
        f"| {t['after_reduced'] * 1e3:.1f} ms |",
    ]
    return "\n".join(lines)


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
    parser.add_argument("--storage-only", action="store_true", help="skip the sweep")
    parser.add_argument("--skip-storage", action="store_true", help="skip storage and lookup")
    parser.add_argument("--lookup-batch", type=int, default=45, help="sequences per batch (45)")
    parser.add_argument("--lookup-tokens", type=int, default=400, help="longest sequence (400)")
    parser.add_argument("--lookup-repeats", type=int, default=15, help="batches timed (15)")
    parser.add_argument("--storage-dim", type=int, default=1024, help="layer width (1024)")
    parser.add_argument("--storage-vocab", type=int, default=20000, help="vocabulary (20000)")
    parser.add_argument(
        "--storage-batches", type=int, default=3, help="cache size in batches of sequences (3)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="also write the printed report to this file, after a header naming the commit, "
        "the CPU and the command (e.g. results/benchmarks/bench_cache.txt)",
    )
    args = parser.parse_args(argv)
    if args.tiny:
        args.sentences, args.epochs = min(args.sentences, 60), 1
        args.lookup_batch, args.lookup_tokens, args.lookup_repeats = 8, 40, 5
        args.storage_dim, args.storage_vocab = 64, 500
    header = provenance(SCRIPT, argv, ("bilm", "benchmarks", "tasks")) if args.out else ()
    with tee_stdout(args.out, header=header):
        measure(args)


def measure(args: argparse.Namespace) -> None:
    """The sweep and the storage part as the command line asks; prints both reports.

    Args:
        args: the parsed command line.
    """
    result: dict[str, Any] = {}
    if not args.storage_only:
        result = run(args)
        print(report(result))
    if not args.skip_storage:
        result["storage"] = storage(args)
        print()
        print(storage_report(result["storage"]))
    if args.json:
        write_json(args.json, result)


if __name__ == "__main__":
    main()
