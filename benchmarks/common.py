"""Measuring pieces shared by the benchmarks: cost model, GEMM roofline, memory, machine, JSON,
the provenance header (commit, CPU, command) of a benchmark's `--out` file."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

import torch

import bilm.lstm
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
    kernel: str = "mm",
) -> tuple[float, float]:
    """GEMM throughput of ``(m×k)·(k×n)`` in GFLOP/s: (median, best) of samples.

    Each sample repeats the product until about ``work`` FLOP are done (small shapes loop more).
    ``device``/``dtype`` default to fp32 on the CPU; on CUDA each sample waits for the GPU.
    ``kernel``: ``"mm"`` (``torch.mm``: MKL/OpenBLAS on the CPU) or ``"onednn"``
    (:func:`bilm.lstm.linear` with a zero bias: the oneDNN fp32 GEMM that the biLM's large
    inference products run on the CPU).
    """
    if kernel not in ("mm", "onednn"):
        raise ValueError(f"kernel must be 'mm' or 'onednn', got {kernel!r}")
    device = device if device is not None else torch.device("cpu")
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=gen).to(device, dtype)
    b = torch.randn(k, n, generator=gen).to(device, dtype)
    out = torch.empty(m, n, device=device, dtype=dtype)
    zero = torch.zeros(n, device=device, dtype=dtype)

    def product() -> None:
        if kernel == "mm":
            torch.mm(a, b, out=out)  # (m, n)
        else:
            with torch.no_grad():
                bilm.lstm.linear(a, b, zero)  # (m, n)

    flop = 2.0 * m * k * n
    inner = max(1, round(work / flop))
    product()  # warm-up
    times = []
    for _ in range(samples):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(inner):
            product()
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
    """CPU (model, units, kind), logical CPUs, torch threads and dispatch level, the OpenMP
    environment, torch and Python versions (call after set_num_threads)."""
    from bilm.machine import cpu_features, cpu_kind

    features = cpu_features()
    return {
        "cpu": cpu_name(),
        "kind": cpu_kind(features),
        "features": features.to_dict(),
        "torch_cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
        "logical_cpus": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


class _Tee:
    """A text stream that writes to several (``sys.stdout`` and a file)."""

    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


#: The repository root: provenance headers name the commit of this checkout.
REPO = Path(__file__).resolve().parents[1]


def git_commit(paths: Sequence[str] = ("bilm", "benchmarks")) -> str:
    """The checkout's commit, and whether ``paths`` hold uncommitted changes to tracked files.

    Args:
        paths: the folders (relative to the repository) whose code the benchmark runs.

    Returns:
        ``"<40-hex sha>"``, ``"<sha>, with uncommitted changes to bilm/"`` (the changed folders
        among ``paths``), or ``"unknown (not a git checkout)"``.
    """
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", *paths],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    dirty = [p for p in paths if any(line[3:].startswith(f"{p}/") for line in changed)]
    if not dirty:
        return sha
    return f"{sha}, with uncommitted changes to {', '.join(f'{p}/' for p in dirty)}"


def provenance(
    script: str, argv: Sequence[str] | None, paths: Sequence[str] = ("bilm", "benchmarks")
) -> list[str]:
    """The first lines of a benchmark's ``--out`` file: the commit, the CPU, the command.

    Args:
        script: the benchmark's path relative to the repository (``benchmarks/bench_bilm.py``).
        argv: its arguments (``None``: ``sys.argv[1:]``), as given (``{kind}`` unexpanded).
        paths: the folders whose uncommitted changes the commit line names (:func:`git_commit`).

    Returns:
        ``commit: ...``, ``CPU: ...`` (model and vector units, :func:`cpu_name`) and
        ``command: python SCRIPT ARGS`` (shell-quoted).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return [
        f"commit: {git_commit(paths)}",
        f"CPU: {cpu_name()}",
        f"command: {shlex.join(['python', script, *args])}",
    ]


@contextlib.contextmanager
def tee_stdout(path: Path | None, header: Sequence[str] = ()) -> Iterator[None]:
    """Copy everything printed inside to ``path`` (created with its folder) as well as stdout.

    ``None``: nothing is copied. Child processes' own output is not captured (they inherit the
    real stdout); the benchmarks print their children's figures themselves.

    Args:
        path: the file, or ``None``.
        header: lines written at the top of the file only, then a blank line (stdout does not
            get them): :func:`provenance`.
    """
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        if header:
            handle.write("\n".join(header) + "\n\n")
        real = sys.stdout
        sys.stdout = _Tee(real, handle)
        try:
            yield
        finally:
            sys.stdout = real
    print(f"text output written to {path}")


#: Bodies of the background-load processes (:func:`background_load`): one busy thread each.
LOAD_PROGRAMS = {
    "spin": "while True:\n    pass\n",
    "gemm": (
        "import numpy as np\na = np.ones((384, 384), dtype=np.float32)\nwhile True:\n    a @ a\n"
    ),
}


@contextlib.contextmanager
def background_load(kind: str = "spin", nice: int = 0) -> Iterator[subprocess.Popen[bytes]]:
    """One busy single-threaded process for the duration of the block, then killed.

    Args:
        kind: ``"spin"`` (a Python loop: one core's integer pipeline) or ``"gemm"`` (a numpy
            384² float32 matrix product in a loop, one BLAS thread: also uses the caches).
        nice: the load's niceness (0 = the same priority as the benchmark).

    Raises:
        ValueError: an unknown ``kind`` or a negative ``nice``.
    """
    if kind not in LOAD_PROGRAMS:
        raise ValueError(f"load kind {kind!r}: expected one of {', '.join(LOAD_PROGRAMS)}")
    if nice < 0:
        raise ValueError(f"load niceness must be >= 0, got {nice}")
    one = "1"
    env = dict(os.environ, OMP_NUM_THREADS=one, MKL_NUM_THREADS=one, OPENBLAS_NUM_THREADS=one)
    cmd = [sys.executable, "-c", LOAD_PROGRAMS[kind]]
    if nice > 0:
        cmd = ["nice", "-n", str(nice), *cmd]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


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
