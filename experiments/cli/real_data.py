"""``real-data``: rebuild the real sets of ``--data real`` from their public sources.

    python -m experiments real-data fetch [--out DIR] [--sets a,b] [--from DIR] [--force]
                                          [--accept-terms a,b]
    python -m experiments real-data status [--out DIR]
    python -m experiments real-data list

``fetch`` downloads each set's source files at pinned commits
(``experiments/data/real_sources.toml``; every file's SHA-256 checked), converts them and installs
each set atomically below ``--out`` (default: ``shared/data`` in the project's cache, where ``--data
real`` looks when neither ``$ELMO_BENCH_SHARED`` nor ``../shared/data`` is there). ``--from DIR``
reads the sources from a local folder instead (offline). A set whose text may not be redistributed
(CoNLL-2003: Reuters news) is fetched only with ``--accept-terms NAME``, after its terms are read
(``real-data list`` prints them). The library: :mod:`experiments.data.fetch`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from experiments.cli.errors import UsageError
from experiments.cli.options import comma_list

if TYPE_CHECKING:
    from experiments.data.fetch import Manifest

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """The actions of ``real-data`` and their options."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser(
        "fetch", help="download, verify, convert and install the sets (complete ones are kept)"
    )
    _add_out(fetch)
    fetch.add_argument(
        "--sets",
        type=comma_list,
        default=None,
        help="these sets only, comma-separated (default: all; see real-data list)",
    )
    fetch.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        metavar="DIR",
        help="read the source files from DIR, never the network: DIR/<repository>/<path> "
        "(checkouts of litbank, propbank-release, nltk_data side by side), DIR/<path>, or an "
        "NLTK data folder for nltk_data's zips",
    )
    fetch.add_argument(
        "--force", action="store_true", help="rebuild complete sets; replace folders that differ"
    )
    fetch.add_argument(
        "--accept-terms",
        type=comma_list,
        default=(),
        metavar="NAMES",
        help="fetch these sets, whose text may not be redistributed (conll2003: Reuters news, "
        "research use only), having read their terms (real-data list prints them)",
    )
    status = actions.add_parser("status", help="which sets are complete below a data root")
    _add_out(status, default_text="the root --data real reads now")
    actions.add_parser("list", help="the sets, their sources at their commits, licences")


def _add_out(parser: argparse.ArgumentParser, default_text: str | None = None) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="the data root (each set in its folder of experiments/data/real_sets.toml); default: "
        + (default_text or "shared/data in the project's cache ($ELMO_BENCH_CACHE)"),
    )


def _say(line: str) -> None:
    print(f"real-data: {line}", flush=True)


def _how_found(root: Path) -> str:
    """Whether ``--data real`` reads ``root``, and why (or what would make it)."""
    from experiments.data.real_sets import fetch_command, fetched_data_root, shared_data_root

    reads = shared_data_root()
    if not root.is_dir():
        return f"it does not exist: {fetch_command()} puts the sets where --data real finds them"
    if reads.resolve() == root.resolve():
        if os.environ.get("ELMO_BENCH_SHARED"):
            why = "$ELMO_BENCH_SHARED/data"
        elif root.resolve() == fetched_data_root().resolve():
            why = (
                "the fetched copy, used when $ELMO_BENCH_SHARED is unset and ../shared/data absent"
            )
        else:
            why = "../shared/data beside the repository"
        return f"--data real and shared:<folder> labels read them from here ({why})"
    if root.name == "data":
        use = f"set ELMO_BENCH_SHARED={root.parent} to read these"
    else:
        use = "name a folder with --data DIR to read one of these"
    return f"--data real reads {reads} instead (it comes first); {use}"


def run(args: argparse.Namespace) -> int:
    """Run ``real-data ACTION``.

    Raises:
        UsageError: a bad option value (one line, exit status 2).
        ValueError: a fetch that failed (a download, a checksum, a malformed source): one line
            naming the file or URL, exit status 2.
    """
    from experiments.data.fetch import load_manifest

    manifest = load_manifest()
    if args.action == "list":
        return _list(manifest)
    for option in ("sets", "accept_terms"):
        unknown = [name for name in getattr(args, option, None) or () if name not in manifest.sets]
        if unknown:
            known = ", ".join(manifest.sets)
            flag = "--" + option.replace("_", "-")
            raise UsageError(f"{flag}: no real set {', '.join(unknown)} (known: {known})")
    if args.action == "status":
        return _status(manifest, args.out)
    return _fetch(manifest, args)


def _list(manifest: Manifest) -> int:
    for entry in manifest.sets.values():
        print(f"{entry.name}: {entry.folder} ({entry.output_files} files); {entry.licence}")
        for repo in entry.repositories:
            count = sum(file.repository == repo for file in entry.files)
            print(f"  {count} files of {repo.page}")
        print(f"  cite: {entry.citation}")
        if entry.terms:
            print(f"  terms (fetched only with --accept-terms {entry.name}): {entry.terms}")
    print(f"sources and checksums: {manifest.path}")
    return 0


def _status(manifest: Manifest, out: Path | None) -> int:
    from experiments.data.fetch import set_state
    from experiments.data.real_sets import root_of, shared_data_root

    root = (shared_data_root() if out is None else out).expanduser()
    states = []
    for entry in manifest.sets.values():  # without --out: where shared:<folder> reads each
        states.append(set_state(entry, root if out is not None else root_of(entry.folder)))
        state = states[-1]
        print(f"{state.name}: {state.state} ({state.folder}, {state.files} files)")
    complete = sum(s.state == "complete" for s in states)
    apart = [
        s
        for s, e in zip(states, manifest.sets.values(), strict=True)
        if s.folder != root / e.folder
    ]
    also = "".join(f"; {s.name} read from {s.folder} (not below this root)" for s in apart)
    print(f"{complete} of {len(states)} sets complete; data root {root}{also}; {_how_found(root)}")
    return 0


def _fetch(manifest: Manifest, args: argparse.Namespace) -> int:
    from experiments.data.fetch import fetch
    from experiments.data.real_sets import fetched_data_root

    source = None if args.source is None else args.source.expanduser()
    if source is not None and not source.is_dir():
        raise UsageError(f"--from {args.source}: not a folder")
    root = (fetched_data_root() if args.out is None else args.out).expanduser()
    states = fetch(
        manifest,
        args.sets,
        root=root,
        source=source,
        force=args.force,
        accepted=args.accept_terms,
        log=_say,
    )
    sets = f"{len(states)} set{'s' if len(states) != 1 else ''}"
    _say(f"{sets} complete below {root}; {_how_found(root)}")
    return 0
