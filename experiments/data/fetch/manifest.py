"""The committed manifest of the real sets' sources: ``experiments/data/real_sources.toml``.

It names each upstream repository at a full commit, and for each set (a section name of
``experiments/data/real_sets.toml``) the converter that builds it, its licence and citation, every
source file it reads with that file's SHA-256, and the digest of the converted set
(:func:`~experiments.data.fetch.install.tree_digest`). A source file is downloaded from
``https://raw.githubusercontent.com/<owner>/<name>/<commit>/<path>``, which serves exactly the
bytes of the file at that commit.
"""

from __future__ import annotations

import re
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST",
    "RAW_URL",
    "Manifest",
    "ManifestError",
    "Repository",
    "SetSources",
    "SourceFile",
    "load_manifest",
    "registry_folders",
]

#: The committed manifest.
MANIFEST = Path(__file__).resolve().parents[1] / "real_sources.toml"
#: Where a file of a GitHub repository at a commit is served, byte for byte.
RAW_URL = "https://raw.githubusercontent.com/{github}/{commit}"
_REGISTRY = Path(__file__).resolve().parents[1] / "real_sets.toml"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class ManifestError(ValueError):
    """The manifest is malformed (the message names the file and the entry)."""


@dataclass(frozen=True)
class Repository:
    """One upstream repository at one commit.

    Attributes:
        key: the manifest's name for it, also its folder in a ``--from`` folder
            (e.g. ``"litbank"``).
        github: ``owner/name`` on GitHub.
        commit: the full commit every file is read at.
        licence: its licence, as the repository states it.
        raw: base URL its files are downloaded below (default: raw.githubusercontent.com at the
            commit; a test points it at a ``file://`` folder).
        installed_prefix: a leading folder an installed copy leaves out (nltk_data's
            ``packages/``: an NLTK data folder holds ``corpora/treebank.zip``), or ``""``.
    """

    key: str
    github: str
    commit: str
    licence: str
    raw: str
    installed_prefix: str = ""

    @property
    def page(self) -> str:
        """The repository's page at the commit."""
        return f"https://github.com/{self.github}/tree/{self.commit}"

    @property
    def short(self) -> str:
        """``github.com/owner/name@abcdef12`` (the commit's first 8 digits)."""
        return f"github.com/{self.github}@{self.commit[:8]}"


@dataclass(frozen=True)
class SourceFile:
    """One source file: a path of a repository at its commit, and its pinned SHA-256."""

    repository: Repository
    path: str
    sha256: str

    @property
    def url(self) -> str:
        """Where it is downloaded from."""
        return f"{self.repository.raw.rstrip('/')}/{urllib.parse.quote(self.path)}"

    @property
    def label(self) -> str:
        """``<repository key>/<path>``: how messages and the download cache name it."""
        return f"{self.repository.key}/{self.path}"


@dataclass(frozen=True)
class SetSources:
    """How one real set is rebuilt.

    Attributes:
        name: the set's name (a section of ``real_sets.toml``), e.g. ``"litbank-coref"``.
        folder: its folder below the data root, e.g. ``"real/litbank-coref"``.
        converter: the name of its converter (:data:`experiments.data.fetch.convert.CONVERTERS`;
            checked when the set is built).
        licence: the licence of what it holds.
        citation: what to cite when using it.
        files: every source file it reads, in manifest order.
        output_files: how many files the converted set has.
        output_sha256: the converted set's digest (``tree_digest``).
        terms: for a set whose text may not be redistributed, the terms a user acknowledges
            by name (``real-data fetch --accept-terms NAME``) before it is fetched; ``""``:
            none.
    """

    name: str
    folder: str
    converter: str
    licence: str
    citation: str
    files: tuple[SourceFile, ...]
    output_files: int
    output_sha256: str
    terms: str = ""

    @property
    def repositories(self) -> tuple[Repository, ...]:
        """The repositories its files come from, in manifest order."""
        return tuple(dict.fromkeys(f.repository for f in self.files))


@dataclass(frozen=True)
class Manifest:
    """A loaded manifest: its repositories and sets, in file order."""

    path: Path
    repositories: Mapping[str, Repository]
    sets: Mapping[str, SetSources]

    def select(self, names: tuple[str, ...] | None) -> list[SetSources]:
        """The sets named (all when ``None``), in manifest order.

        Raises:
            KeyError: an unknown name (the message lists the known ones).
        """
        if names is None:
            return list(self.sets.values())
        unknown = [n for n in names if n not in self.sets]
        if unknown:
            raise KeyError(f"no real set {', '.join(unknown)}; known: {', '.join(self.sets)}")
        return [s for n, s in self.sets.items() if n in names]


def registry_folders(path: Path = _REGISTRY) -> dict[str, str]:
    """Each section of ``real_sets.toml`` → its ``folder`` (read without importing the tasks)."""
    with path.open("rb") as handle:
        sections = tomllib.load(handle)
    return {name: str(entry["folder"]) for name, entry in sections.items() if "folder" in entry}


def _text(table: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or (default is None and not value):
        raise ManifestError(f"{where}: {key!r} must be a non-empty string")
    return value


def _repository(key: str, table: Mapping[str, Any], where: str) -> Repository:
    github = _text(table, "github", where)
    commit = _text(table, "commit", where)
    if not _COMMIT.fullmatch(commit):
        raise ManifestError(f"{where}: commit {commit!r} is not a full 40-digit commit hash")
    raw = _text(table, "raw", where, RAW_URL.format(github=github, commit=commit))
    return Repository(
        key=key,
        github=github,
        commit=commit,
        licence=_text(table, "licence", where),
        raw=raw,
        installed_prefix=_text(table, "installed_prefix", where, ""),
    )


def _set(
    name: str,
    table: Mapping[str, Any],
    repositories: Mapping[str, Repository],
    folders: Mapping[str, str],
    where: str,
) -> SetSources:
    folder = table.get("folder", folders.get(name))
    if not isinstance(folder, str) or not folder:
        raise ManifestError(f"{where}: no 'folder', and real_sets.toml has no set {name!r}")
    files: list[SourceFile] = []
    groups = table.get("files")
    if not isinstance(groups, dict) or not groups:
        raise ManifestError(f"{where}: no files (a table files.<repository> of path = sha256)")
    for key, entries in groups.items():
        if key not in repositories:
            raise ManifestError(f"{where}: files.{key}: no [repositories.{key}]")
        for path, digest in entries.items():
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise ManifestError(f"{where}: files.{key}: {path!r} has no lowercase sha256")
            if any(file.path == path for file in files):
                raise ManifestError(
                    f"{where}: {path!r} is named twice (a set reads one file a path)"
                )
            files.append(SourceFile(repositories[key], path, digest))
    count = table.get("output_files")
    output = _text(table, "output_sha256", where)
    if not isinstance(count, int) or count < 1 or not _SHA256.fullmatch(output):
        raise ManifestError(f"{where}: output_files / output_sha256 missing or malformed")
    return SetSources(
        name=name,
        folder=folder,
        converter=_text(table, "converter", where),
        licence=_text(table, "licence", where),
        citation=_text(table, "citation", where),
        files=tuple(files),
        output_files=count,
        output_sha256=output,
        terms=_text(table, "terms", where, ""),
    )


def load_manifest(path: Path | None = None, folders: Mapping[str, str] | None = None) -> Manifest:
    """Read and check a manifest.

    Args:
        path: the TOML file (default: :data:`MANIFEST`, the committed
            ``experiments/data/real_sources.toml``).
        folders: set name → folder below the data root, for sets whose section gives no
            ``folder`` (default: those of ``experiments/data/real_sets.toml``).

    Raises:
        ManifestError: a TOML syntax error (with its line) or a malformed entry (named).
    """
    path = MANIFEST if path is None else path
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ManifestError(f"{path}: {error}") from None
    folders = registry_folders() if folders is None else folders
    repositories = {
        key: _repository(key, table, f"{path}: [repositories.{key}]")
        for key, table in data.get("repositories", {}).items()
    }
    sets = {}
    for name, table in data.get("sets", {}).items():
        sets[name] = _set(name, table, repositories, folders, f"{path}: [sets.{name}]")
    if not sets:
        raise ManifestError(f"{path}: no [sets.<name>] section")
    return Manifest(path=path, repositories=repositories, sets=sets)
