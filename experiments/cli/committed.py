"""``committed``: every committed table and plot, from the committed records
(:mod:`experiments.report.committed`; ``nox -s committed_results``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from experiments.cli.errors import UsageError
from experiments.cli.options import comma_list

__all__ = ["configure", "run", "training_command"]


def configure(parser: argparse.ArgumentParser) -> None:
    """The options of ``committed``."""
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--render-only",
        action="store_true",
        help="train nothing: re-render every committed table and plot in place",
    )
    what.add_argument(
        "--check",
        action="store_true",
        help="train and write nothing: render into a scratch folder and list every committed "
        "file that differs (exit 1 if any)",
    )
    parser.add_argument(
        "--only", type=comma_list, default=None, help="these manifest entries (default: all)"
    )
    parser.add_argument(
        "extra",
        nargs="*",
        default=[],
        help="after --, options for every training command (e.g. -- --max-parallel 4)",
    )


def training_command(argv: list[str], extra: list[str]) -> list[str] | None:
    """The command that trains what an entry's render reads (``None``: ``peer``, trained by
    ``nox -s peer`` with its data): ``render NAME`` becomes ``reproduce NAME``, ``compare``
    loses ``--render-only``; both run quietly, two runs at a time unless ``extra`` says."""
    if argv[0] == "peer":
        return None
    head = ["reproduce", *argv[1:]] if argv[0] == "render" else list(argv)
    head = [a for a in head if a != "--render-only"]
    return [*head, "--quiet", "--max-parallel", "2", *extra]


def run(args: argparse.Namespace) -> int:
    """Train what is missing (unless ``--render-only`` or ``--check``), then re-render."""
    from experiments.cli import main
    from experiments.report import committed

    entries = committed.load()
    if args.only is not None:
        unknown = set(args.only) - {e.name for e in entries}
        if unknown:
            names = ", ".join(e.name for e in entries)
            message = f"--only: no entry {sorted(unknown)} in {committed.MANIFEST} ({names})"
            raise UsageError(message)
        entries = [e for e in entries if e.name in args.only]
    if args.check:
        report = committed.check(main, entries=entries)
        if args.only is not None:  # a part of the manifest: its orphans are other entries' files
            report = dataclasses.replace(report, orphans=())
        for line in report.lines():
            print(line, file=sys.stderr)
        print(f"committed: {len(entries)} entries rendered; {'ok' if report.ok else 'NOT ok'}")
        return 0 if report.ok else 1
    blocked = [f"{e.name}: {why}" for e in entries if (why := committed.unavailable(e))]
    if blocked:  # before any training or writing: rendered without its sets a table loses rows
        raise UsageError(f"cannot re-render {'; '.join(blocked)} (or leave it out with --only)")
    if not args.render_only:
        for entry in entries:
            command = training_command(list(entry.argv), list(args.extra))
            if command is None:
                print(f"committed: {entry.name}: peer records are trained by nox -s peer")
                continue
            print(f"committed: {entry.name}: python -m experiments {' '.join(command)}")
            status = main([*command, "--out", str(Path("runs/committed-train"))])
            if status:
                return status
    for path in committed.write(main, entries=entries):
        print(f"wrote {path}", file=sys.stderr)
    return 0
