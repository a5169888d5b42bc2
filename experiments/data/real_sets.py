"""The real, public, labelled data sets the tasks read in place
(``experiments/data/real_sets.toml``).

``--data real`` on ``compare`` and ``reproduce`` makes one table row per set (instead of one per
task on one data folder): each row's spec reads the set's folder, with the set's task
configuration changes, scored on the set's held-out split. A spec names such a folder by a
location-independent label, ``shared:<folder>`` (e.g. ``shared:real/litbank-coref``), resolved
against the shared data root at run time (:func:`data_path`), so the same run has the same id on
every clone; the run's identity still fingerprints the files it read.

The shared data root (:func:`shared_data_root`) is ``$ELMO_BENCH_SHARED/data`` when that variable
is set, else ``../shared/data`` beside the repository when it is there (where CI and the
developers' machines keep it), else the copy ``python -m experiments real-data fetch`` rebuilds
from the sets' public sources in the project's cache (:func:`fetched_data_root`) when it is
there (``docs/real_data.md``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FAMILIES",
    "FETCH_COMMAND",
    "REAL",
    "REAL_SEEDS",
    "SHARED_PREFIX",
    "SHARED_ROOT_TEXT",
    "SHIPPED_ELMO_FAMILIES",
    "RealSet",
    "data_path",
    "fetch_command",
    "fetch_command_for",
    "fetched_data_root",
    "is_shared",
    "missing_folders",
    "missing_hint",
    "missing_sets",
    "named_set",
    "real_sets",
    "root_of",
    "shared_data_root",
]

#: The ``--data`` value whose rows are the real sets.
REAL = "real"
#: Seeds of ``reproduce real`` unless given (three per cell).
REAL_SEEDS = (0, 1, 2)
#: Prefix of a spec's data label naming a folder below the shared data root.
SHARED_PREFIX = "shared:"
#: How captions and messages name the shared data root (never this machine's path).
SHARED_ROOT_TEXT = "../shared/data beside the repository, or $ELMO_BENCH_SHARED/data"
#: The command that rebuilds the sets from their public sources (:mod:`experiments.data.fetch`).
FETCH_COMMAND = "python -m experiments real-data fetch"
_BESIDE = Path(__file__).resolve().parents[3] / "shared"
_REGISTRY = Path(__file__).with_name("real_sets.toml")


@dataclass(frozen=True)
class RealSet:
    """One real data set a task reads (a section of ``real_sets.toml``).

    Attributes:
        name: the section name, e.g. ``"litbank-coref"``.
        task: the registered task that reads it.
        label: the row label, e.g. ``"LitBank coreference"``.
        folder: below the shared data root, e.g. ``"real/litbank-coref"``.
        split: the split its numbers are scored on (``dev`` where the test split is held back).
        overrides: task configuration changes the set needs (``--set`` syntax).
        licence: the set's licence, as its README states it.
        reference: a published figure on the set, with its citation (another setup: shown for
            orientation, never as a reproduction); ``""`` when there is none.
        left_out_of: the named tables (``reproduce`` names) that leave the set out, each with
            why (the table's caption says it), e.g. runs too long for the machine.
        preset_overrides: task configuration changes the set needs under one preset only
            (preset → changes, applied after ``overrides``), e.g. an epoch cap on the ``paper``
            preset's recipe.
        family: the tables whose rows it makes: ``"real"`` (stand-ins for the paper's data:
            ``--data real``) or ``"paper"`` (a data set of the paper's Table 1:
            ``reproduce paper-data``).
        published: published test figures of the paper's baseline on the set (source →
            figure as printed, e.g. ``"Peters et al. (2018), Table 1" = "90.15"``), shown
            beside its row.
    """

    name: str
    task: str
    label: str
    folder: str
    split: str
    overrides: tuple[str, ...] = ()
    licence: str = ""
    reference: str = ""
    left_out_of: tuple[tuple[str, str], ...] = ()
    preset_overrides: tuple[tuple[str, tuple[str, ...]], ...] = ()
    family: str = "real"
    published: tuple[tuple[str, str], ...] = ()

    def changes(self, preset: str) -> tuple[str, ...]:
        """The task configuration changes of the set's runs under ``preset`` (before the
        user's): ``overrides``, then the preset's own (:attr:`preset_overrides`)."""
        return (*self.overrides, *dict(self.preset_overrides).get(preset, ()))

    def left_out_reason(self, table: str) -> str | None:
        """Why the named ``table`` leaves this set out, or ``None`` where it has a row."""
        return dict(self.left_out_of).get(table)

    @property
    def data(self) -> str:
        """The spec's data label (``shared:<folder>``)."""
        return SHARED_PREFIX + self.folder

    @property
    def eval_splits(self) -> tuple[str, ...]:
        """The splits its runs score: dev always (model selection), and test when it is the
        split of the numbers."""
        return ("dev", "test") if self.split == "test" else ("dev",)


#: The families of real sets (:attr:`RealSet.family`): the stand-ins of ``--data real``, and the
#: data sets of the paper's own Table 1 (``reproduce paper-data``).
FAMILIES = ("real", "paper")
#: The families whose runs take the shipped small biLM as ELMo unless ``--elmo`` names another,
#: in every preset: the paper's own data sets are run where the published ELMo may not be
#: reachable, and their tables say plainly that the column is not the published model.
SHIPPED_ELMO_FAMILIES = frozenset({"paper"})


def real_sets(
    tasks: Sequence[str] | None = None,
    path: Path = _REGISTRY,
    *,
    family: str | None = None,
) -> list[RealSet]:
    """The registered real sets, in file order (only those of ``tasks`` when given, only those
    of ``family`` when given).

    Raises:
        ValueError: a section that names an unknown task or split, or lacks a field.
    """
    from tasks.registry import TASKS

    with path.open("rb") as handle:
        sections = tomllib.load(handle)
    out = []
    for name, entry in sections.items():
        reasons = entry.get("left_out_of", {})
        if not isinstance(reasons, dict):
            raise ValueError(f"{path}: [{name}] left_out_of is not a table of reasons")
        by_preset = entry.get("preset_overrides", {})
        if not isinstance(by_preset, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in by_preset.values()
        ):
            raise ValueError(f"{path}: [{name}] preset_overrides is not preset = [changes]")
        published = entry.get("published", {})
        if not isinstance(published, dict) or not all(
            isinstance(v, str) and v for v in published.values()
        ):
            raise ValueError(f'{path}: [{name}] published is not source = "figure"')
        try:
            item = RealSet(
                name=name,
                task=entry["task"],
                label=entry["label"],
                folder=entry["folder"],
                split=entry["split"],
                overrides=tuple(entry.get("overrides", ())),
                licence=entry.get("licence", ""),
                reference=entry.get("reference", ""),
                left_out_of=tuple(reasons.items()),
                preset_overrides=tuple((k, tuple(v)) for k, v in by_preset.items()),
                family=entry.get("family", "real"),
                published=tuple(published.items()),
            )
        except KeyError as error:
            raise ValueError(f"{path}: [{name}] lacks {error.args[0]!r}") from None
        if not all(isinstance(v, str) and v for _, v in item.left_out_of):
            raise ValueError(f"{path}: [{name}] left_out_of: each table needs a reason")
        if item.family not in FAMILIES:
            raise ValueError(f"{path}: [{name}] family {item.family!r}: one of {FAMILIES}")
        if item.task not in TASKS or item.split not in ("dev", "test"):
            raise ValueError(f"{path}: [{name}] task {item.task!r} / split {item.split!r}")
        if (tasks is None or item.task in tasks) and family in (None, item.family):
            out.append(item)
    return out


def fetched_data_root() -> Path:
    """Where ``python -m experiments real-data fetch`` puts the sets unless told otherwise:
    ``shared/data`` in the project's cache (``$ELMO_BENCH_CACHE``, else ``~/.cache/elmo-bench``),
    laid out as ``../shared/data`` is."""
    from bilm.pretrained import cache_root

    return cache_root() / "shared" / "data"


def shared_data_root() -> Path:
    """The data root ``shared:`` labels resolve against, the first that applies:

    1. ``$ELMO_BENCH_SHARED/data`` when that variable is set (whether or not it exists);
    2. ``../shared/data`` beside the repository, when it is there;
    3. :func:`fetched_data_root`, when it is there (the user ran :data:`FETCH_COMMAND`);
    4. else ``../shared/data`` (absent: the messages about missing folders name it).
    """
    env = os.environ.get("ELMO_BENCH_SHARED")
    if env:
        return Path(env).expanduser() / "data"
    beside = _BESIDE / "data"
    if beside.is_dir():
        return beside
    fetched = fetched_data_root()
    return fetched if fetched.is_dir() else beside


def fetch_command() -> str:
    """:data:`FETCH_COMMAND` as it puts the sets where ``shared:`` labels look now: with
    ``--out`` when ``$ELMO_BENCH_SHARED`` is set (the only root read then); otherwise the
    fetched copy in the cache is read wherever ``../shared/data`` lacks a set (:func:`_roots`)."""
    if os.environ.get("ELMO_BENCH_SHARED"):
        return f"{FETCH_COMMAND} --out {shared_data_root()}"
    return FETCH_COMMAND


def fetch_command_for(missing: Iterable[str]) -> str:
    """:func:`fetch_command` for missing ``shared:`` folders (``missing``: their paths): the
    registered sets among them named with ``--sets``, and with ``--accept-terms`` those whose
    terms must be acknowledged."""
    names = [s.name for s in real_sets() for path in missing if path.endswith("/" + s.folder)]
    command = fetch_command()
    if names:
        from experiments.data.fetch import load_manifest

        sources = load_manifest().sets
        terms = [n for n in names if n in sources and sources[n].terms]
        command += f" --sets {','.join(names)}"
        command += f" --accept-terms {','.join(terms)}" if terms else ""
    return command


def missing_hint(missing: Iterable[str] = ()) -> str:
    """How to supply missing ``shared:`` folders, for a message that has named them
    (``missing``: their paths, named in the fetch command: :func:`fetch_command_for`)."""
    command = fetch_command_for(missing)
    command += " (read the terms first)" if "--accept-terms" in command else ""
    return (
        f"rebuild them from their public sources with {command} (docs/real_data.md), "
        f"put the shared folder beside the repository ({_BESIDE}) or set ELMO_BENCH_SHARED to "
        "the folder that holds data/"
    )


def portable_source(source: str) -> str:
    """``source`` (a reader's files, comma-separated) as a record stores it: a path below the
    shared data root as ``shared:<folder>/…``, below the home folder as ``~/…``; anything else
    (a relative path, a Hub name) unchanged. Records then name no machine's folders."""
    found = {shared_data_root(), *_roots()}
    roots = [(f"{str(r).rstrip('/')}/", SHARED_PREFIX) for x in found for r in {x, x.resolve()}]
    roots.append((f"{str(Path.home()).rstrip('/')}/", "~/"))
    parts = []
    for part in source.split(", "):
        for prefix, label in roots:
            if part.startswith(prefix):
                part = label + part[len(prefix) :]
                break
        parts.append(part)
    return ", ".join(parts)


def is_shared(label: str) -> bool:
    """Whether a data label names a folder below the shared data root."""
    return label.startswith(SHARED_PREFIX)


def data_path(label: str) -> str | None:
    """Where a spec's data is read from: ``None`` for the bundled DEMO set, for
    ``shared:<folder>`` the folder below the first data root that holds it (:func:`_roots`;
    below :func:`shared_data_root` when none does), else the label itself (a folder the user
    gave)."""
    if label == "demo":
        return None
    if is_shared(label):
        folder = label.removeprefix(SHARED_PREFIX)
        return str(root_of(folder) / folder)
    return label


def root_of(folder: str) -> Path:
    """The data root a ``shared:`` folder is read below: the first of :func:`_roots` that holds
    it, else :func:`shared_data_root` (where the messages about missing folders look)."""
    for root in _roots():
        if (root / folder).is_dir():
            return root
    return shared_data_root()


def _roots() -> list[Path]:
    """The data roots a ``shared:`` folder is looked for in, in order: ``$ELMO_BENCH_SHARED/data``
    alone when that variable is set; else ``../shared/data`` beside the repository, then
    :func:`fetched_data_root` (so a set fetched into the cache is found beside a shared folder
    that lacks it)."""
    env = os.environ.get("ELMO_BENCH_SHARED")
    if env:
        return [Path(env).expanduser() / "data"]
    return [_BESIDE / "data", fetched_data_root()]


def missing_folders(labels: Iterable[str]) -> list[str]:
    """The folders that the ``shared:`` labels among ``labels`` name and this machine lacks,
    sorted (``[]``: all present; other labels are not checked)."""
    folders = {str(data_path(label)) for label in labels if is_shared(label)}
    return sorted(f for f in folders if not Path(f).is_dir())


def missing_sets(sets: Sequence[RealSet]) -> list[str]:
    """The folders of ``sets`` that are not on this machine (``[]``: all present)."""
    return missing_folders(s.data for s in sets)


def named_set(value: str) -> RealSet | None:
    """The registered set ``value`` names (exactly its name), else ``None``: never for a
    value with a ``/`` (a folder), a ``NAME:`` label (``shared:``, ``hf:``), ``demo`` or
    ``real``, which are read without the registry."""
    if "/" in value or ":" in value or value in ("demo", REAL):
        return None
    return next((s for s in real_sets() if s.name == value), None)
