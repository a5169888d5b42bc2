"""The names of the files a command writes: one rule for every table, plot and report.

A command's *standard request* keeps its plain name (``table1-mini-demo-table1.md``,
``compare-hf-vs-elmo-mini-real-compare.md``: the committed files and the docs' links); any other
request adds a short hash of what it shows (``table1-mini-demo-3f9a01c2-table1.md``), so two
requests never overwrite each other's outputs and re-rendering one request rewrites its own
files. A table's request is the set of run ids it expects (plus ``--exclude-dead`` and
``--reuse-stale``, which change its numbers): options spelled differently that select the same
runs name the same file. The standard request is the command's defaults with the same name,
preset (``--config``) and data (``demo``, ``real`` or ``shared:NAME``: a data folder always
adds the hash, two folders can share a name), with the seeds the committed table was rendered
with (:func:`standard_seeds`). Sweeps always carry the hash of their run ids.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Callable, Collection, Iterable, Sequence

from experiments.cli.errors import UsageError
from experiments.data.real_sets import REAL, is_shared
from experiments.report.reproductions import TABLE_KINDS

__all__ = [
    "COMPARE",
    "HASH_CHARS",
    "THREE_SEEDS",
    "output_stem",
    "request_hash",
    "standard_args",
    "standard_seeds",
]

#: Hex digits of a request's hash in file names.
HASH_CHARS = 8
#: The seeds of the committed three-seed tables (``--seeds 0,1,2``).
THREE_SEEDS = "0,1,2"
#: The ``compare`` kind in :func:`standard_seeds`.
COMPARE = "compare"


def request_hash(parts: Iterable[str]) -> str:
    """A short stable hash of a request: :data:`HASH_CHARS` hex digits of BLAKE2b over its
    parts, sorted and without repeats (order and duplicates do not matter)."""
    text = "\n".join(sorted(set(parts)))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()[:HASH_CHARS]


def standard_seeds(kind: str, data: str) -> str | None:
    """The ``--seeds`` of a table's standard request (``None``: the default, each task's own).

    Args:
        kind: a named table (``reproduce``/``render`` NAME) or :data:`COMPARE`.
        data: the ``--data`` value.

    Returns:
        :data:`THREE_SEEDS` for the named tables whose kind has
        :attr:`~experiments.report.reproductions.TableKind.three_seeds` (Tables 2 and 3, the
        dynamic and biLM tables) and ``compare --data real`` (their committed files were
        rendered with three seeds), else ``None``; every other table's plain name is its
        default seeds'.
    """
    table = TABLE_KINDS.get(kind)
    if (table is not None and table.named and table.three_seeds) or (
        kind == COMPARE and data == REAL
    ):
        return THREE_SEEDS
    return None


def standard_args(
    args: argparse.Namespace, leading: Sequence[str], seeds: str | None
) -> argparse.Namespace:
    """The standard request of ``args``'s command: ``leading`` (the positional arguments and
    the options that name the outputs, e.g. ``compare``'s ``--repr``) and the same preset and
    data, with ``seeds`` (``None``: the default) and every other option at its default."""
    from experiments.cli import build_parser  # the parser imports the commands: at call time

    argv = [args.command, *leading, "--config", args.config, "--data", args.data]
    argv += ["--seeds", seeds] if seeds is not None else []
    return build_parser().parse_args(argv)


def output_stem(
    plain: str,
    run_ids: Collection[str],
    standard: Callable[[], Iterable[str]] | None,
    data: str,
    *,
    exclude_dead: bool = False,
    reuse_stale: bool = False,
) -> str:
    """The file-name prefix of a request's outputs: ``plain`` for the standard request, else
    ``plain-<hash>`` (:func:`request_hash` of its run ids and flags).

    Args:
        plain: the command's plain prefix, e.g. ``"table1-mini-demo"``.
        run_ids: the runs the request's tables show.
        standard: the run ids of the command's standard request (:func:`standard_args`);
            called only when the flags and data allow the plain name; one that raises (a
            request whose defaults are not valid, e.g. a representation that needs options)
            is not standard. ``None``: no request is standard (sweeps).
        data: the ``--data`` value (a data folder always adds the hash).
        exclude_dead: ``--exclude-dead`` (changes the means: never the plain name).
        reuse_stale: ``--reuse-stale`` (changes the records used: never the plain name).
    """
    flags = [
        f for f, on in (("--exclude-dead", exclude_dead), ("--reuse-stale", reuse_stale)) if on
    ]
    named_data = data in ("demo", REAL) or is_shared(data)
    if standard is not None and not flags and named_data:
        try:
            same = set(standard()) == set(run_ids)
        except (UsageError, ValueError, KeyError, TypeError, SystemExit):
            same = False
        if same:
            return plain
    return f"{plain}-{request_hash([*run_ids, *flags])}"
