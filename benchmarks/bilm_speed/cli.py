"""The command line of ``benchmarks/bench_bilm.py`` and its ``main``.

``main`` parses the command line (:func:`parse_args`: ``--quick`` fills the sizes left unset
with smoke-run values, :data:`QUICK_DEFAULTS`), then either runs the benchmark
(:func:`benchmarks.bilm_speed.run.run`), copying its output to ``--out`` (``{kind}`` becomes the
machine kind; the file starts with the commit, the CPU and the command) and its figures to
``--json``, or, with one of the hidden flags, is the body of a child process: the model writer
(``--write-model``), the straightforward-implementation timer (``--reference-child``) or an
under-load run (``--load-child``).

Run: ``python benchmarks/bench_bilm.py --help``; ``python benchmarks/bench_bilm.py --quick``
for a smoke run of every stage.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from benchmarks.bilm_speed.contention import load_child
from benchmarks.bilm_speed.model_file import write_model
from benchmarks.bilm_speed.reference import reference_child
from benchmarks.bilm_speed.run import run
from benchmarks.bilm_speed.text import DEFAULT_CORPUS
from benchmarks.common import add_standard_arguments, provenance, tee_stdout, write_json
from bilm.machine import cpu_kind

#: The entry point's path as the ``--out`` header's command names it.
SCRIPT = "benchmarks/bench_bilm.py"

#: ``--quick`` values of the options that default to None (full run: the second value).
QUICK_DEFAULTS = {
    "repeats": (3, 7),
    "natural": (64, 2000),
    "reference_repeats": (1, 3),
    "pairs": (3, 7),
    "compare_natural": (32, 400),
    "natural_pairs": (1, 3),
    "load_rounds": (1, 3),
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; ``--quick`` fills the options left unset with smoke-run sizes."""
    parser = argparse.ArgumentParser(description="ELMo biLM CPU speed benchmark")
    add_standard_arguments(parser, threads=2)

    def sized(name: str, help_text: str) -> None:
        quick, full = QUICK_DEFAULTS[name.lstrip("-").replace("-", "_")]
        parser.add_argument(
            name, type=int, default=None, help=f"{help_text} ({full}; quick {quick})"
        )

    sized("--repeats", "timed repeats")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="one tokenised sentence per line (../shared/data/corpus/valid.txt)",
    )
    sized("--natural", "natural-text sentences to time (0 = skip)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    parser.add_argument("--profile", action="store_true", help="char CNN vs LSTM time split")
    sized(
        "--reference-repeats",
        "timed repeats of the straightforward implementation on 64 x 20 (0 = skip)",
    )
    parser.add_argument(
        "--no-embed",
        dest="embed",
        action="store_false",
        help="skip the peak-RSS run of `python -m bilm embed` on the corpus",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: small model, few repeats (~1 min)"
    )
    parser.add_argument(
        "--out",
        type=str,
        help="also write the text output to this file; {kind} becomes the machine kind "
        "(e.g. results/benchmarks/bench_bilm-{kind}.txt)",
    )
    sized("--pairs", "alternating pairs ours / allennlp-style on 64 x 20")
    sized("--compare-natural", "natural-text sentences of the allennlp-style comparison")
    sized("--natural-pairs", "alternating passes over them (0 = skip)")
    sized("--load-rounds", "idle/loaded rounds per under-load setting")
    parser.add_argument(
        "--load-kind",
        choices=("spin", "gemm"),
        default="spin",
        help="background load: a Python loop or a one-thread numpy GEMM loop (spin)",
    )
    parser.add_argument(
        "--load-nice", type=int, default=0, help="niceness of the background load (0)"
    )
    parser.add_argument(
        "--no-paths", dest="paths", action="store_false", help="skip the fp32 path comparison"
    )
    parser.add_argument(
        "--no-allennlp",
        dest="allennlp",
        action="store_false",
        help="skip the allennlp-style comparison",
    )
    parser.add_argument(
        "--no-load", dest="load", action="store_false", help="skip the under-load runs"
    )
    parser.add_argument("--write-model", type=Path, help=argparse.SUPPRESS)  # child process
    parser.add_argument("--reference-child", type=Path, help=argparse.SUPPRESS)  # child process
    parser.add_argument("--load-child", type=Path, help=argparse.SUPPRESS)  # child process
    args = parser.parse_args(argv)
    for name, (quick, full) in QUICK_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    checks = {
        "--threads": args.threads >= 1,
        "--repeats": args.repeats >= 1,
        "--pairs": args.pairs >= 1,
        "--load-rounds": args.load_rounds >= 1,
        "--load-nice": 0 <= args.load_nice <= 19,
    }
    for flag, ok in checks.items():
        if not ok:
            parser.error(f"{flag} out of range")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark, or the child process a hidden flag names.

    Args:
        argv: the arguments (``None``: ``sys.argv[1:]``).
    """
    args = parse_args(argv)
    if args.write_model is not None:
        write_model(args.write_model, args.seed, args.quick)
        return
    if args.reference_child is not None:
        reference_child(args.reference_child)
        return
    if args.load_child is not None:
        load_child(args.load_child)
        return
    out = None if args.out is None else Path(args.out.replace("{kind}", cpu_kind()))
    with tee_stdout(out, header=provenance(SCRIPT, argv) if out is not None else ()):
        report = run(args)
        if args.json is not None:
            print()
            write_json(args.json, report)
