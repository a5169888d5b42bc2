"""Every committed table and plot, re-rendered from the committed records.

``results/committed.toml`` lists each committed output with the command that renders it
(``python -m experiments ARGV --out OUT``) from the records committed beside it, training
nothing. :func:`check` renders every entry into a scratch folder and compares the files byte
for byte with the committed ones; ``tests/test_committed_results.py`` runs it in the default
test run, and ``nox -s committed_results -- --render-only`` rewrites them in place.

An entry whose records no longer match HEAD's result versions says so (``stale``: why, and
what retrains it); it renders with ``--reuse-stale`` (its cells marked ``‡``) until its runs
are retrained. An entry over the real sets (``--data real``) renders only where the sets are
(a record is reused only while its data's fingerprint matches): without them it is skipped,
named with the fetch command, and its committed files are left as they are. A file under a
committed output folder that no entry renders is an orphan: :func:`check` reports it (move it
to ``results/archive/`` with a line naming the commit that made it).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MANIFEST",
    "Entry",
    "Main",
    "Report",
    "check",
    "committed_of",
    "load",
    "render",
    "rendered_files",
    "unavailable",
    "write",
]

REPO = Path(__file__).resolve().parents[2]
#: The manifest, relative to the repository.
MANIFEST = Path("results/committed.toml")
#: Committed output folders (relative to the repository) whose every table and plot an entry
#: must render.
FOLDERS = ("results/tables", "results/plots", "results/real/tables", "results/real/plots")
#: Committed peer tables: ``results/peer/<task>.{md,csv,png}``.
PEER_FOLDER = "results/peer"
_SUFFIXES = (".md", ".csv", ".png", ".tex")


@dataclass(frozen=True)
class Entry:
    """One committed output: what renders it and where it lies.

    Attributes:
        name: a short name (the manifest's key).
        argv: ``python -m experiments`` arguments, without ``--out`` (``peer``: without
            ``--out`` either; its records lie in ``out``).
        out: the committed output folder, relative to the repository.
        stem: the committed files' name prefix (``<stem>-<table>.md``, plots
            ``<stem>-<...>.png``); ``None`` for ``peer`` (``<out>/<task>.*``).
        stale: why its records no longer match HEAD's result versions and what retrains them
            (it then renders with ``--reuse-stale``); ``None``: current.
    """

    name: str
    argv: tuple[str, ...]
    out: str
    stem: str | None = None
    stale: str | None = None

    @property
    def needs_real_sets(self) -> bool:
        """Its rows are registered sets (``--data real``, or a table of sets such as
        ``paper-data``): rendering reads their files."""
        return self.set_family is not None

    @property
    def set_family(self) -> str | None:
        """The family of registered sets its rows read
        (:attr:`~experiments.data.real_sets.RealSet.family`), ``None`` when it reads none."""
        from experiments.report.reproductions import TABLE_KINDS

        argv = list(self.argv)
        named = len(argv) > 1 and argv[0] in ("render", "reproduce")
        kind = TABLE_KINDS.get(argv[1]) if named else None
        if kind is not None and kind.named and kind.family is not None:
            return kind.family
        return (
            "real" if "--data" in argv[:-1] and argv[argv.index("--data") + 1] == "real" else None
        )

    @property
    def command(self) -> list[str]:
        """The full ``python -m experiments`` arguments writing into :attr:`out`."""
        return self.arguments(Path(self.out))

    def arguments(self, out: Path) -> list[str]:
        """The arguments writing into ``out``."""
        extra = ["--reuse-stale"] if self.stale and self.argv[0] != "peer" else []
        return [*self.argv, *extra, "--out", str(out)]


def load(path: Path | None = None) -> list[Entry]:
    """The manifest's entries (default ``results/committed.toml`` of this checkout).

    Raises:
        ValueError: an entry without ``argv`` or ``out``, an unknown key, or a repeated name,
            each naming the manifest and the entry.
    """
    path = path or REPO / MANIFEST
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = []
    for name, table in data.items():
        unknown = set(table) - {"argv", "out", "stem", "stale"}
        if unknown or "argv" not in table or "out" not in table:
            raise ValueError(
                f"{path}: [{name}] needs argv and out (and may have stem, stale); "
                f"unknown: {sorted(unknown)}"
            )
        peer = table["argv"][0] == "peer"
        if peer == ("stem" in table):
            raise ValueError(f"{path}: [{name}]: a stem for every command but peer")
        entries.append(
            Entry(name, tuple(table["argv"]), table["out"], table.get("stem"), table.get("stale"))
        )
    return entries


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


#: ``python -m experiments`` in-process: arguments → exit status (``experiments.cli.main``,
#: passed in by the command and the tests: this module sits below the command line).
Main = Callable[[list[str]], int]


def _run(main: Main, argv: Sequence[str]) -> None:
    with _quiet():
        status = main(list(argv))
    if status:
        raise RuntimeError(f"python -m experiments {' '.join(argv)} exited {status}")


def render(entry: Entry, out: Path, main: Main, root: Path = REPO) -> dict[str, Path]:
    """Render ``entry`` into ``out`` (a scratch folder) with ``main``; returns committed path
    (relative to ``root``) → the rendered file.

    The command runs with ``root`` as the working folder (its paths are relative to the
    repository). A peer entry reads its records from ``out`` (``runs``, and the project's
    store of each precision, ``project-runs*``), so they are linked there first.
    """
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(root):
        if entry.argv[0] == "peer":
            folder = root / entry.out
            stores = sorted(p.name for p in folder.glob("project-runs*") if p.is_dir())
            for records in ("runs", *stores):
                if (folder / records).is_dir():
                    (out / records).symlink_to((folder / records).resolve())
        _run(main, entry.arguments(out.resolve()))
    return rendered_files(entry, out)


def rendered_files(entry: Entry, out: Path) -> dict[str, Path]:
    """The files a render of ``entry`` wrote into ``out``, by their committed paths: a table's
    file name loses the 8-hex-digit part a non-standard command adds (``--reuse-stale``)."""
    found: dict[str, Path] = {}
    if entry.stem is None:
        for path in sorted(out.iterdir()):
            if path.is_file() and path.suffix in _SUFFIXES:
                found[f"{entry.out}/{path.name}"] = path
        return found
    pattern = re.compile(rf"^{re.escape(entry.stem)}(-[0-9a-f]{{8}})?-(?P<rest>.+)$")
    for folder in ("tables", "plots"):
        for path in sorted((out / folder).glob("*")) if (out / folder).is_dir() else ():
            match = pattern.match(path.name)
            if match is None:
                raise RuntimeError(f"{entry.name}: {path.name} does not start with {entry.stem}")
            found[f"{entry.out}/{folder}/{entry.stem}-{match['rest']}"] = path
    return found


def committed_files(root: Path = REPO) -> set[str]:
    """Every committed table and plot an entry must render (paths relative to ``root``)."""
    paths = {
        str(p.relative_to(root))
        for folder in FOLDERS
        if (root / folder).is_dir()
        for p in (root / folder).iterdir()
        if p.is_file() and p.suffix in _SUFFIXES
    }
    peer = root / PEER_FOLDER
    if peer.is_dir():
        paths |= {
            str(p.relative_to(root))
            for p in peer.iterdir()
            if p.is_file() and p.suffix in _SUFFIXES and p.name != "README.md"
        }
    return paths


@dataclass(frozen=True)
class Report:
    """What :func:`check` found.

    Attributes:
        differ: committed paths whose rendered bytes differ.
        missing: committed paths a render wrote that are not committed.
        orphans: committed tables and plots that no entry renders.
        stale: entry name → why it rests on stale records.
        skipped: entry name → why it was not rendered (its real sets are not here); its
            committed files were not compared.
    """

    differ: tuple[str, ...]
    missing: tuple[str, ...]
    orphans: tuple[str, ...]
    stale: dict[str, str]
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every committed file is what HEAD renders from its records."""
        return not (self.differ or self.missing or self.orphans)

    def lines(self) -> list[str]:
        """The findings, one line each: :meth:`problems`, the stale and the skipped entries."""
        return (
            self.problems()
            + [f"{n}: rests on stale records ({why})" for n, why in self.stale.items()]
            + [f"{n}: not checked ({why})" for n, why in self.skipped.items()]
        )

    def problems(self) -> list[str]:
        """What makes :attr:`ok` false, one line each."""
        out = [f"differs from what HEAD renders: {p}" for p in self.differ]
        out += [f"rendered but not committed: {p}" for p in self.missing]
        out += [
            f"no entry of {MANIFEST} renders {p} (add one, or move it to results/archive/)"
            for p in self.orphans
        ]
        return out


def unavailable(entry: Entry) -> str | None:
    """Why ``entry`` cannot be rendered on this machine (its real sets are not here), else
    ``None``."""
    if not entry.needs_real_sets:
        return None
    from experiments.data.real_sets import fetch_command_for, missing_sets, real_sets

    missing = missing_sets(real_sets(family=entry.set_family))
    if not missing:
        return None
    command = fetch_command_for(missing)
    return f"the real sets are not here ({len(missing)} missing; {command} builds them)"


def committed_of(entry: Entry, root: Path = REPO) -> set[str]:
    """The committed tables and plots that ``entry`` renders (paths relative to ``root``)."""
    if entry.stem is None:
        return {p for p in committed_files(root) if p.startswith(f"{entry.out}/")}
    return {
        str(p.relative_to(root))
        for folder in ("tables", "plots")
        for p in (root / entry.out / folder).glob(f"{entry.stem}-*")
        if p.is_file() and p.suffix in _SUFFIXES
    }


def check(main: Main, root: Path = REPO, entries: Sequence[Entry] | None = None) -> Report:
    """Render every entry into a scratch folder with ``main`` and compare with the committed
    files (an entry whose real sets are not here is skipped: :attr:`Report.skipped`)."""
    entries = load(root / MANIFEST) if entries is None else entries
    differ, missing, seen = [], [], set()
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="committed-") as scratch:
        for i, entry in enumerate(entries):
            why = unavailable(entry)
            if why is not None:
                skipped[entry.name] = why
                seen |= committed_of(entry, root)
                continue
            for path, rendered in render(entry, Path(scratch) / str(i), main, root).items():
                seen.add(path)
                committed = root / path
                if not committed.is_file():
                    missing.append(path)
                elif committed.read_bytes() != rendered.read_bytes():
                    differ.append(path)
    orphans = sorted(committed_files(root) - seen)
    stale = {e.name: e.stale for e in entries if e.stale}
    return Report(tuple(differ), tuple(missing), tuple(orphans), stale, skipped)


def write(main: Main, root: Path = REPO, entries: Sequence[Entry] | None = None) -> list[Path]:
    """Re-render every entry in place with ``main`` (its committed files replaced); returns
    the paths.

    Raises:
        RuntimeError: an entry whose real sets are not here (rendered without them, its
            committed tables would lose their rows); nothing is written.
    """
    entries = load(root / MANIFEST) if entries is None else entries
    blocked = [f"{e.name}: {why}" for e in entries if (why := unavailable(e)) is not None]
    if blocked:
        raise RuntimeError(f"cannot re-render {'; '.join(blocked)} (or leave it out: --only)")
    written = []
    with tempfile.TemporaryDirectory(prefix="committed-") as scratch:
        for i, entry in enumerate(entries):
            for path, rendered in render(entry, Path(scratch) / str(i), main, root).items():
                shutil.copyfile(rendered, root / path)
                written.append(root / path)
    return written
