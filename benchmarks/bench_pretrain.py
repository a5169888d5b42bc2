"""biLM pre-training benchmark: training throughput and held-out perplexity.

Usage::

    python benchmarks/bench_pretrain.py [--threads 2] [--steps 3] [--full-steps 1]
        [--full-batch N] [--skip-full] [--skip-perplexity] [--checkpoint PATH]
        [--corpus DIR] [--device cpu] [--precision fp32] [--json PATH] [--out FILE]

Run it on an otherwise idle machine: every figure is a wall-clock time.

1. **Training throughput** of the ``small`` and ``full`` presets (``bilm.pretrain.preset``): the
   vocabulary is built from the corpus train file with the preset's ``min_count``/``max_vocab``,
   batches come from a :class:`bilm.lm_data.BidirectionalLMStream`, the model from
   :func:`bilm.pretrain.build_model`; one optimizer step, :func:`bilm.pretrain.training_step`
   (the very function ``bilm pretrain`` runs: forward with the sampled softmax under the
   ``--precision`` autocast, ``(loss × unroll_steps).backward()``, global-norm clip, Adagrad
   step, gradient scaler), is timed on ``--device`` after ``--warmup`` untimed ones. Batches are
   drawn and moved to the device before the clock starts (their cost is reported separately).
   Tokens/s = text tokens per direction per second = ``batch × unroll / median step``.
   The ``full`` preset keeps its architecture; only its batch may be capped (``--full-batch``,
   reported). The same run measures GEMM throughput on that device in the step's matmul dtype
   (``torch.mm``: 2048³ and the model's LSTM shapes; the highest median is the roofline) and an
   analytic FLOP count per step (printed with its formula) → achieved GFLOP/s and fraction of
   the roofline.
2. **Held-out perplexity** of a trained biLM (``--checkpoint``, default: the shipped model,
   :func:`bilm.pretrained.default_checkpoint_path`) on the corpus valid and test files with
   :func:`bilm.pretrain.evaluate_perplexity`, next to an interpolated Kneser-Ney trigram
   (``benchmarks/kn_trigram.py``) trained on the train file with the same vocabulary, forward
   and backward, with the number of tokens each scored.

The corpus directory defaults to ``../shared/data/corpus`` next to the repository. ``--tiny``
(hidden) is a seconds-long smoke test: the ``tiny`` preset, the valid file as training text,
small GEMMs, and a freshly saved tiny model as the checkpoint.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import (  # noqa: E402
    add_standard_arguments,
    cnn_macs_per_token,
    gemm_gflops,
    lstm_macs_per_cell_step,
    machine_info,
    peak_rss_bytes,
    provenance,
    tee_stdout,
    write_json,
)
from benchmarks.kn_trigram import KneserNeyTrigram, perplexity  # noqa: E402
from bilm.devices import (  # noqa: E402
    DEVICE_SPECS,
    PRECISIONS,
    DeviceError,
    autocast_dtype,
    describe_device,
    make_scaler,
    resolve_device,
    resolve_precision,
    synchronize,
)
from bilm.lm_data import BidirectionalLMStream, LMBatch, count_tokens, read_sentences  # noqa: E402
from bilm.options import BiLMOptions  # noqa: E402
from bilm.pretrain import (  # noqa: E402
    LanguageModel,
    PretrainConfig,
    batch_to_device,
    build_model,
    build_optimizer,
    evaluate_perplexity,
    load_language_model,
    preset,
    save_language_model,
    training_step,
)
from bilm.vocab import Vocabulary  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "corpus"
#: This script's path as the ``--out`` header's command names it.
SCRIPT = "benchmarks/bench_pretrain.py"

FLOP_FORMULA = """\
  FLOP per training step ≈ 3 × 2 × MACs_forward   (× 2: multiply + add; × 3: backward ≈ 2 × fwd)
  MACs_forward = (n_fwd + n_bwd) × CNN                 char CNN on each direction's distinct tokens
               + 2·L × B·T × (2·P·4C + C·P)             LSTM cells (2 directions × L layers)
               + 2 × B·T × (S + 1) × P                  softmax per target, both directions
                                                        (sampled: S negatives + the true word;
                                                         full softmax: V × P instead)
  CNN = Σ_filters (M − w + 1)·w·E·n_w + n_highway·2F² + F·P   (M = max chars, F = Σ n_w)
  Element-wise work (gates, clipping, dropout, log-softmax, Adagrad) is not counted."""


# ---------------------------------------------------------------------------- cost model
def distinct_tokens(batch: LMBatch) -> tuple[int, int]:
    """Distinct input tokens of each direction (the char CNN runs once per distinct token)."""
    fwd = {t for row in batch.forward.tokens for t in row if t}
    bwd = {t for row in batch.backward.tokens for t in row if t}
    return len(fwd), len(bwd)


def step_flops(
    options: BiLMOptions,
    rows: int,
    steps: int,
    vocab_size: int,
    num_samples: int | None,
    n_distinct: tuple[int, int],
) -> dict[str, float]:
    """Analytic FLOPs of one training step (see :data:`FLOP_FORMULA`).

    Args:
        options: the architecture.
        rows: B, rows of the batch.
        steps: T, unroll steps.
        vocab_size: V.
        num_samples: S sampled negatives, or ``None`` for the full softmax.
        n_distinct: distinct input tokens of the forward and the backward half.

    Returns:
        Forward multiply-adds per component (``cnn``, ``lstm``, ``softmax``) and ``train_flop``.
    """
    P = options.lstm.projection_dim
    targets = rows * steps
    cnn = sum(n_distinct) * cnn_macs_per_token(options.char_cnn, P)
    lstm = 2 * options.lstm.n_layers * targets * lstm_macs_per_cell_step(options)
    per_target = (num_samples + 1) * P if num_samples is not None else vocab_size * P
    softmax = 2 * targets * per_target
    forward = cnn + lstm + softmax
    return {
        "cnn_macs": cnn,
        "lstm_macs": lstm,
        "softmax_macs": softmax,
        "forward_macs": forward,
        "train_flop": 3 * 2 * forward,
    }


# ---------------------------------------------------------------------------- measuring
def measure_training(
    name: str,
    config: PretrainConfig,
    train_file: Path,
    warmup: int,
    steps: int,
    device: torch.device | None = None,
    precision: str = "fp32",
) -> tuple[dict[str, Any], LanguageModel, Vocabulary]:
    """Time ``warmup + steps`` calls of :func:`bilm.pretrain.training_step` on ``train_file``.

    Args:
        name: label of the configuration.
        config: the pre-training configuration (batch as it will be run).
        train_file: training text (one tokenized sentence per line).
        warmup: untimed steps first.
        steps: timed steps.
        device: where to train (default: the CPU); batches are moved there before the clock.
        precision: ``fp32`` | ``bf16`` | ``fp16`` (:mod:`bilm.devices`).

    Returns:
        The figures, the (briefly trained) model and its vocabulary.
    """
    start = time.perf_counter()
    vocab = Vocabulary.build([train_file], min_count=config.min_count, max_size=config.max_vocab)
    vocab_s = time.perf_counter() - start
    stream = BidirectionalLMStream(
        [train_file],
        vocab,
        batch_size=config.batch_size,
        unroll_steps=config.unroll_steps,
        mode=config.mode,
        seed=config.seed,
    )
    batches, data_s = [], []
    for _ in range(warmup + steps):
        start = time.perf_counter()
        batches.append(next(stream))
        data_s.append(time.perf_counter() - start)
    device = device if device is not None else torch.device("cpu")
    on_device = [batch_to_device(b, device) for b in batches]
    start = time.perf_counter()
    model = build_model(config, len(vocab)).to(device)
    synchronize(device)
    build_s = time.perf_counter() - start
    model.train()
    optimizer = build_optimizer(config, model)
    scaler = make_scaler(device, precision)
    sampler = torch.Generator(device=device).manual_seed(config.seed + 1)
    state = None
    times, losses = [], []
    for batch in on_device:
        synchronize(device)
        start = time.perf_counter()
        out = training_step(
            model,
            optimizer,
            batch,
            None if batch.reset_state else state,
            sampler,
            unroll_steps=config.unroll_steps,
            clip_norm=config.clip_norm,
            precision=precision,  # type: ignore[arg-type]
            scaler=scaler,
        )
        synchronize(device)
        times.append(time.perf_counter() - start)
        state = out.state
        losses.append(out.loss.item())
    measured = times[warmup:]
    median = statistics.median(measured)
    rows, unroll = config.batch_size, config.unroll_steps
    costs = [
        step_flops(
            config.model, rows, unroll, len(vocab), model.head.num_samples, distinct_tokens(b)
        )
        for b in batches[warmup:]
    ]
    cost = {key: statistics.mean(c[key] for c in costs) for key in costs[0]}
    n_params = sum(p.numel() for p in model.parameters())
    result = {
        "name": name,
        "device": str(device),
        "precision": precision,
        "batch_size": rows,
        "unroll_steps": unroll,
        "vocab_size": len(vocab),
        "num_samples": model.head.num_samples,
        "parameters": n_params,
        "vocab_build_s": vocab_s,
        "model_build_s": build_s,
        "batch_s_median": statistics.median(data_s),
        "warmup_s": times[:warmup],
        "step_s": measured,
        "step_s_median": median,
        "tokens_per_s": rows * unroll / median,
        "losses": losses,
        "flop_per_step": cost["train_flop"],
        "forward_macs": {k: cost[k] for k in ("cnn_macs", "lstm_macs", "softmax_macs")},
        "distinct_tokens_per_direction": statistics.mean(
            sum(distinct_tokens(b)) / 2 for b in batches[warmup:]
        ),
        "achieved_gflops": cost["train_flop"] / median / 1e9,
        "peak_rss_bytes": peak_rss_bytes(),
    }
    return result, model, vocab


def print_training(result: dict[str, Any], roofline: float, note: str) -> None:
    """Print one configuration's throughput figures."""
    r = result
    print(f"\n  [{r['name']}] {note}")
    softmax = f"sampled, {r['num_samples']} negatives" if r["num_samples"] else "full softmax"
    print(
        f"    batch {r['batch_size']} × unroll {r['unroll_steps']}, vocab {r['vocab_size']:,} "
        f"({softmax}), {r['parameters']:,} parameters"
    )
    print(
        f"    vocab build {r['vocab_build_s']:.1f} s, model build {r['model_build_s']:.1f} s, "
        f"batch from the stream {r['batch_s_median'] * 1e3:.0f} ms (not in the step time)"
    )
    steps = ", ".join(f"{s:.3f}" for s in r["step_s"])
    warm = ", ".join(f"{s:.3f}" for s in r["warmup_s"])
    print(f"    step times: warm-up [{warm}] s, measured [{steps}] s")
    print(
        f"    median step {r['step_s_median']:.3f} s → {r['tokens_per_s']:,.0f} tokens/s "
        "(text tokens per direction)"
    )
    m = r["forward_macs"]
    total = sum(m.values())
    print(
        f"    forward MACs/step: char CNN {m['cnn_macs'] / 1e9:.2f} G "
        f"({m['cnn_macs'] / total:.0%}; {r['distinct_tokens_per_direction']:.0f} distinct "
        f"tokens/direction), LSTM {m['lstm_macs'] / 1e9:.2f} G ({m['lstm_macs'] / total:.0%}), "
        f"softmax {m['softmax_macs'] / 1e9:.2f} G ({m['softmax_macs'] / total:.0%})"
    )
    print(
        f"    {r['flop_per_step'] / 1e9:,.4g} GFLOP/step → {r['achieved_gflops']:,.4g} GFLOP/s "
        f"= {r['achieved_gflops'] / roofline:.1%} of the GEMM roofline; "
        f"peak RSS so far {r['peak_rss_bytes'] / 2**30:.2f} GiB"
    )


def measure_roofline(
    size: int,
    runs: list[tuple[str, PretrainConfig, int, int, str]],
    work: float,
    report: dict[str, Any],
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> float:
    """Measure and print GEMM throughput: ``size``³ and each run's LSTM shapes.

    Args:
        size: edge of the square product (2048 in a real run).
        runs: ``(name, config, …)`` of the configurations to be timed.
        work: FLOP per timing sample.
        report: receives ``gemm_gflops`` and ``roofline_gflops``.
        device: where (default: the CPU).
        dtype: the training step's matmul dtype (fp32, or the autocast dtype).

    Returns:
        The roofline: the highest median GFLOP/s of these products.
    """
    shapes: dict[str, tuple[int, int, int]] = {f"{size}³": (size, size, size)}
    for name, config, *_ in runs:
        B, T = config.batch_size, config.unroll_steps
        P, C = config.model.lstm.projection_dim, config.model.lstm.dim
        shapes[f"{name}: LSTM step {B}×{P}×{4 * C}"] = (B, P, 4 * C)
        shapes[f"{name}: LSTM input {B * T}×{P}×{4 * C}"] = (B * T, P, 4 * C)
    gemm = {
        label: gemm_gflops(*shape, work=work, device=device, dtype=dtype)
        for label, shape in shapes.items()
    }
    roofline = max(median for median, _ in gemm.values())
    title = f"[{str(dtype).removeprefix('torch.')} GEMM, torch.mm, GFLOP/s]"
    print(f"\n{title:<52} median      best")
    for label, (median, best) in gemm.items():
        print(f"  {label:<48} {median:8.1f}  {best:8.1f}")
    print(f"  {'roofline (highest median)':<48} {roofline:8.1f}")
    report["gemm_gflops"] = {k: {"median": a, "best": b} for k, (a, b) in gemm.items()}
    report["roofline_gflops"] = roofline
    return roofline


# ---------------------------------------------------------------------------- perplexity
def file_targets(path: Path) -> int:
    """Targets of one direction in a file: its tokens plus one final boundary per sentence."""
    return sum(len(s) + 1 for s in read_sentences(path))


def measure_perplexity(
    checkpoint: Path | None,
    missing_reason: str,
    train_file: Path,
    eval_files: dict[str, Path],
    fallback_vocab: Vocabulary | None,
    fallback_note: str = "",
) -> dict[str, Any]:
    """biLM (when a checkpoint exists) and KN-trigram perplexities on ``eval_files``."""
    result: dict[str, Any] = {"checkpoint": str(checkpoint) if checkpoint else None, "splits": {}}
    model = None
    if checkpoint is not None:
        start = time.perf_counter()
        model, vocab = load_language_model(checkpoint)
        print(f"  biLM: {checkpoint} ({time.perf_counter() - start:.1f} s to load)")
        vocab_note = "the biLM's vocabulary"
    else:
        print(f"  biLM: {missing_reason} — biLM perplexity skipped")
        assert fallback_vocab is not None
        vocab = fallback_vocab
        vocab_note = fallback_note
        result["skipped"] = missing_reason
    result["vocab_size"] = len(vocab)
    print(f"  vocabulary: {len(vocab):,} words ({vocab_note}); OOV words are <UNK> for both")

    start = time.perf_counter()
    kn = {
        "forward": KneserNeyTrigram.fit(read_sentences(train_file), vocab),
        "backward": KneserNeyTrigram.fit(read_sentences(train_file), vocab, reverse=True),
    }
    kn_s = time.perf_counter() - start
    d = ", ".join(f"{x:.3f}" for x in kn["forward"].discounts)
    print(
        f"  KN trigram: fitted on {train_file.name} ({kn['forward'].tokens:,} events per "
        f"direction) in {kn_s:.1f} s; forward discounts D1..D3 = {d}"
    )
    result["kn_fit_s"] = kn_s

    for split, path in eval_files.items():
        entry: dict[str, Any] = {"file": str(path), "targets_in_file": file_targets(path)}
        if model is not None:
            start = time.perf_counter()
            entry["bilm"] = evaluate_perplexity(model, vocab, [path])
            entry["bilm"]["seconds"] = time.perf_counter() - start
        scores = {
            direction: perplexity(
                kn[direction], read_sentences(path), vocab, reverse=direction == "backward"
            )
            for direction in ("forward", "backward")
        }
        entry["kn_trigram"] = {
            "forward": scores["forward"]["perplexity"],
            "backward": scores["backward"]["perplexity"],
            "average": 0.5 * (scores["forward"]["perplexity"] + scores["backward"]["perplexity"]),
            "tokens": scores["forward"]["tokens"],
            "unk": scores["forward"]["unk"],
        }
        result["splits"][split] = entry

    print(
        f"\n  {'split':<6} {'model':<22} {'forward':>9} {'backward':>9} {'average':>9} "
        f"{'tokens scored':>14} {'of file':>9}"
    )
    for split, entry in result["splits"].items():
        rows = [("KN trigram (interp.)", entry["kn_trigram"])]
        if "bilm" in entry:
            rows.insert(0, ("biLM", entry["bilm"]))
        for label, ppl in rows:
            print(
                f"  {split:<6} {label:<22} {ppl['forward']:9.2f} {ppl['backward']:9.2f} "
                f"{ppl['average']:9.2f} {ppl['tokens']:14,} {entry['targets_in_file']:9,}"
            )
        unk = entry["kn_trigram"]["unk"] / entry["kn_trigram"]["tokens"]
        print(f"  {'':<6} <UNK> targets: {unk:.2%} of the file's targets")
    print(
        "\n  Notes: tokens = targets per direction (each sentence's words + its final boundary)."
        "\n  The biLM carries its LSTM state across sentences (stream mode, as bilm-tf), so its"
        "\n  context crosses sentence boundaries; the trigram's context never does. Both score"
        "\n  <UNK> as one word. evaluate_perplexity cuts the text into rows × unroll windows and"
        "\n  drops the last incomplete batch, so it may skip a short tail of the file (compare"
        "\n  'tokens scored' with 'of file'); the trigram scores every target. 'average' is the"
        "\n  mean of the forward and backward perplexities (the paper's convention)."
    )
    return result


# ---------------------------------------------------------------------------- main
def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark described by ``args`` and print the report.

    Returns:
        Every figure, JSON-serialisable.
    """
    torch.set_num_threads(args.threads)
    try:
        device = resolve_device(args.device)
        precision = resolve_precision(device, args.precision)
    except DeviceError as exc:
        raise SystemExit(f"bench_pretrain: {exc}") from None
    corpus = Path(args.corpus)
    train_file = corpus / ("valid.txt" if args.tiny else "train.txt")
    eval_files = {"valid": corpus / "valid.txt", "test": corpus / "test.txt"}
    for path in (train_file, *eval_files.values()):
        if not path.is_file():
            raise SystemExit(f"corpus file not found: {path} (pass --corpus DIR)")
    report: dict[str, Any] = {
        "machine": {**machine_info(), "device": describe_device(device)},
        "precision": precision,
        "tiny": args.tiny,
        "train_file": str(train_file),
        "train_tokens": count_tokens([train_file]),
    }
    m = report["machine"]
    print("biLM pre-training benchmark" + (" (--tiny smoke test)" if args.tiny else ""))
    print(
        f"  machine: {m['cpu']}, {m['logical_cpus']} logical CPUs; torch {m['torch']}, "
        f"{m['threads']} threads; training on {m['device']}, {precision}"
    )
    print(f"  training text: {train_file} ({report['train_tokens']:,} tokens)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report["machine"]["load_average_1min"] = load
    print(f"  1-min load average before the run: {load:.2f} (timings need an idle machine)")

    # -- which configurations -------------------------------------------------------------
    runs: list[tuple[str, PretrainConfig, int, int, str]] = []
    if args.tiny:
        runs.append(("tiny", preset("tiny"), args.warmup, args.steps, "smoke test only"))
    else:
        runs.append(("small", preset("small"), args.warmup, args.steps, "the shipped model's"))
        if not args.skip_full:
            full = preset("full")
            note = "published architecture, reduced nothing"
            if args.full_batch and args.full_batch != full.batch_size:
                note += f"; batch capped to {args.full_batch} (preset {full.batch_size})"
                full = replace(full, batch_size=args.full_batch)
            runs.append(("full", full, args.warmup, args.full_steps, note))

    # -- throughput -------------------------------------------------------------------------
    trained: tuple[LanguageModel, Vocabulary] | None = None
    report["training"] = {}
    if args.skip_throughput:
        print("\n[training throughput] skipped (--skip-throughput)")
    else:
        dtype = autocast_dtype(precision) or torch.float32
        work = 2e7 if args.tiny else 2e9
        roofline = measure_roofline(args.gemm_size, runs, work, report, device, dtype)
        print(
            "\n[training throughput] one optimizer step = bilm.pretrain.training_step: "
            "forward + backward + clip + Adagrad"
        )
        print(FLOP_FORMULA)
        for name, config, warmup, steps, note in runs:
            result, model, vocab = measure_training(
                name, config, train_file, warmup, steps, device, precision
            )
            model = model.cpu()  # the perplexity part runs on the CPU
            result["note"] = note
            result["roofline_fraction"] = result["achieved_gflops"] / roofline
            print_training(result, roofline, note)
            report["training"][name] = result
            if args.tiny:
                trained = (model, vocab)
            del model
        if args.skip_full and not args.tiny:
            print("\n  [full] skipped (--skip-full)")

    # -- perplexity -------------------------------------------------------------------------
    if args.skip_perplexity:
        print("\n[held-out perplexity] skipped (--skip-perplexity)")
        return report
    print("\n[held-out perplexity] full softmax, per direction")
    checkpoint: Path | None = None
    reason = ""
    with tempfile.TemporaryDirectory(prefix="bench-pretrain-") as tmp:
        if args.checkpoint is not None:
            checkpoint = Path(args.checkpoint)
            if not checkpoint.exists():
                reason, checkpoint = f"checkpoint {checkpoint} not found", None
        elif args.tiny:
            if trained is None:  # --skip-throughput: an untrained tiny model
                vocab = Vocabulary.build([train_file])
                trained = (build_model(preset("tiny"), len(vocab)), vocab)
            checkpoint = save_language_model(*trained, Path(tmp) / "tiny.safetensors")
        else:
            from bilm.pretrained import default_checkpoint_path

            try:
                checkpoint = default_checkpoint_path()
            except FileNotFoundError as exc:
                reason = str(exc)
        small_name = "tiny" if args.tiny else "small"  # the shipped model's recipe
        small = preset(small_name)
        fallback = None
        if checkpoint is None:
            fallback = Vocabulary.build(
                [train_file], min_count=small.min_count, max_size=small.max_vocab
            )
        note = (
            f"built from {train_file.name} with the {small_name} preset's min_count "
            f"{small.min_count} / max_vocab {small.max_vocab}"
        )
        report["perplexity"] = measure_perplexity(
            checkpoint, reason, train_file, eval_files, fallback, note
        )
        if args.tiny and args.checkpoint is None:
            report["perplexity"]["checkpoint"] = "(temporary tiny model)"
    return report


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description="biLM pre-training throughput and perplexity")
    add_standard_arguments(parser, threads=2)
    parser.add_argument("--steps", type=int, default=3, help="timed steps, small preset (3)")
    parser.add_argument("--full-steps", type=int, default=1, help="timed steps, full preset (1)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first (1)")
    parser.add_argument(
        "--full-batch", type=int, help="cap the full preset's batch (default: its 128 rows)"
    )
    parser.add_argument("--skip-full", action="store_true", help="no full-preset throughput")
    parser.add_argument("--skip-throughput", action="store_true", help="perplexity only")
    parser.add_argument("--skip-perplexity", action="store_true", help="throughput only")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="trained language model (default: bilm.pretrained.default_checkpoint_path())",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="folder with train.txt, valid.txt, test.txt (../shared/data/corpus)",
    )
    parser.add_argument(
        "--device", default="cpu", help=f"{DEVICE_SPECS}: where to time the step (cpu)"
    )
    parser.add_argument(
        "--precision", choices=PRECISIONS, default="fp32", help="autocast precision (fp32)"
    )
    parser.add_argument("--gemm-size", type=int, default=2048, help=argparse.SUPPRESS)
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # smoke test
    parser.add_argument(
        "--out",
        type=Path,
        help="also write the printed report to this file, after a header naming the commit, "
        "the CPU and the command (e.g. results/benchmarks/bench_pretrain.txt)",
    )
    args = parser.parse_args(argv)
    if args.tiny and args.gemm_size == 2048:
        args.gemm_size = 256
    if min(args.steps, args.full_steps) < 1 or args.warmup < 0 or args.threads < 1:
        parser.error("--steps/--full-steps and --threads must be >= 1, --warmup >= 0")
    header = provenance(SCRIPT, argv) if args.out else ()
    with tee_stdout(args.out, header=header):
        start = time.perf_counter()
        report = run(args)
        report["wall_s"] = time.perf_counter() - start
        print(f"\ntotal wall time {report['wall_s']:.1f} s")
        if args.json is not None:
            write_json(args.json, report)


if __name__ == "__main__":
    main()
