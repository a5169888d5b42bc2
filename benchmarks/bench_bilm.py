"""Speed and memory benchmark of the full-size ELMo biLM on the CPU: the entry point.

Usage::

    python benchmarks/bench_bilm.py [--threads 2] [--repeats 7] [--corpus PATH] [--profile]
                                    [--natural 2000] [--seed 0] [--json out.json]
                                    [--reference-repeats 3] [--no-embed] [--quick]
                                    [--out results/benchmarks/bench_bilm-{kind}.txt]
                                    [--pairs 7] [--compare-natural 400] [--natural-pairs 3]
                                    [--load-rounds 3] [--load-kind spin] [--load-nice 0]
                                    [--no-paths] [--no-allennlp] [--no-load]

A full-size biLM (``BiLMOptions()``: the published 2 × 4096/512 biLSTM, 2,048-filter char CNN, 2
highway layers; Peters et al. 2018 §3.4) with random weights in the official HDF5 layout, on the
CPU this runs on, at ``--threads``: load time, the machine's fp32 GEMM roofline, tokens/s and
FLOPs on a 64 × 20 batch and on natural text, every exact fp32 path, the straightforward
implementation (``benchmarks/reference_bilm.py``) and the allennlp-style computation
(``benchmarks/allennlp_step.py``) beside it in the same run, int8 and bf16, the float64
correctness check, peak RSS of ``python -m bilm embed``, tokens/s under one busy background
process, and every target as PASS/MISS (never asserted). docs/performance.md describes each
section and the targets; the stages live in :mod:`benchmarks.bilm_speed`, one module each.

``--quick``: a smoke run of every stage on a small model (about a minute on 2 idle cores; its
figures say nothing about speed). ``--out PATH`` also writes the text output there (``{kind}``
in PATH becomes the machine kind, e.g. ``results/benchmarks/bench_bilm-{kind}.txt``), after a
header naming the commit, the CPU and the command.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.bilm_speed.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
