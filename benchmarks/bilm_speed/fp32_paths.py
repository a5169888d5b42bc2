"""Every exact fp32 path of :mod:`bilm.lstm`'s inference loop, timed on the same batch.

The paths (:data:`FP32_PATHS`): oneDNN pre-packed GEMMs with the input product added inside the
GEMM or after it, BLAS ``addmm``, and the per-word input table of layer 0 on or off. All are
float32 throughout and differ only in summation order. Each is run once (warm-up, and its max
deviation from the first), then all are timed interleaved, ``--repeats`` rounds on the 64 × 20
batch; the section prints tokens/s per path, the fastest, and whether
:func:`bilm.machine.fastest_fp32_step`'s GEMM-level pick agrees with the whole-model timing.

Run: ``python benchmarks/bench_bilm.py --quick`` (``--no-paths`` skips it).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any

import torch

import bilm.lstm
from benchmarks.bilm_speed.measure import BATCH, LENGTH, forward, time_calls
from bilm import BiLM
from bilm.machine import fastest_fp32_step

#: The exact fp32 paths of :mod:`bilm.lstm`'s inference loop: name → (oneDNN packed weights,
#: input product added inside the packed GEMM, per-word input table of layer 0).
FP32_PATHS: dict[str, tuple[bool, bool, bool]] = {
    "oneDNN packed, add fused": (True, True, True),
    "oneDNN packed, add after": (True, False, True),
    "addmm (BLAS)": (False, False, True),
    "oneDNN packed, add fused, no word table": (True, True, False),
}


def available_fp32_paths() -> dict[str, tuple[bool, bool, bool]]:
    """:data:`FP32_PATHS` this torch build can run; the first is what bilm.lstm runs here."""
    packing, fused = bilm.lstm._PACKING, bilm.lstm._FUSED_ADD
    paths = {
        name: switches
        for name, switches in FP32_PATHS.items()
        if (packing or not switches[0]) and (fused or not switches[1])
    }
    if not packing:  # no oneDNN: BLAS with and without the table
        paths["addmm (BLAS), no word table"] = (False, False, False)
    default = next(name for name, sw in paths.items() if sw == (packing, fused, True))
    return {default: paths[default], **{k: v for k, v in paths.items() if k != default}}


@contextlib.contextmanager
def fp32_path(packing: bool, fused: bool, table: bool) -> Iterator[None]:
    """Run the block on one of :data:`FP32_PATHS`: sets bilm.lstm's switches (module globals
    read at call time; the module itself is unchanged) and restores them after."""
    saved = (bilm.lstm._PACKING, bilm.lstm._FUSED_ADD, bilm.lstm.MAX_TABLE_WORDS)
    bilm.lstm._PACKING = packing and saved[0]
    bilm.lstm._FUSED_ADD = fused and saved[1]
    bilm.lstm.MAX_TABLE_WORDS = saved[2] if table else 0
    try:
        yield
    finally:
        bilm.lstm._PACKING, bilm.lstm._FUSED_ADD, bilm.lstm.MAX_TABLE_WORDS = saved


def measure_fp32_paths(
    model: BiLM, ids: torch.Tensor, tokens: int, repeats: int, report: dict[str, Any]
) -> None:
    """The ``[exact fp32 paths]`` section: every path on the same batch, interleaved.

    Args:
        model: the loaded biLM (fp32).
        ids: the 64 × 20 batch's character ids.
        tokens: its real tokens.
        repeats: interleaved rounds.
        report: the JSON report; ``fp32_paths`` is added.
    """
    paths = available_fp32_paths()
    default = next(iter(paths))
    outputs = {}
    for name, switches in paths.items():  # warm-up (packs weights) and deviation
        with fp32_path(*switches):
            outputs[name] = forward(model, ids)  # (L+1, B, T, 2P)
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, switches in paths.items():
            with fp32_path(*switches):
                samples[name] += time_calls(lambda: forward(model, ids), 1)
    medians = {name: statistics.median(v) for name, v in samples.items()}
    winner = min(medians, key=lambda name: medians[name])
    P, C = model.options.lstm.projection_dim, model.options.lstm.dim
    start = time.perf_counter()
    rule = fastest_fp32_step(rows=BATCH, hidden=P, cell=C)
    rule_s = time.perf_counter() - start
    print(
        f"\n[exact fp32 paths of bilm.lstm: {BATCH} x {LENGTH}, {repeats} interleaved rounds, "
        f"medians; first = what bilm.lstm runs on this machine]"
    )
    print(f"  {'path':<42} {'tokens/s':>9} {'vs first':>9} {'max |diff| to first':>20}")
    for name in paths:
        dev = float((outputs[name] - outputs[default]).abs().max())
        print(
            f"  {name:<42} {tokens / medians[name]:9,.0f} "
            f"{medians[default] / medians[name]:8.2f}x {dev:20.1e}"
        )
    print(f"  fastest here: {winner}")
    whole: str = "addmm"  # the step kernel the whole-model timing prefers (table on)
    if paths[default][0] and medians[default] <= medians.get("addmm (BLAS)", float("inf")):
        whole = "packed"
    agree = "agrees" if whole == rule else "DISAGREES: the rule's GEMM-level timing missed"
    print(
        f"  bilm.machine.fastest_fp32_step() -> {rule!r} (GEMM-level, {rule_s:.2f} s); "
        f"whole-model timing prefers {whole!r}: {agree}"
    )
    report["fp32_paths"] = {
        "samples_s": samples,
        "tokens_per_s": {name: tokens / m for name, m in medians.items()},
        "fastest": winner,
        "fastest_fp32_step": rule,
        "whole_model_step_kernel": whole,
    }
