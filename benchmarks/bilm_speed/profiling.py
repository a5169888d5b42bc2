"""Where the biLM's forward time goes: the char CNN (highway separately) against each LSTM.

``--profile`` adds the ``[profile]`` section: forward hooks on the char CNN, its highway layers
and each LSTM cell time ``--repeats`` forwards of the 64 × 20 batch (means), the rest is "other"
(ids, de-duplication, stacking); then one forward under :mod:`torch.profiler` lists the top ops
by self CPU time. Run: ``python benchmarks/bench_bilm.py --quick --profile``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import torch

from benchmarks.bilm_speed.measure import forward, time_calls
from bilm import BiLM


def profile_split(model: BiLM, ids: torch.Tensor, repeats: int) -> dict[str, Any]:
    """Wall time inside the char CNN (highway separately) and each LSTM, via forward hooks.

    Args:
        model: the loaded biLM.
        ids: the batch's character ids.
        repeats: timed forwards (the split is their mean).

    Returns:
        Seconds per forward: ``forward_s``, ``char_cnn_s``, ``highway_s``, ``lstm_s``,
        ``other_s``, ``per_module_s`` (every watched module), and ``op_table`` (the top ops
        of one forward under :mod:`torch.profiler`, as text).
    """
    totals: dict[str, float] = defaultdict(float)
    starts: dict[str, float] = {}
    handles = []

    def watch(module: torch.nn.Module, name: str) -> None:
        def pre(*_: Any) -> None:
            starts[name] = time.perf_counter()

        def post(*_: Any) -> None:
            totals[name] += time.perf_counter() - starts[name]

        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))

    watch(model.char_cnn, "char CNN (all)")
    watch(model.char_cnn.highway, "char CNN: highway")
    for layer_index, pair in enumerate(model.lstms):
        for d, cell in enumerate(pair):
            watch(cell, f"LSTM layer {layer_index} {'fwd' if d == 0 else 'bwd'}")
    try:
        total = sum(time_calls(lambda: forward(model, ids), repeats))
    finally:
        for handle in handles:
            handle.remove()
    split = {name: seconds / repeats for name, seconds in totals.items()}
    lstm = sum(v for k, v in split.items() if k.startswith("LSTM"))
    forward_s, char_cnn_s = total / repeats, split["char CNN (all)"]
    result: dict[str, Any] = {
        "forward_s": forward_s,
        "char_cnn_s": char_cnn_s,
        "highway_s": split["char CNN: highway"],
        "lstm_s": lstm,
        "per_module_s": split,
        "other_s": forward_s - char_cnn_s - lstm,
    }

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        forward(model, ids)
    result["op_table"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return result


def print_profile(model: BiLM, ids: torch.Tensor, repeats: int, report: dict[str, Any]) -> None:
    """The ``[profile]`` section (:func:`profile_split`); ``profile`` is added to ``report``."""
    prof = profile_split(model, ids, repeats)
    total = prof["forward_s"]
    print(f"\n[profile: 64 x 20 batch, forward hooks, mean of {repeats}]")
    print(f"  forward (with hooks)          {total:7.3f} s")
    for label, key in (
        ("char CNN (dedup'd tokens)", "char_cnn_s"),
        ("  of which highway", "highway_s"),
        ("LSTM layers (4 cells)", "lstm_s"),
        ("other (ids, unique, stack)", "other_s"),
    ):
        print(f"  {label:<29} {prof[key]:7.3f} s  {prof[key] / total:6.1%}")
    for name, seconds in prof["per_module_s"].items():
        if name.startswith("LSTM"):
            print(f"    {name:<27} {seconds:7.3f} s")
    print("  top ops (torch.profiler, one forward, by self CPU time):")
    print("\n".join("    " + line for line in prof["op_table"].splitlines()))
    report["profile"] = {k: v for k, v in prof.items() if k != "op_table"}
