"""Inference tokens/s of the biLM on the CPU: the fixed 64 × 20 batch and natural text.

* ``[batch 64 x 20]``: a warm-up call, then ``--repeats`` forwards (eval, no_grad, state reset,
  character ids computed beforehand) of 64 corpus sentences cut to 20 tokens; tokens/s (median
  and best), FLOP/token (:mod:`~benchmarks.bilm_speed.cost`), the executed FLOP rate as a
  fraction of the run's GEMM roofline, the floor-bound ceiling, and the ratio to allennlp
  2.10.1's 570 tokens/s measured on another machine (docs/performance.md).
* ``[natural text]``: the first ``--natural`` corpus sentences, one pass, in the length-sorted
  token-budget batches that ``python -m bilm embed`` plans, with its token cache.

Run: ``python benchmarks/bench_bilm.py --quick`` (small model, 3 repeats, 64 natural sentences);
``--natural 0`` skips the natural-text pass.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks.bilm_speed.cost import batch_cost, sum_costs
from benchmarks.bilm_speed.measure import BATCH, LENGTH, fmt_bytes, forward, time_calls
from benchmarks.bilm_speed.targets import ALLENNLP_TOKENS_PER_S, TARGET_FP32_TOKENS_PER_S
from benchmarks.common import peak_rss_bytes
from bilm import BiLM, batch_to_ids
from bilm.embed import TOKEN_CACHE_WORDS, TOKENS_PER_ROW, Sentence, plan_batches


@dataclass
class FixedBatch:
    """The 64 × 20 batch and what later stages and the targets take from its timing.

    Attributes:
        sentences: the 64 sentences of 20 tokens.
        ids: their character ids ``(64, 22, 50)``.
        tokens: real tokens (1,280).
        tokens_per_s: median tokens/s.
        roofline_fraction: executed GFLOP/s (median) over the roofline.
        ceiling_tokens_per_s: the floor-bound tokens/s ceiling at the roofline.
        peak_rss_bytes: peak RSS after the timed forwards.
    """

    sentences: list[list[str]]
    ids: torch.Tensor
    tokens: int
    tokens_per_s: float
    roofline_fraction: float
    ceiling_tokens_per_s: float
    peak_rss_bytes: int


def measure_fixed_batch(
    model: BiLM,
    batch: list[list[str]],
    source: str,
    roofline: tuple[float, float],
    args: argparse.Namespace,
    report: dict[str, Any],
) -> FixedBatch:
    """The ``[batch 64 x 20]`` section.

    Args:
        model: the loaded biLM.
        batch: the 64 × 20 sentences (:func:`benchmarks.bilm_speed.text.fixed_batch`).
        source: where the text came from, as printed.
        roofline: the run's GEMM roofline (median, best) in GFLOP/s.
        args: the command line (``repeats``).
        report: the JSON report; ``batch_64x20`` is added.
    """
    ids = batch_to_ids(batch)
    roofline_median, roofline_best = roofline
    warm_s = time_calls(lambda: forward(model, ids), 1)[0]
    samples = time_calls(lambda: forward(model, ids), args.repeats)
    median_s, best_s = statistics.median(samples), min(samples)
    rss_after_batch = peak_rss_bytes()
    spread = max(samples) / best_s
    cost = batch_cost(batch, model.options)
    tokens = int(cost["tokens"])
    tps = tokens / median_s
    executed_gflops = cost["executed_flop"] / median_s / 1e9
    fraction = executed_gflops / roofline_median
    fraction_best = cost["executed_flop"] / best_s / 1e9 / roofline_best
    print(
        f"\n[batch {BATCH} x {LENGTH}: {tokens:,} tokens, {cost['positions']:,} positions "
        f"with boundaries, {cost['distinct']:,} distinct tokens]"
    )
    print(f"  text: {source}")
    print(
        f"  first (warm-up) call {warm_s:.3f} s; forward median {median_s:.3f} s, "
        f"best {best_s:.3f} s over {args.repeats}"
    )
    print(f"  tokens/s: median {tps:,.0f}, best {tokens / best_s:,.0f}")
    if spread > 1.3:
        print(f"  NOTE: noisy machine, slowest/fastest repeat = {spread:.1f}x")
    print(
        f"  vs allennlp 2.10.1 ({ALLENNLP_TOKENS_PER_S:.0f} tokens/s, measured on another "
        f"2-core machine, docs/performance.md): x{tps / ALLENNLP_TOKENS_PER_S:.2f}"
    )
    nominal_tok = cost["nominal_flop"] / tokens
    executed_tok = cost["executed_flop"] / tokens
    floor_tok = cost["floor_flop"] / tokens
    ceiling_tps = roofline_median * 1e9 / floor_tok
    needed_gflops = TARGET_FP32_TOKENS_PER_S * floor_tok / 1e9
    print(
        f"  FLOP/token: nominal {nominal_tok / 1e6:,.1f} M (every product at every position), "
        f"executed {executed_tok / 1e6:,.1f} M (char CNN and layer 0's input products once per "
        f"distinct token)"
    )
    print(
        f"  floor: the context-dependent LSTM products alone are {floor_tok / 1e6:,.1f} "
        f"MFLOP/token; at this run's GEMM roofline ({roofline_median:,.1f} GFLOP/s) no exact fp32 "
        f"implementation exceeds {ceiling_tps:,.0f} tokens/s; "
        f"{TARGET_FP32_TOKENS_PER_S:,.0f} tokens/s needs >= {needed_gflops:,.1f} GFLOP/s "
        "sustained"
    )
    print(
        f"  executed {executed_gflops:,.1f} GFLOP/s = {fraction:.1%} of the GEMM roofline; "
        f"best run vs best GEMM: {fraction_best:.1%} "
        f"(nominal-FLOP rate {cost['nominal_flop'] / median_s / 1e9:,.1f} GFLOP/s)"
    )
    report["batch_64x20"] = {
        "text": source,
        "warmup_s": warm_s,
        "samples_s": samples,
        "median_s": median_s,
        "best_s": best_s,
        "slowest_over_fastest": spread,
        "peak_rss_bytes": rss_after_batch,
        "tokens_per_s_median": tps,
        "tokens_per_s_best": tokens / best_s,
        "ratio_to_allennlp_570": tps / ALLENNLP_TOKENS_PER_S,
        "cost": cost,
        "flop_per_token_nominal": nominal_tok,
        "flop_per_token_executed": executed_tok,
        "flop_per_token_floor": floor_tok,
        "ceiling_tokens_per_s_at_roofline": ceiling_tps,
        "executed_gflops": executed_gflops,
        "roofline_fraction": fraction,
        "roofline_fraction_best_vs_best": fraction_best,
    }
    return FixedBatch(batch, ids, tokens, tps, fraction, ceiling_tps, rss_after_batch)


def measure_natural_text(
    model: BiLM,
    corpus: list[list[str]],
    roofline: float,
    args: argparse.Namespace,
    report: dict[str, Any],
) -> None:
    """The ``[natural text]`` section: one pass as ``bilm embed`` batches it.

    Args:
        model: the loaded biLM (fp32).
        corpus: the corpus sentences; the first ``args.natural`` are timed.
        roofline: the run's GEMM roofline (median GFLOP/s).
        args: the command line (``natural``).
        report: the JSON report; ``natural`` is added.
    """
    sentences = corpus[: args.natural]
    ordered = sorted(sentences, key=len, reverse=True)
    chunk = [Sentence(i, s) for i, s in enumerate(ordered)]
    budget = BATCH * TOKENS_PER_ROW  # token-budget batches, as `bilm embed` plans them
    batches = [[x.tokens for x in b] for b in plan_batches(chunk, BATCH, True, budget)]
    model.set_token_cache(TOKEN_CACHE_WORDS)  # LRU of char-CNN vectors across batches
    start = time.perf_counter()
    all_ids = [batch_to_ids(b) for b in batches]
    ids_s = time.perf_counter() - start
    start = time.perf_counter()
    per_batch = [time_calls(functools.partial(forward, model, b), 1)[0] for b in all_ids]
    natural_s = time.perf_counter() - start
    longest = max(range(len(batches)), key=lambda i: all_ids[i].shape[1])
    ncost = sum_costs([batch_cost(b, model.options) for b in batches])
    ntps = ncost["tokens"] / natural_s
    n_exec = ncost["executed_flop"] / natural_s / 1e9
    note = "" if len(sentences) == args.natural else f" (asked {args.natural:,})"
    hits, misses = model.token_cache_hits, model.token_cache_misses
    model.set_token_cache(0)
    print(
        f"\n[natural text: first {len(sentences):,} sentences{note}, "
        f"{ncost['tokens']:,} tokens, {len(batches)} length-sorted batches of <= {BATCH} "
        f"within {budget:,} padded positions; token cache {TOKEN_CACHE_WORDS:,} words]"
    )
    print(f"  token cache: {hits:,} hits, {misses:,} misses (distinct words per batch)")
    print(
        f"  forward {natural_s:.2f} s (one pass) -> {ntps:,.0f} tokens/s; "
        f"batch_to_ids {ids_s:.2f} s extra"
    )
    print(
        f"  longest batch (T = {all_ids[longest].shape[1]}, "
        f"{sum(len(s) for s in batches[longest]):,} tokens): {per_batch[longest]:.2f} s; "
        f"peak RSS after this stage {fmt_bytes(peak_rss_bytes())}"
    )
    print(
        f"  FLOP/token: nominal {ncost['nominal_flop'] / ncost['tokens'] / 1e6:,.1f} M, "
        f"executed {ncost['executed_flop'] / ncost['tokens'] / 1e6:,.1f} M; "
        f"{n_exec:,.1f} GFLOP/s = {n_exec / roofline:.1%} of roofline"
    )
    report["natural"] = {
        "sentences": len(sentences),
        "batches": len(batches),
        "seconds": natural_s,
        "batch_to_ids_s": ids_s,
        "per_batch": [
            {"time": a.shape[1], "tokens": sum(len(s) for s in b), "seconds": t}
            for a, b, t in zip(all_ids, batches, per_batch, strict=True)
        ],
        "peak_rss_bytes": peak_rss_bytes(),
        "tokens_per_s": ntps,
        "cost": ncost,
        "executed_gflops": n_exec,
        "roofline_fraction": n_exec / roofline,
    }
