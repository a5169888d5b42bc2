"""Other processes on the CPU: how busy they keep it, and the biLM's tokens/s under one of them.

* ``other processes (start|end)``: CPUs kept busy by other processes while the benchmark sleeps
  1 s (from ``/proc/stat``), printed at the start and the end, with a warning above 0.25 CPU
  (every timing of a shared machine is unreliable).
* ``[under load]``: tokens/s on the 64 × 20 batch idle (before any load, and right after a
  loaded forward) and with one busy single-threaded background process (``--load-kind spin``, a
  Python loop, or ``gemm``, a one-thread numpy GEMM loop, at ``--load-nice``) started before and
  killed after every loaded forward; ``--load-rounds`` rounds per setting, medians. The settings
  (:func:`load_settings`): the default (all threads, :mod:`bilm.load`'s rule on), the rule off
  (``ELMO_BENCH_UNDER_LOAD=keep``) with ``OMP_WAIT_POLICY`` unset / PASSIVE / ACTIVE, and one
  thread; one child process per setting, because OpenMP reads the policy once, at start.
  The rule's idle cost is timed inside the default's process, idle passes with the rule on and
  off alternating (:func:`_rule_pairs`): separate processes differ too much on a VM.

Run: ``python benchmarks/bench_bilm.py --quick`` (``--no-load`` skips the under-load runs); a
child is ``python benchmarks/bench_bilm.py --load-child SPEC.json``.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import bilm
import bilm.load
from benchmarks.bilm_speed.measure import (
    BATCH,
    ENTRY,
    LENGTH,
    REPO,
    alternate,
    forward,
    pair_ratio,
    time_calls,
)
from benchmarks.bilm_speed.targets import IDLE_COST_TOLERANCE
from benchmarks.common import background_load
from bilm import batch_to_ids
from bilm.devices import openmp_environment

#: Alternating rule-on/rule-off idle pairs per ``--load-rounds`` round (the rule's idle cost).
IDLE_PAIRS_PER_ROUND = 3


def busy_other_cpus(seconds: float = 1.0) -> float | None:
    """CPUs kept busy by other processes while this one sleeps (from /proc/stat), or None."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields[:8]) - idle, sum(fields[:8])

    try:
        busy0, total0 = sample()
        time.sleep(seconds)
        busy1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 == total0:
        return None
    return (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)


def print_contention(report: dict[str, Any], when: str) -> None:
    """The ``other processes (when)`` line (nothing where ``/proc/stat`` is unreadable).

    Args:
        report: the JSON report; ``other_busy_cpus[when]`` is set.
        when: ``"start"`` or ``"end"``.
    """
    busy = busy_other_cpus()
    report.setdefault("other_busy_cpus", {})[when] = busy
    if busy is None:
        return
    note = "" if busy < 0.25 else "  WARNING: the machine is shared, timings are unreliable"
    print(f"  other processes ({when}): {busy:.2f} of {os.cpu_count()} CPUs busy{note}")


def load_settings(threads: int) -> list[tuple[int, str | None, str]]:
    """(threads, OMP_WAIT_POLICY or None = unset, bilm.load rule) per child: the default first.

    The rule is ``adapt`` (the default: :mod:`bilm.load` drops to one thread while another
    process competes for the cores) or ``keep`` (``ELMO_BENCH_UNDER_LOAD=keep``: the thread count
    never changes, as the biLM ran before it learnt to adapt).
    """
    if threads == 1:
        return [(1, None, "adapt"), (1, "PASSIVE", "adapt")]
    return [
        (threads, None, "adapt"),
        (threads, None, "keep"),
        (threads, "PASSIVE", "keep"),
        (threads, "ACTIVE", "keep"),
        (1, None, "keep"),
    ]


def load_child(spec_path: Path) -> None:
    """Body of one under-load child: idle forwards first (no load seen yet), then idle and
    loaded forwards alternating; JSON out."""
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    torch.set_num_threads(spec["threads"])
    model = bilm.load_official(spec["options"], spec["weights"], state="reset")
    ids = batch_to_ids(spec["sentences"])
    forward(model, ids)  # warm-up: packing, first-call allocations
    steady = time_calls(lambda: forward(model, ids), spec["rounds"])
    pairs = spec["idle_pairs"]
    rule_on, rule_off, switched = _rule_pairs(model, ids, pairs) if pairs else ([], [], 0)
    idle: list[float] = []
    loaded: list[float] = []
    reduced: list[bool] = []
    for _ in range(spec["rounds"]):
        idle += time_calls(lambda: forward(model, ids), 1)
        with background_load(spec["kind"], spec["nice"]):
            time.sleep(0.3)  # let the load process start and take its core
            loaded += time_calls(lambda: forward(model, ids), 1)
            reduced.append(bilm.load.reduced())
    result = {
        "steady_idle_s": steady,
        "idle_s": idle,
        "loaded_s": loaded,
        "reduced_after_loaded": reduced,
        "rule_on_idle_s": rule_on,
        "rule_off_idle_s": rule_off,
        "rule_on_idle_reduced": switched,
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "rule": os.environ.get(bilm.load.UNDER_LOAD_ENV, "adapt"),
    }
    Path(spec["out"]).write_text(json.dumps(result), encoding="utf-8")


def _rule_pairs(
    model: bilm.BiLM, ids: torch.Tensor, pairs: int
) -> tuple[list[float], list[float], int]:
    """Idle passes with :mod:`bilm.load`'s rule on and off in one process, alternating.

    The rule reads ``ELMO_BENCH_UNDER_LOAD`` at every pass, so one process can time both: the
    pairs share the process's memory layout and OpenMP team, which separate child processes
    do not (on a VM their idle speeds differed by up to ±10 % with the same setting).

    Returns:
        Seconds with the rule on, seconds with it off (pair by pair, order swapped every pair),
        and how many rule-on passes ended on one thread (0 on an idle machine).
    """
    switched = 0
    env = bilm.load.UNDER_LOAD_ENV

    def with_rule(mode: str) -> Callable[[], None]:
        def run() -> None:
            nonlocal switched
            os.environ[env] = mode
            forward(model, ids)
            switched += mode == "adapt" and bilm.load.reduced()

        return run

    previous = os.environ.get(env)
    try:
        on, off = alternate(with_rule("adapt"), with_rule("keep"), pairs)
    finally:
        if previous is None:
            os.environ.pop(env, None)
        else:
            os.environ[env] = previous
    return on, off, switched


def run_load_child(
    options_path: Path,
    weights_path: Path,
    sentences: list[list[str]],
    setting: tuple[int, str | None, str],
    args: argparse.Namespace,
    idle_pairs: int = 0,
) -> dict[str, Any]:
    """One child process with the setting's threads, ``OMP_WAIT_POLICY`` (set before torch)
    and :mod:`bilm.load` rule; ``idle_pairs`` rule-on/rule-off idle pairs first
    (:func:`_rule_pairs`), if any."""
    threads, policy, rule = setting
    with tempfile.TemporaryDirectory(prefix="elmo-bench-load-") as tmp:
        spec = {
            "options": str(options_path),
            "weights": str(weights_path),
            "sentences": sentences,
            "threads": threads,
            "rounds": args.load_rounds,
            "kind": args.load_kind,
            "nice": args.load_nice,
            "out": str(Path(tmp) / "load.json"),
            "idle_pairs": idle_pairs,
        }
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        env = openmp_environment(base, policy, threads)
        env[bilm.load.UNDER_LOAD_ENV] = rule
        cmd = [sys.executable, str(ENTRY), "--load-child", str(spec_path)]
        subprocess.run(cmd, check=True, env=env, cwd=REPO)
        return json.loads(Path(spec["out"]).read_text(encoding="utf-8"))


def measure_under_load(
    options_path: Path,
    weights_path: Path,
    sentences: list[list[str]],
    tokens: int,
    args: argparse.Namespace,
    report: dict[str, Any],
) -> dict[str, float]:
    """The ``[under load]`` section: tokens/s idle vs under one busy background process, per
    thread count, wait policy and :mod:`bilm.load` rule.

    Args:
        options_path: the biLM's ``options.json`` (each child loads it).
        weights_path: its ``weights.hdf5``.
        sentences: the 64 × 20 batch.
        tokens: its real tokens.
        args: the command line (``threads``, ``load_rounds``, ``load_kind``, ``load_nice``).
        report: the JSON report; ``under_load`` is added.

    Returns:
        ``default_ratio`` (loaded over steady idle, default settings), ``idle_cost`` (the
        default's steady idle over the rule switched off) and ``keep_ratio``.
    """
    print(
        f"\n[under load: one busy single-threaded process ({args.load_kind}, nice "
        f"{args.load_nice}) started before and killed after every loaded forward; "
        f"{BATCH} x {LENGTH}; {args.load_rounds} idle forwards, then {args.load_rounds} "
        "idle/loaded rounds per setting, medians; one child process per setting]"
    )
    print(
        "  rule: adapt = bilm.load (default: one thread while another process competes for "
        "the cores), keep = ELMO_BENCH_UNDER_LOAD=keep"
    )
    print(
        "  steady idle: before any load; idle: right after a loaded forward; loaded/steady: "
        "loaded over the same setting's steady idle"
    )
    print(
        f"  {'threads':>7}  {'OMP_WAIT_POLICY':<16} {'rule':<6} {'steady idle':>11} "
        f"{'idle':>6} {'loaded':>7} {'loaded/steady':>13} {'loaded/default steady':>21}"
    )
    rows: dict[tuple[int, str | None, str], dict[str, float]] = {}
    settings = load_settings(args.threads)
    default_key = settings[0]
    # the rule's idle cost, timed in the default setting's process (with more than one thread)
    pairs = IDLE_PAIRS_PER_ROUND * args.load_rounds if default_key[0] > 1 else 0
    for setting in settings:
        child = run_load_child(
            options_path, weights_path, sentences, setting, args,
            pairs if setting == default_key else 0,
        )  # fmt: skip
        if setting == default_key:
            default_child = child
        row = {
            "steady": tokens / statistics.median(child["steady_idle_s"]),
            "idle": tokens / statistics.median(child["idle_s"]),
            "loaded": tokens / statistics.median(child["loaded_s"]),
            "reduced": float(sum(child["reduced_after_loaded"])),
        }
        rows[setting] = row
        base = rows[default_key]["steady"]
        threads, policy, rule = setting
        print(
            f"  {threads:>7}  {policy or '(unset)':<16} {rule:<6} {row['steady']:11,.0f} "
            f"{row['idle']:6,.0f} {row['loaded']:7,.0f} {row['loaded'] / row['steady']:13.2f} "
            f"{row['loaded'] / base:21.2f}"
        )
    default = rows[default_key]
    ratio = default["loaded"] / default["steady"]
    print(
        f"  default ({default_key[0]} threads, policy unset, adapt): loaded/steady idle "
        f"{ratio:.2f}; one thread after {default['reduced']:.0f} of {args.load_rounds} "
        "loaded forwards"
    )
    keep_key = (args.threads, None, "keep")
    result = {"default_ratio": ratio, "idle_cost": float("nan"), "keep_ratio": float("nan")}
    if keep_key in rows:
        keep = rows[keep_key]
        result["keep_ratio"] = keep["loaded"] / keep["steady"]
        on, off = default_child["rule_on_idle_s"], default_child["rule_off_idle_s"]
        # tokens/s with the rule over without it: the off pass's seconds over the on pass's
        paired, of_medians = pair_ratio(on, off)
        result["idle_cost"] = paired
        print(
            f"  the rule's cost idle: x{paired:.2f} of keep (median of {len(on)} alternating "
            f"pairs in the default's process, order swapped every pair; ratio of medians "
            f"x{of_medians:.2f}; target within {IDLE_COST_TOLERANCE:.0%}); on one thread after "
            f"{default_child['rule_on_idle_reduced']} of {len(on)} idle passes; the "
            f"separate processes' steady idle: x{default['steady'] / keep['steady']:.2f}"
        )
        print(f"  without the rule (keep): loaded/steady idle {result['keep_ratio']:.2f}")
    note = " (QUICK run: not evidence)" if args.quick else ""
    print(
        "  after a loaded forward the next idle one starts on one thread and returns to the "
        f"full count within {bilm.load.WINDOW_REDUCED:.2f} s (the 'idle' column){note}"
    )
    report["under_load"] = {
        "load": {"kind": args.load_kind, "nice": args.load_nice, "rounds": args.load_rounds},
        "rows": [
            {
                "threads": n,
                "omp_wait_policy": p,
                "rule": r,
                "steady_idle_tokens_per_s": v["steady"],
                "idle_tokens_per_s": v["idle"],
                "loaded_tokens_per_s": v["loaded"],
            }
            for (n, p, r), v in rows.items()
        ],
        **result,
    }
    return result
