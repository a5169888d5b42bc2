"""bf16 inference of the full-size biLM, and the GPU recurrent loop (docs/performance.md,
"Precision and the GPU loop").

Usage::

    python benchmarks/bench_precision.py [--device cpu|cuda] [--threads 2] [--repeats 5]
                                         [--batches 64] [--seed 0] [--force] [--json PATH]
    python benchmarks/bench_precision.py --device cuda --batches 64,512   # the GPU figures

The model is the published architecture (``BiLMOptions()``: 2 × 4096/512, 2,048-filter CNN, 2
highway layers) with random weights (``init_weights(seed)``), so nothing is downloaded; the
batches are ``B × 20`` tokens of the bundled DEMO sentences (``experiments/analyses/demo_data``),
state ``reset``, eval, ``torch.inference_mode``, TF32 off (:func:`bilm.devices.exact_fp32`).

* **CPU** (``--device cpu``): :meth:`BiLM.to_precision` ``"bf16"`` against ``"fp32"``, timed in
  alternating pairs (medians; the speed-up is the median of the per-pair ratios), and the largest
  deviation of the bf16 outputs from the fp32 ones, absolute and as a share of max |fp32|, per
  layer. Targets: ≥ 2× at ≤ 2 %. A CPU without a native bf16 unit (neither AMX nor
  AVX-512-bf16, :func:`bilm.lstm.cpu_bf16_unit`) gets "not available" (``--force`` times it
  anyway: oneDNN then emulates bf16).
* **CUDA** (``--device cuda``): tokens/s for fp32 and bf16, each with and without CUDA graphs
  (:meth:`BiLM.use_cuda_graphs`), at every ``--batches`` size; the deviation of each from fp32
  without graphs on the same device (graphs replay the same kernels: 0 expected). Targets:
  fp32 with graphs at 64 × 20 ≥ 3 × 42,339 tokens/s (the H200 figure before graphs,
  ``results/benchmarks/gpu_smoke.txt``), bf16 ≥ 1.3 × fp32 at 512 × 20 (both with graphs).
  ``scripts/gpu_smoke.py`` prints the same table (:func:`gpu_figures`).

Figures are printed with PASS/MISS, never asserted. On a shared machine (other processes on the
cores) the CPU times are noisy: the alternating pairs keep the ratio fair, not the absolutes.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import add_standard_arguments, cpu_name, write_json  # noqa: E402
from bilm import BiLM, BiLMOptions, batch_to_ids, init_weights  # noqa: E402
from bilm.devices import exact_fp32, resolve_device  # noqa: E402
from bilm.lstm import cpu_bf16_unit  # noqa: E402

#: Tokenised public-domain sentences bundled with the probes' DEMO data (word, tag per line).
SENTENCES = REPO / "experiments" / "analyses" / "demo_data" / "pos_train.conll.gz"
LENGTH = 20
#: Targets (docs/performance.md, "Measure it").
TARGET_CPU_SPEEDUP = 2.0
TARGET_CPU_DEVIATION = 0.02
#: 64 × 20 fp32 tokens/s on an H200 before CUDA graphs (results/benchmarks/gpu_smoke.txt).
GPU_FP32_BEFORE = 42_339.0
TARGET_GPU_GRAPH_SPEEDUP = 3.0
TARGET_GPU_BF16_SPEEDUP = 1.3


def demo_sentences(min_tokens: int = 1) -> list[list[str]]:
    """The bundled DEMO sentences (first column of the CoNLL file) with at least ``min_tokens``."""
    sentences: list[list[str]] = []
    current: list[str] = []
    with gzip.open(SENTENCES, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                current.append(line.split()[0])
            elif current:
                sentences.append(current)
                current = []
    if current:
        sentences.append(current)
    return [s for s in sentences if len(s) >= min_tokens]


def fixed_batch(rows: int, length: int = LENGTH) -> list[list[str]]:
    """``rows`` DEMO sentences of exactly ``length`` tokens (long ones cut, repeated as needed)."""
    long_enough = demo_sentences(min_tokens=length)
    repeated = long_enough * (rows // max(len(long_enough), 1) + 1)
    return [s[:length] for s in repeated[:rows]]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device) -> float:
    """Seconds of one call (synchronised on CUDA)."""
    _sync(device)
    started = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - started


def run_layers(model: BiLM, ids: torch.Tensor) -> torch.Tensor:
    """One inference pass; ``(L+1, B, T, 2P)`` float32."""
    with torch.inference_mode(), exact_fp32():
        return model(ids).layers


def deviation(got: torch.Tensor, expected: torch.Tensor) -> dict[str, Any]:
    """Max |got − expected| overall, per layer, and as a share of max |expected|."""
    diff = (got.float() - expected).abs()
    top = float(expected.abs().max())
    worst = float(diff.max())
    return {
        "max_abs_dev": worst,
        "max_abs_dev_per_layer": [float(d) for d in diff.amax(dim=(1, 2, 3))],
        "max_abs_fp32": top,
        "relative": worst / top if top > 0 else 0.0,
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# ---------------------------------------------------------------------------------- CPU
def cpu_bf16(model: BiLM, ids: torch.Tensor, repeats: int) -> dict[str, Any]:
    """bf16 against fp32 on the CPU: alternating timed pairs and the deviation.

    Args:
        model: a float32 biLM on the CPU (left in fp32).
        ids: ``(B, T, 50)`` char ids.
        repeats: timed pairs.

    Returns:
        Medians, per-pair speed-ups and their median, tokens/s and :func:`deviation`.
    """
    device = torch.device("cpu")
    tokens = int((ids > 0).any(-1).sum())
    expected = run_layers(model.to_precision("fp32"), ids)  # also the fp32 warm-up
    got = run_layers(model.to_precision("bf16"), ids)  # also packs the bf16 operands
    if got.dtype != torch.float32:
        raise AssertionError(f"bf16 outputs must be float32, got {got.dtype}")
    fp32_s, bf16_s = [], []
    for _ in range(repeats):
        model.to_precision("fp32")
        fp32_s.append(timed(lambda: run_layers(model, ids), device))
        model.to_precision("bf16")  # operands are remade lazily: the first bf16 call pays it
        run_layers(model, ids)
        bf16_s.append(timed(lambda: run_layers(model, ids), device))
    model.to_precision("fp32")
    ratios = [a / b for a, b in zip(fp32_s, bf16_s, strict=True)]
    return {
        "tokens": tokens,
        "fp32_s": fp32_s,
        "bf16_s": bf16_s,
        "fp32_tokens_per_s": tokens / statistics.median(fp32_s),
        "bf16_tokens_per_s": tokens / statistics.median(bf16_s),
        "speedup_per_pair": ratios,
        "speedup": statistics.median(ratios),
        **deviation(got, expected),
    }


def print_cpu(result: dict[str, Any], rows: int) -> None:
    """The bf16 lines of a CPU run (:func:`cpu_bf16`), with PASS/MISS."""
    print(
        f"  {rows}x{LENGTH} fp32 {result['fp32_tokens_per_s']:,.0f} tokens/s, bf16 "
        f"{result['bf16_tokens_per_s']:,.0f} tokens/s: speed-up x{result['speedup']:.2f} "
        f"(per pair {', '.join(f'{r:.2f}' for r in result['speedup_per_pair'])})"
    )
    print(
        f"  max |bf16 - fp32| {result['max_abs_dev']:.3e} = {result['relative']:.2%} of max "
        f"|fp32| ({result['max_abs_fp32']:.3f}); per layer "
        + ", ".join(f"{d:.2e}" for d in result["max_abs_dev_per_layer"])
        + "; outputs float32"
    )
    print(
        f"  {verdict(result['speedup'] >= TARGET_CPU_SPEEDUP)} bf16 speed-up >= "
        f"x{TARGET_CPU_SPEEDUP:.0f}; {verdict(result['relative'] <= TARGET_CPU_DEVIATION)} "
        f"deviation <= {TARGET_CPU_DEVIATION:.0%} of max |fp32|"
    )


# ---------------------------------------------------------------------------------- GPU
def gpu_figures(
    model: BiLM, device: torch.device, batches: Sequence[int], repeats: int
) -> dict[str, Any]:
    """Tokens/s of fp32 and bf16, with and without CUDA graphs, per batch size, on ``device``.

    Args:
        model: a float32 biLM (moved to ``device``; left in fp32 without graphs).
        device: usually CUDA (on the CPU the graph rows run the same loop uncaptured).
        batches: rows per batch (``rows × 20`` tokens).
        repeats: timed calls per figure (median).

    Returns:
        ``{"64x20": {"fp32": {...}, "fp32+graphs": {...}, "bf16": ..., "bf16+graphs": ...}}``
        with ``tokens_per_s`` and the :func:`deviation` from fp32 without graphs.
    """
    model = model.to(device)
    report: dict[str, Any] = {}
    for rows in batches:
        ids = batch_to_ids(fixed_batch(rows)).to(device)  # (rows, 20, 50)
        tokens = int((ids > 0).any(-1).sum())
        figures: dict[str, Any] = {}
        reference: torch.Tensor | None = None
        for precision in ("fp32", "bf16"):
            for graphs in (False, True):
                model.to_precision(precision).use_cuda_graphs(graphs)
                out = run_layers(model, ids).float()  # warm-up; the capture on the graph rows
                run_layers(model, ids)
                call = lambda ids=ids: run_layers(model, ids)  # noqa: E731
                times = [timed(call, device) for _ in range(repeats)]
                if reference is None:
                    reference = out
                name = precision + ("+graphs" if graphs else "")
                figures[name] = {
                    "tokens_per_s": tokens / statistics.median(times),
                    "seconds": times,
                    **deviation(out, reference),
                }
                del out
        model.to_precision("fp32").use_cuda_graphs(False)
        report[f"{rows}x{LENGTH}"] = figures
    return report


def print_gpu(report: dict[str, Any], repeats: int) -> list[str]:
    """The GPU table of :func:`gpu_figures` and its targets; returns the PASS/MISS lines."""
    print(f"  {'batch':<7} {'arithmetic':<12} {'tokens/s':>12}  max dev from fp32 (share)")
    for shape, figures in report.items():
        for name, f in figures.items():
            print(
                f"  {shape:<7} {name:<12} {f['tokens_per_s']:>12,.0f}  {f['max_abs_dev']:.2e} "
                f"({f['relative']:.2%})  median of {repeats}"
            )
    lines = []
    small = report.get(f"64x{LENGTH}")
    if small is not None:
        rate = small["fp32+graphs"]["tokens_per_s"]
        target = TARGET_GPU_GRAPH_SPEEDUP * GPU_FP32_BEFORE
        lines.append(
            f"  {verdict(rate >= target)} 64x20 fp32 with graphs >= {target:,.0f} tokens/s "
            f"(x{TARGET_GPU_GRAPH_SPEEDUP:.0f} the H200's {GPU_FP32_BEFORE:,.0f}): {rate:,.0f} "
            f"(x{rate / GPU_FP32_BEFORE:.2f})"
        )
    large = report.get(f"512x{LENGTH}")
    if large is not None:
        ratio = large["bf16+graphs"]["tokens_per_s"] / large["fp32+graphs"]["tokens_per_s"]
        lines.append(
            f"  {verdict(ratio >= TARGET_GPU_BF16_SPEEDUP)} 512x20 bf16 >= "
            f"x{TARGET_GPU_BF16_SPEEDUP} fp32 (both with graphs): x{ratio:.2f}"
        )
    for line in lines:
        print(line)
    return lines


# ---------------------------------------------------------------------------------- main
def run(args: argparse.Namespace) -> dict[str, Any]:
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",") if b]
    report: dict[str, Any] = {
        "device": str(device),
        "cpu": cpu_name(),
        "bf16_unit": cpu_bf16_unit(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "seed": args.seed,
    }
    print(
        f"bench_precision: torch {torch.__version__}, {device}, CPU {report['cpu']}, "
        f"{report['threads']} thread(s); CPU bf16 unit: {report['bf16_unit'] or 'none'}"
    )
    model = init_weights(BiLM(BiLMOptions()), seed=args.seed).eval()  # full size, random
    if device.type == "cuda":
        print(f"\n[GPU: {torch.cuda.get_device_name(device)}; fp32 / bf16, CUDA graphs off / on]")
        report["gpu"] = gpu_figures(model, device, batches, args.repeats)
        report["targets"] = print_gpu(report["gpu"], args.repeats)
        return report
    print("\n[CPU bf16: BiLM.to_precision('bf16') against fp32, alternating pairs]")
    if report["bf16_unit"] is None and not args.force:
        print(
            "  bf16: not available (this CPU has neither AMX nor AVX-512-bf16; --force times "
            "oneDNN's emulation anyway)"
        )
        report["cpu_bf16"] = "not available"
        return report
    report["cpu_bf16"] = {}
    for rows in batches:
        ids = batch_to_ids(fixed_batch(rows))  # (rows, 20, 50)
        result = cpu_bf16(model, ids, args.repeats)
        print_cpu(result, rows)
        report["cpu_bf16"][f"{rows}x{LENGTH}"] = result
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_standard_arguments(parser, threads=2)
    parser.add_argument("--device", default="cpu", help="cpu (bf16 figures) or cuda[:N] (GPU)")
    parser.add_argument("--repeats", type=int, default=5, help="timed pairs / calls per figure")
    parser.add_argument(
        "--batches", default=None, help="rows per batch, comma-separated (CPU 64; CUDA 64,512)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random weights (init_weights)")
    parser.add_argument(
        "--force", action="store_true", help="time bf16 on a CPU without a native bf16 unit"
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.batches is None:
        args.batches = "64,512" if args.device.startswith("cuda") else "64"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("bench_precision: CUDA is not available; use --device cpu", file=sys.stderr)
        sys.exit(2)
    report = run(args)
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
