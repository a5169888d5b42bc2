"""The biLM beside ``benchmarks/reference_bilm.py``, the straightforward implementation.

Two stages, each running the reference in a child process (same thread count) so that its
memory and threads stay out of the measuring process:

* ``[straightforward implementation]``: the reference in float32 numpy, timed
  ``--reference-repeats`` times on the same 64 × 20 batch in the same run: tokens/s, the
  ratio optimised/straightforward (medians) and the max deviation of our outputs from it;
* ``[correctness]``: the reference in float64 on 4 corpus sentences (at most 30 tokens each);
  our max deviation from it, PASS at ≤ 1e-5.

Run: ``python benchmarks/bench_bilm.py --quick`` (``--reference-repeats 0`` skips the timing;
the correctness check always runs). The timing child is ``python benchmarks/bench_bilm.py
--reference-child SPEC.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.bilm_speed.measure import ENTRY, REPO, forward
from benchmarks.bilm_speed.targets import TARGET_MAX_DIFF
from bilm import BiLM, batch_to_ids

REFERENCE_SCRIPT = REPO / "benchmarks" / "reference_bilm.py"


def run_reference(
    options_path: Path, weights_path: Path, sentences: list[list[str]], threads: int
) -> np.ndarray:
    """The reference implementation's layers, computed in a child process (float64)."""
    with tempfile.TemporaryDirectory(prefix="elmo-bench-ref-") as tmp:
        sent_path, out_path = Path(tmp) / "sentences.json", Path(tmp) / "reference.npz"
        sent_path.write_text(json.dumps(sentences), encoding="utf-8")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        cmd = [sys.executable, str(REFERENCE_SCRIPT), str(options_path), str(weights_path)]
        subprocess.run([*cmd, str(sent_path), str(out_path)], check=True, env=env, cwd=REPO)
        with np.load(out_path) as data:
            return data["layers"]


def reference_child(spec_path: Path) -> None:
    """Body of the straightforward-timing child: float32 reference, timed repeats, npz out."""
    from benchmarks.reference_bilm import load_reference_weights, reference_forward

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    options, weights = load_reference_weights(spec["options"], spec["weights"], np.float32)
    samples = []
    layers = np.zeros(0)
    for _ in range(spec["repeats"]):
        start = time.perf_counter()
        layers, _mask = reference_forward(options, weights, spec["sentences"])
        samples.append(time.perf_counter() - start)
    np.savez(spec["out"], layers=layers, samples=np.array(samples))


def time_reference(
    options_path: Path,
    weights_path: Path,
    sentences: list[list[str]],
    threads: int,
    repeats: int,
) -> tuple[list[float], np.ndarray]:
    """Seconds per forward of the float32 straightforward implementation, and its layers."""
    with tempfile.TemporaryDirectory(prefix="elmo-bench-straight-") as tmp:
        spec: dict[str, Any] = {
            "options": str(options_path),
            "weights": str(weights_path),
            "sentences": sentences,
            "repeats": repeats,
            "out": str(Path(tmp) / "straight.npz"),
        }
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        env = dict(
            os.environ,
            OMP_NUM_THREADS=str(threads),
            MKL_NUM_THREADS=str(threads),
            OPENBLAS_NUM_THREADS=str(threads),
        )
        cmd = [sys.executable, str(ENTRY), "--reference-child", str(spec_path)]
        subprocess.run(cmd, check=True, env=env, cwd=REPO)
        with np.load(spec["out"]) as data:
            return [float(x) for x in data["samples"]], data["layers"]


def measure_straightforward(
    model: BiLM,
    files: tuple[Path, Path],
    batch: list[list[str]],
    ids: torch.Tensor,
    tokens_per_s: float,
    args: argparse.Namespace,
    report: dict[str, Any],
) -> tuple[float, float]:
    """The ``[straightforward implementation]`` section.

    Args:
        model: the loaded biLM (fp32).
        files: its ``options.json`` and ``weights.hdf5`` (the child reads them).
        batch: the 64 × 20 sentences (the child times them).
        ids: the batch's character ids.
        tokens_per_s: our median tokens/s on the batch (for the ratio).
        args: the command line (``threads``, ``reference_repeats``).
        report: the JSON report; ``straightforward_64x20`` is added.

    Returns:
        The straightforward implementation's tokens/s and our max deviation from it.
    """
    tokens = sum(len(s) for s in batch)
    exact = forward(model, ids).numpy()  # (L+1, 64, 20, 2P)
    straight_samples, straight = time_reference(
        files[0], files[1], batch, args.threads, args.reference_repeats
    )
    straight_s = statistics.median(straight_samples)
    straight_tps = tokens / straight_s
    if straight.shape == exact.shape:
        straight_diff = float(np.abs(exact - straight).max())
    else:
        straight_diff = float("inf")
    print(
        f"\n[straightforward implementation: benchmarks/reference_bilm.py, float32 numpy, "
        f"child process, {args.threads} threads, same 64 x 20 batch]"
    )
    print(
        f"  forward median {straight_s:.3f} s over {len(straight_samples)} -> "
        f"{straight_tps:,.0f} tokens/s; optimised/straightforward = "
        f"x{tokens_per_s / straight_tps:.2f} (medians, measured in this run)"
    )
    print(f"  max |optimised fp32 - straightforward fp32| over all layers: {straight_diff:.2e}")
    report["straightforward_64x20"] = {
        "samples_s": straight_samples,
        "median_s": straight_s,
        "tokens_per_s": straight_tps,
        "ratio_optimised_over_straightforward": tokens_per_s / straight_tps,
        "max_abs_diff": straight_diff,
    }
    return straight_tps, straight_diff


def check_correctness(
    model: BiLM,
    files: tuple[Path, Path],
    corpus: list[list[str]],
    threads: int,
    report: dict[str, Any],
) -> float:
    """The ``[correctness]`` section: our layers against the float64 reference.

    Args:
        model: the loaded biLM (fp32).
        files: its ``options.json`` and ``weights.hdf5``.
        corpus: the corpus; its first 4 sentences, cut to 30 tokens, are compared.
        threads: the child's thread count.
        report: the JSON report; ``correctness`` is added.

    Returns:
        The max absolute deviation over all layers (``inf`` if the shapes differ).
    """
    subset = [s[:30] for s in corpus[:4]]
    ours = forward(model, batch_to_ids(subset)).double().numpy()
    start = time.perf_counter()
    ref = run_reference(files[0], files[1], subset, threads)
    ref_s = time.perf_counter() - start
    max_diff = float(np.abs(ours - ref).max()) if ours.shape == ref.shape else float("inf")
    print(
        f"\n[correctness: {len(subset)} sentences ({', '.join(str(len(s)) for s in subset)} "
        "tokens) vs benchmarks/reference_bilm.py, float64, separate process]"
    )
    print(
        f"  max |optimised - reference| over all {ours.shape[0]} layers: {max_diff:.2e}  "
        f"{'PASS' if max_diff <= TARGET_MAX_DIFF else 'FAIL'} (<= 1e-5); "
        f"reference took {ref_s:.1f} s"
    )
    report["correctness"] = {"sentences": len(subset), "max_abs_diff": max_diff}
    return max_diff
