"""Lower-precision inference of the biLM on the CPU against fp32: int8 and bf16.

* ``[int8]``: :meth:`bilm.BiLM.quantize_int8` (fbgemm dynamic quantisation of the LSTM and
  highway/projection products; the convolutions stay fp32), timed in ``--repeats`` alternating
  fp32/int8 pairs on the 64 × 20 batch (the packed int8 weights are switched in and out, not
  re-packed); speed-up of the medians, max deviation overall, relative and per layer.
* ``[bf16]``: :meth:`bilm.BiLM.to_precision` ``"bf16"`` (bf16 products, fp32 accumulation and
  state) in ``--pairs`` alternating pairs with fp32, through
  :func:`benchmarks.bench_precision.cpu_bf16`; "not available" on a CPU with neither AMX nor
  AVX-512-bf16.

Run: ``python benchmarks/bench_bilm.py --quick``; ``python benchmarks/bench_precision.py``
measures bf16 alone (and on CUDA).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from benchmarks.bench_precision import cpu_bf16, print_cpu
from benchmarks.bilm_speed.measure import BATCH, forward, time_calls
from bilm import BiLM
from bilm.lstm import cpu_bf16_unit


def int8_slots(model: BiLM) -> list[tuple[torch.nn.Module, str]]:
    """The attributes that hold int8 packed weights (to switch fp32/int8 without repacking)."""
    slots: list[tuple[torch.nn.Module, str]] = [
        (cell, "_int8") for pair in model.lstms for cell in pair
    ]
    return [*slots, (model.char_cnn.highway, "_int8"), (model.char_cnn, "_int8_proj")]


def measure_int8(
    model: BiLM, ids: torch.Tensor, tokens: int, repeats: int, report: dict[str, Any]
) -> tuple[float, float]:
    """The ``[int8]`` section; the model is back in fp32 afterwards.

    Args:
        model: the loaded biLM (fp32).
        ids: the 64 × 20 batch's character ids.
        tokens: its real tokens.
        repeats: alternating fp32/int8 pairs.
        report: the JSON report; ``int8_64x20`` is added.

    Returns:
        The int8 speed-up over fp32 (medians) and the max absolute deviation.
    """
    exact_t = forward(model, ids)  # (L+1, 64, 20, 2P)
    start = time.perf_counter()
    model.quantize_int8()
    quantize_s = time.perf_counter() - start
    slots = int8_slots(model)
    packs = [getattr(module, name) for module, name in slots]

    def use_int8(on: bool) -> None:
        for (module, name), pack in zip(slots, packs, strict=True):
            setattr(module, name, pack if on else None)

    quantized = forward(model, ids)  # warm-up and deviation
    int8_dev = float((quantized - exact_t).abs().max())
    int8_layer_dev = [float(d) for d in (quantized - exact_t).abs().amax(dim=(1, 2, 3))]
    int8_rel = int8_dev / float(exact_t.abs().max())
    fp32_samples: list[float] = []
    int8_samples: list[float] = []
    for _ in range(repeats):  # alternate, so that both see the same machine load
        use_int8(False)
        fp32_samples += time_calls(lambda: forward(model, ids), 1)
        use_int8(True)
        int8_samples += time_calls(lambda: forward(model, ids), 1)
    model.quantize_int8(False)
    fp32_med, int8_med = statistics.median(fp32_samples), statistics.median(int8_samples)
    int8_tps, speedup = tokens / int8_med, fp32_med / int8_med
    print(
        "\n[int8: BiLM.quantize_int8 (fbgemm dynamic quantisation: LSTM input/state/projection "
        "and highway/projection GEMMs; convolutions fp32), 64 x 20, interleaved with fp32]"
    )
    print(f"  quantize_int8: {quantize_s:.2f} s")
    print(
        f"  fp32 median {fp32_med:.3f} s ({tokens / fp32_med:,.0f} tokens/s), int8 median "
        f"{int8_med:.3f} s ({int8_tps:,.0f} tokens/s): speed-up x{speedup:.2f} "
        f"over {repeats} alternating pairs"
    )
    print(
        f"  max |int8 - fp32|: {int8_dev:.3e} ({int8_rel:.2%} of max |fp32|); per layer "
        + ", ".join(f"{d:.2e}" for d in int8_layer_dev)
    )
    report["int8_64x20"] = {
        "fp32_samples_s": fp32_samples,
        "int8_samples_s": int8_samples,
        "int8_tokens_per_s": int8_tps,
        "speedup": speedup,
        "max_abs_dev": int8_dev,
        "max_abs_dev_per_layer": int8_layer_dev,
        "max_abs_dev_relative": int8_rel,
    }
    return speedup, int8_dev


def measure_bf16(
    model: BiLM, ids: torch.Tensor, args: argparse.Namespace, report: dict[str, Any]
) -> dict[str, Any] | None:
    """The ``[bf16]`` section.

    Args:
        model: the loaded biLM (left in fp32).
        ids: the 64 × 20 batch's character ids.
        args: the command line (``pairs``).
        report: the JSON report; ``bf16_64x20`` is added.

    Returns:
        :func:`benchmarks.bench_precision.cpu_bf16`'s figures, or ``None`` without a bf16 unit.
    """
    bf16_unit = cpu_bf16_unit()
    print(f"\n[bf16: BiLM.to_precision('bf16'), fp32 accumulation and state; unit: {bf16_unit}]")
    bf16: dict[str, Any] | None = None
    if bf16_unit is None:
        print("  not available: this CPU has neither AMX nor AVX-512-bf16")
    else:
        bf16 = cpu_bf16(model, ids, args.pairs)
        print_cpu(bf16, BATCH)
    report["bf16_64x20"] = {"unit": bf16_unit, **(bf16 or {})}
    return bf16
