"""The machine's fp32 GEMM roofline, measured in the biLM speed benchmark's own run.

GFLOP/s of the matrix products the biLM runs (an F × F × F square, the LSTM step's
``64 × P × 4C`` and the LSTM input's ``positions × P × 4C``), on the benchmark's threads, with
both fp32 GEMMs the biLM can use: ``torch.mm`` (MKL/OpenBLAS) and, where oneDNN is present,
:func:`bilm.lstm.linear` (what its large inference products run). The roofline is the fastest
median; the 64 × 20 and natural-text stages report their FLOP rate as a fraction of it. Run:
``python benchmarks/bench_bilm.py --quick`` (1 GFLOP a sample, 3 samples, on the small model's
shapes); the full run does 16 GFLOP a sample, at least 5 samples.
"""

from __future__ import annotations

import argparse
from typing import Any

import bilm.lstm
from benchmarks.bilm_speed.measure import BATCH, LENGTH
from benchmarks.common import gemm_gflops
from bilm import BiLMOptions


def measure_roofline(
    options: BiLMOptions, args: argparse.Namespace, report: dict[str, Any]
) -> tuple[float, float]:
    """The ``[fp32 GEMM roofline]`` section.

    Args:
        options: the benchmarked architecture (its shapes are timed).
        args: the command line (``quick``, ``repeats``).
        report: the JSON report; ``gemm_gflops`` is added.

    Returns:
        The roofline: the highest median GFLOP/s and the highest best GFLOP/s.
    """
    P, C, F = options.lstm.projection_dim, options.lstm.dim, options.char_cnn.n_filters
    positions = BATCH * (LENGTH + 2)
    shapes = {
        f"{F}x{F}x{F}": (F, F, F),
        f"{BATCH}x{P}x{4 * C} (LSTM step)": (BATCH, P, 4 * C),
        f"{positions}x{P}x{4 * C} (LSTM input)": (positions, P, 4 * C),
    }
    work, gemm_samples = (1e9, 3) if args.quick else (16e9, max(5, args.repeats))
    # Both fp32 GEMMs the biLM can run: torch.mm (MKL/OpenBLAS) and, where oneDNN is present,
    # bilm.lstm.linear (what its large products run): the roofline is the faster of the two.
    kernels = {"torch.mm": "mm"}
    if bilm.lstm._PACKING:
        kernels["oneDNN (bilm.lstm.linear)"] = "onednn"
    gemm = {
        f"{name}, {label}": gemm_gflops(*shape, samples=gemm_samples, work=work, kernel=kernel)
        for name, shape in shapes.items()
        for label, kernel in kernels.items()
    }
    roofline = max(median for median, _ in gemm.values())
    roofline_best = max(best for _, best in gemm.values())
    print("\n[fp32 GEMM roofline, GFLOP/s]                                       median     best")
    for name, (median, best) in gemm.items():
        print(f"  {name:<63} {median:8.1f} {best:8.1f}")
    print(f"  {'roofline (highest of these)':<63} {roofline:8.1f} {roofline_best:8.1f}")
    report["gemm_gflops"] = {name: {"median": a, "best": b} for name, (a, b) in gemm.items()}
    report["gemm_gflops"]["roofline"] = {"median": roofline, "best": roofline_best}
    return roofline, roofline_best
