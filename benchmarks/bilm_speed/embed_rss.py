"""Peak memory of ``python -m bilm embed`` at batch 64 on the corpus, in a child process.

The child runs :func:`bilm.__main__.main` (``embed --batch-size 64 --device cpu``, fp32, the
benchmark's threads) on the ``--corpus`` file (``--quick``: its first
:data:`QUICK_EMBED_SENTENCES` sentences) and reports its own peak RSS (``VmHWM``); the section
prints it with the wall time, load included. Run: ``python benchmarks/bench_bilm.py --quick``
(``--no-embed`` skips it; without a corpus file it is skipped too).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bilm_speed.measure import REPO, fmt_bytes

#: ``--quick``: sentences that ``python -m bilm embed`` reads in the peak-RSS stage.
QUICK_EMBED_SENTENCES = 100

#: Child process that runs ``python -m bilm ...`` and reports its own peak RSS (KiB) last.
#: ``VmHWM`` of the new address space, not ``ru_maxrss``: Linux carries ``ru_maxrss`` over
#: fork + exec, so a child of this (large) process would report at least the parent's RSS.
EMBED_RSS_CHILD = (
    "import re, sys\n"
    "from bilm.__main__ import main\n"
    "status = main(sys.argv[1:])\n"
    "with open('/proc/self/status') as f:\n"
    "    hwm = re.search(r'VmHWM:\\s+(\\d+) kB', f.read()).group(1)\n"
    "print('MAXRSS_KIB', hwm, flush=True)\n"
    "sys.exit(status)\n"
)


def embed_peak_rss(
    options_path: Path, weights_path: Path, corpus: Path, threads: int, extra: Sequence[str] = ()
) -> tuple[int, float]:
    """Peak RSS (bytes) and wall time of ``python -m bilm embed`` at batch 64, in a child.

    Args:
        options_path: the biLM's ``options.json``.
        weights_path: its ``weights.hdf5``.
        corpus: the input text, one tokenised sentence per line.
        threads: ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` of the child.
        extra: more ``bilm embed`` arguments.
    """
    with tempfile.TemporaryDirectory(prefix="elmo-bench-embed-") as tmp:
        cmd = [sys.executable, "-c", EMBED_RSS_CHILD, "embed", "--options", str(options_path)]
        cmd += ["--weights", str(weights_path), "--input", str(corpus), "--quiet"]
        cmd += ["--output", str(Path(tmp) / "out.hdf5"), "--batch-size", "64", "--device", "cpu"]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        start = time.perf_counter()
        done = subprocess.run(
            [*cmd, *extra], check=True, env=env, cwd=REPO, capture_output=True, text=True
        )
        seconds = time.perf_counter() - start
    line = [x for x in done.stdout.splitlines() if x.startswith("MAXRSS_KIB")][-1]
    return int(line.split()[1]) * 1024, seconds


def measure_embed(
    files: tuple[Path, Path],
    corpus: list[list[str]],
    args: argparse.Namespace,
    report: dict[str, Any],
) -> float:
    """The ``[python -m bilm embed]`` section.

    Args:
        files: the biLM's ``options.json`` and ``weights.hdf5``.
        corpus: the corpus sentences (``--quick`` writes the first ones to a smaller file).
        args: the command line (``embed``, ``corpus``, ``quick``, ``threads``).
        report: the JSON report; ``embed`` is added when measured.

    Returns:
        The child's peak RSS in bytes; NaN when skipped.
    """
    embed_rss = float("nan")
    if args.embed and args.corpus is not None and args.corpus.exists():
        with tempfile.TemporaryDirectory(prefix="elmo-bench-quick-") as tmp:
            embed_input, embed_count = args.corpus, len(corpus)
            if args.quick:  # the first QUICK_EMBED_SENTENCES sentences only
                embed_count = min(embed_count, QUICK_EMBED_SENTENCES)
                embed_input = Path(tmp) / "head.txt"
                lines = [" ".join(sentence) for sentence in corpus[:embed_count]]
                embed_input.write_text("\n".join(lines) + "\n", encoding="utf-8")
            rss, embed_s = embed_peak_rss(files[0], files[1], embed_input, args.threads)
            embed_rss = float(rss)
        print(
            f"\n[python -m bilm embed --batch-size 64 on {args.corpus.name} "
            f"({embed_count:,} sentences), fp32, child process, {args.threads} threads]"
        )
        print(f"  peak RSS {fmt_bytes(embed_rss)}; wall {embed_s:.1f} s (load included)")
        report["embed"] = {"peak_rss_bytes": rss, "seconds": embed_s}
    elif args.embed:
        print("\n[python -m bilm embed: skipped, no corpus file]")
    return embed_rss
