"""What a spec handed to a command may run: a spec is data.

A stored run's ``spec.json`` (``run --spec``) and a store's records (``predict``) name their
representation. A registered name (``elmo``, ``hf``, …) builds the project's own code from the
spec's options; a plug-in, ``package.module:Factory``, is code: building it imports the module
(its top-level code runs) and calls the factory with the spec's options. So these commands
refuse a plug-in that the command line does not name with ``--trust-plugin
package.module:Factory``, before anything is imported, whatever else is given
(``--allow-changed`` allows changed inputs, never code). They also never import from the folder
they are started in: a plug-in is found on ``PYTHONPATH`` (``PYTHONPATH=. python -m experiments
…`` to trust the current folder's modules too).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments.cli.errors import UsageError
from experiments.run.spec import RunSpec

__all__ = ["add_trust_option", "drop_working_folder", "require_trusted"]

#: The project's own root (the folder holding ``experiments/``): a clone's root stays importable.
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def add_trust_option(parser: argparse.ArgumentParser) -> None:
    """``--trust-plugin MODULE:FACTORY`` (repeatable)."""
    parser.add_argument(
        "--trust-plugin",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="build this plug-in representation when a stored spec names it (its module is "
        "imported and run; found on PYTHONPATH). Without it such a spec is refused",
    )


def require_trusted(spec: RunSpec, trusted: Sequence[str], source: str) -> None:
    """Refuse ``spec`` when its representation is a plug-in ``trusted`` does not name.

    Args:
        spec: the spec read from a file or a store.
        trusted: the ``--trust-plugin`` values.
        source: what the spec came from, for the message (e.g. ``--spec FILE``).

    Raises:
        UsageError: one line naming the plug-in and the flag that trusts it.
    """
    plugin = spec.plugin
    if plugin is None or plugin in trusted:
        return
    also = f" (--trust-plugin names only {', '.join(trusted)})" if trusted else ""
    raise UsageError(
        f"{source}: run {spec.run_id}'s representation is the plug-in {plugin!r}, code that "
        f"building it would import and run; a spec is data, so it is refused{also}. If you "
        f'trust that code, pass --trust-plugin {plugin} (docs/runs.md, "What a spec may run")'
    )


def drop_working_folder() -> None:
    """Take the folder the command started in off ``sys.path`` (``python -m`` puts it first),
    unless it is the project's own root or ``PYTHONPATH`` names it: a module there that shares
    a name with a plug-in or a dependency is then never imported by accident."""
    here = Path.cwd().resolve()
    if here == _PROJECT_ROOT:
        return
    named = {
        Path(p or ".").resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    }
    if here in named:
        return
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
