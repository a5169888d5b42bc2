"""Rebuild the real sets that ``--data real`` reads (``python -m experiments real-data fetch``).

The public labelled sets of ``experiments/data/real_sets.toml`` are not in the repository. This
package downloads each from its public source at a pinned commit, verifies every file against
the committed manifest ``experiments/data/real_sources.toml`` (SHA-256 of each source file, and of
each converted set), converts and lays it out exactly as the tasks' readers expect, below a data
root whose folders are those of ``real_sets.toml``:

* :mod:`~experiments.data.fetch.manifest`: the manifest (repositories at commits, files, digests);
* :mod:`~experiments.data.fetch.sources`: the source files, from a local folder (``--from``), the
  download cache or the network, each verified;
* :mod:`~experiments.data.fetch.formats`: what converters share (their error, small readers);
* :mod:`~experiments.data.fetch.convert`: LitBank, CoNLL-2000, sentence polarity, CoNLL-2003,
  the SST trees, and the registry of converters the manifest names;
* :mod:`~experiments.data.fetch.propbank`: PropBank roles + the NLTK WSJ sample → CoNLL-2012;
* :mod:`~experiments.data.fetch.install`: per set, build beside, verify, rename into place.

Where the sets go by default, and how ``--data real`` finds them:
:func:`experiments.data.real_sets.shared_data_root`. The page: ``docs/real_data.md``.

Nothing here runs at import; only :func:`~experiments.data.fetch.sources.gather` uses the network.
"""

from __future__ import annotations

from experiments.data.fetch.install import (
    SetState,
    TermsNotAccepted,
    fetch,
    set_state,
    tree_digest,
)
from experiments.data.fetch.manifest import (
    MANIFEST,
    Manifest,
    ManifestError,
    Repository,
    SetSources,
    SourceFile,
    load_manifest,
)
from experiments.data.fetch.sources import ChecksumMismatch, SourceError

__all__ = [
    "MANIFEST",
    "ChecksumMismatch",
    "Manifest",
    "ManifestError",
    "Repository",
    "SetSources",
    "SetState",
    "SourceError",
    "SourceFile",
    "TermsNotAccepted",
    "fetch",
    "load_manifest",
    "set_state",
    "tree_digest",
]
