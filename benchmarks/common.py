"""Measuring pieces shared by the benchmarks: cost model, GEMM roofline, memory, machine, JSON."""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from bilm import BiLMOptions, CharCNNOptions
from bilm.devices import synchronize


def cnn_macs_per_token(cnn: CharCNNOptions, projection_dim: int) -> int:
    """Multiply-adds of the char CNN for one token: convolutions, highway layers, projection."""
    width = cnn.max_characters_per_token
    conv = sum((width - w + 1) * w * cnn.embedding_dim * n for w, n in cnn.filters)
    f = cnn.n_filters
    highway = cnn.n_highway * f * 2 * f
    projection = f * projection_dim if f != projection_dim else 0
    return conv + highway + projection


def lstm_macs_per_cell_step(options: BiLMOptions) -> int:
    """Multiply-adds of one LSTM cell for one row and time step: ``P·4C + H·4C (+ C·P)``."""
    P, C = options.lstm.projection_dim, options.lstm.dim
    hidden = P if P < C else C
    return P * 4 * C + hidden * 4 * C + (C * P if P < C else 0)


def gemm_gflops(
    m: int,
    k: int,
    n: int,
    samples: int = 5,
    work: float = 2e9,
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[float, float]:
    """``torch.mm`` throughput of ``(m×k)·(k×n)`` in GFLOP/s: (median, best) of samples.

    Each sample repeats the product until about ``work`` FLOP are done (small shapes loop more).
    ``device``/``dtype`` default to fp32 on the CPU; on CUDA each sample waits for the GPU.
    """
    device = device if device is not None else torch.device("cpu")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=gen).to(device, dtype)
    b = torch.randn(k, n, generator=gen).to(device, dtype)
    out = torch.empty(m, n, device=device, dtype=dtype)
    flop = 2.0 * m * k * n
    inner = max(1, round(work / flop))
    torch.mm(a, b, out=out)  # warm-up
    times = []
    for _ in range(samples):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b, out=out)
        synchronize(device)
        times.append((time.perf_counter() - start) / inner)
    return flop / statistics.median(times) / 1e9, flop / min(times) / 1e9


def peak_rss_bytes() -> int:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_name() -> str:
    """The CPU model and its vector units (:func:`bilm.devices.cpu_model`)."""
    from bilm.machine import cpu_model

    return cpu_model()


def machine_info() -> dict[str, Any]:
    """CPU, logical CPUs, torch threads, torch and Python versions (call after set_num_threads)."""
    return {
        "cpu": cpu_name(),
        "logical_cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def write_json(path: Path, report: dict[str, Any]) -> None:
    """Write a benchmark's figures as indented JSON (creating the folder) and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"JSON written to {path}")


def add_standard_arguments(parser: argparse.ArgumentParser, threads: int) -> None:
    """``--threads`` (``torch.set_num_threads``, default ``threads``) and ``--json PATH``."""
    parser.add_argument(
        "--threads", type=int, default=threads, help=f"torch.set_num_threads ({threads})"
    )
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
