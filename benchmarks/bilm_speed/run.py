"""One run of the biLM speed benchmark: the header, every stage in order, memory, targets.

The header names the machine (kind, CPU model and features, torch's dispatch level, threads,
the OpenMP environment) and the model file; then the stages print their sections in this order
(each module's docstring says what it measures): load, GEMM roofline, 64 × 20, exact fp32 paths,
straightforward implementation, int8, bf16, natural text, profile, correctness, ``bilm embed``
peak RSS, allennlp-style computation, under load; then other processes' CPU use, the measuring
process's peak RSS at each point, and the targets. :func:`run` also returns every figure as
the ``--json`` report.

Run: ``python benchmarks/bench_bilm.py --quick`` (every stage on a small model, about a minute
on 2 idle cores); ``nox -s bench_bilm`` for the full-size run (15–20 minutes).
"""

from __future__ import annotations

import argparse
from typing import Any

import torch

from benchmarks.bilm_speed.contention import measure_under_load, print_contention
from benchmarks.bilm_speed.embed_rss import measure_embed
from benchmarks.bilm_speed.fp32_paths import measure_fp32_paths
from benchmarks.bilm_speed.measure import fmt_bytes, rss_now_bytes
from benchmarks.bilm_speed.model_file import ensure_model, load_stage
from benchmarks.bilm_speed.precision import measure_bf16, measure_int8
from benchmarks.bilm_speed.profiling import print_profile
from benchmarks.bilm_speed.reference import check_correctness, measure_straightforward
from benchmarks.bilm_speed.roofline import measure_roofline
from benchmarks.bilm_speed.targets import NAN, Figures, print_targets
from benchmarks.bilm_speed.text import fixed_batch, read_corpus
from benchmarks.bilm_speed.throughput import measure_fixed_batch, measure_natural_text
from benchmarks.bilm_speed.versus_allennlp import allennlp_comparison
from benchmarks.common import machine_info, peak_rss_bytes


def print_header(args: argparse.Namespace, machine: dict[str, Any]) -> None:
    """The first lines: what is measured, and on which machine (:func:`machine_info`)."""
    if args.quick:
        print("ELMo biLM speed benchmark: QUICK smoke run (small model; its figures are no")
        print("  evidence of speed, targets and advice included), random weights, fp32, CPU")
    else:
        print("ELMo biLM speed benchmark (full-size model, random weights, fp32, CPU)")
    m = machine
    print(f"  machine kind: {m['kind']}")
    print(
        f"  machine: {m['cpu']}, {m['logical_cpus']} logical CPUs; torch {m['torch']}, "
        f"{m['threads']} threads; repeats {args.repeats}"
    )
    features = m["features"]
    print(
        f"  CPU features: {', '.join(features['labels']) or 'no AVX2/AVX-512/AMX'} (from "
        f"{features['source']}); torch dispatches to {m['torch_cpu_capability']}; "
        f"AMX {'yes' if features['amx_tile'] else 'no'}, AVX-512-BF16 "
        f"{'yes' if features['avx512_bf16'] else 'no'}"
    )
    print(
        f"  OpenMP: OMP_WAIT_POLICY={m['omp_wait_policy'] or '(unset: libgomp default)'}, "
        f"OMP_NUM_THREADS={m['omp_num_threads'] or '(unset)'}"
    )


def print_memory(report: dict[str, Any], after_load: int, after_batch: int, ours: int) -> None:
    """Other processes' CPU use at the end and the ``[memory: measuring process]`` section.

    Args:
        report: the JSON report; ``other_busy_cpus["end"]`` and ``peak_rss_bytes`` are set.
        after_load: peak RSS after loading the model.
        after_batch: peak RSS after the 64 × 20 forwards.
        ours: peak RSS before the allennlp-style copy of the weights (all our stages).
    """
    rss_end = peak_rss_bytes()
    print()
    print_contention(report, "end")
    print("\n[memory: measuring process]")
    print(f"  peak RSS after load          {fmt_bytes(after_load)}")
    print(f"  peak RSS after 64x20 runs    {fmt_bytes(after_batch)}")
    print(f"  peak RSS of our stages       {fmt_bytes(ours)}")
    print(
        f"  peak RSS at the end          {fmt_bytes(rss_end)}"
        f"  (current {fmt_bytes(rss_now_bytes())}; with the allennlp-style weight copy)"
    )
    report["peak_rss_bytes"] = {
        "after_load": after_load,
        "after_64x20": after_batch,
        "ours": ours,
        "end": rss_end,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure and print every stage the command line asks for.

    Args:
        args: :func:`benchmarks.bilm_speed.cli.parse_args`'s namespace.

    Returns:
        Every figure, as ``--json`` writes it.
    """
    torch.set_num_threads(args.threads)
    report: dict[str, Any] = {"machine": machine_info(), "repeats": args.repeats}
    print_header(args, report["machine"])

    options_path, weights_path, how = ensure_model(args.seed, args.quick)
    files = (options_path, weights_path)
    size = weights_path.stat().st_size
    print(f"  weights: {size:,} bytes, seed {args.seed}, {how}")
    print_contention(report, "start")
    report["weights"] = {"path": str(weights_path), "bytes": size, "seed": args.seed}

    model, rss_after_load = load_stage(options_path, weights_path, report)
    roofline = measure_roofline(model.options, args, report)
    corpus, source = read_corpus(args.corpus)
    fixed = measure_fixed_batch(model, fixed_batch(corpus), source, roofline, args, report)
    figures = Figures(
        tokens_per_s=fixed.tokens_per_s,
        roofline_fraction=fixed.roofline_fraction,
        max_diff=NAN,
        peak_rss_ours=NAN,
        ceiling_tokens_per_s=fixed.ceiling_tokens_per_s,
    )
    if args.paths:
        measure_fp32_paths(model, fixed.ids, fixed.tokens, args.repeats, report)
    if args.reference_repeats > 0:  # the straightforward implementation, same batch, same run
        figures.straight_tokens_per_s, figures.straight_diff = measure_straightforward(
            model, files, fixed.sentences, fixed.ids, fixed.tokens_per_s, args, report
        )
    figures.int8_speedup, figures.int8_dev = measure_int8(
        model, fixed.ids, fixed.tokens, args.repeats, report
    )
    figures.bf16 = measure_bf16(model, fixed.ids, args, report)
    if args.natural > 0:
        measure_natural_text(model, corpus, roofline[0], args, report)
    if args.profile:
        print_profile(model, fixed.ids, args.repeats, report)
    figures.max_diff = check_correctness(model, files, corpus, args.threads, report)
    figures.embed_rss = measure_embed(files, corpus, args, report)

    # ours, all stages: the allennlp-style copy of the weights below is not part of our footprint
    rss_ours = peak_rss_bytes()
    figures.peak_rss_ours = rss_ours
    if args.allennlp:
        figures.versus = allennlp_comparison(model, fixed.ids, fixed.tokens, corpus, args, report)
    if args.load:
        figures.loaded = measure_under_load(
            options_path, weights_path, fixed.sentences, fixed.tokens, args, report
        )
    print_memory(report, rss_after_load, fixed.peak_rss_bytes, rss_ours)
    print_targets(figures, report)
    return report
