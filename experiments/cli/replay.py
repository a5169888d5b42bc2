"""``run --spec SPEC.json``: replay a stored run from its ``spec.json``.

The spec file of a stored run (``<store>/<task>/<run_id>/spec.json``, :meth:`RunSpec.to_dict`)
is read as it is and trained into ``--store`` under the same run id. The ``env.json`` beside it
says what the run was made from (``provenance.identity``, :mod:`experiments.run.identity`) and with
which code (``provenance.code``); before anything trains, both are compared with what this code,
these files and these options give now:

* the identity's fields (:data:`~experiments.run.identity.REUSE_FIELDS`: data, representation,
  resolved configuration, device kind, precision, threads, result versions);
* the hash of the sources of ``bilm``, ``tasks`` and ``experiments``
  (:class:`~experiments.run.identity.CodeVersion`).

Any difference (or no ``env.json`` to compare with) refuses the replay in one line (exit status
2) naming each difference, unless ``--allow-changed``: then the run trains and the differences
are printed first. A spec is data: one whose representation is a plug-in
(``package.module:Factory``) is refused before anything is imported unless ``--trust-plugin``
names it (:mod:`experiments.cli.trust`), whatever ``env.json`` says and with or without
``--allow-changed``. After the run, its metrics are compared with the recorded ``metrics.json``.

The options that build a spec (the task, ``--repr``, ``--sites``, ``--set``, ``--seeds``,
``--data``, ...) are refused beside ``--spec``: the file is the whole spec. Where, how and into
which store it trains (``--device``, ``--precision``, ``--threads``, ``--store``, ``--work``,
``--rerun``, ...) are taken as for any ``run``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.cli.errors import UsageError
from experiments.cli.trust import add_trust_option, require_trusted
from experiments.plan.replay import compare_metrics, differences, read_spec, recorded_env
from experiments.run import identity

__all__ = ["SPEC_OPTIONS", "add_replay_options", "replay"]

#: The ``run`` options that build a spec (argparse dest → what the error calls it): refused
#: beside ``--spec``.
SPEC_OPTIONS: dict[str, str] = {
    "task": "the TASK argument",
    "repr": "--repr",
    "repr_set": "--repr-set",
    "sites": "--sites",
    "mode": "--mode",
    "lam": "--lam",
    "layer_norm": "--layer-norm",
    "dropout": "--dropout",
    "state": "--state",
    "limit": "--limit",
    "max_epochs": "--max-epochs",
    "seeds": "--seeds",
    "data": "--data",
    "config": "--config",
    "overrides": "--set",
    "eval_split": "--eval-split",
    "elmo": "--elmo",
    "glove": "--glove",
    "cove": "--cove",
    "turian": "--turian",
    "finetune_bilm": "--finetune-bilm",
}


def add_replay_options(parser: argparse.ArgumentParser) -> None:
    """``--spec SPEC.json`` and ``--allow-changed`` (``run``'s replay of a stored run)."""
    parser.add_argument(
        "--spec",
        type=Path,
        metavar="SPEC.json",
        help="replay a stored run: train the spec.json of <store>/<task>/<run_id>/ (or that "
        "folder) into --store under the same run id; refused when its recorded code or data "
        "fingerprints differ from now. Not with TASK or the options that build a spec",
    )
    parser.add_argument(
        "--allow-changed",
        action="store_true",
        help="with --spec: train even where what the run was made from changed (data, biLM, "
        "configuration, code, device, precision, threads); the differences are printed. It "
        "never allows a plug-in representation: see --trust-plugin",
    )
    add_trust_option(parser)


def _given_spec_options(args: argparse.Namespace, default: Callable[[str], Any]) -> list[str]:
    """The spec-building options ``args`` holds at other than ``default(dest)``."""
    return [
        name for dest, name in SPEC_OPTIONS.items() if getattr(args, dest, None) != default(dest)
    ]


def replay(args: argparse.Namespace, default: Callable[[str], Any]) -> int:
    """``run --spec SPEC.json``: check, train into ``--store`` (unless stored there), print the
    run's JSON line as ``run`` does, and compare its metrics with the recorded ones.

    Args:
        args: the parsed ``run`` command line.
        default: the ``run`` parser's default of an argparse dest
            (``ArgumentParser.get_default``): an option of :data:`SPEC_OPTIONS` at another
            value was given.

    Raises:
        UsageError: a spec-building option beside ``--spec``, an unreadable spec file, or a
            recorded identity or code that differs from now without ``--allow-changed``;
            nothing has trained.
    """
    from experiments.cli.training import resolver_of, run_all, training_request, validate_specs

    given = _given_spec_options(args, default)
    if given:
        raise UsageError(
            f"--spec replays a stored spec as it is: {', '.join(given)} cannot be given with it"
        )
    spec, file = read_spec(args.spec)
    require_trusted(spec, args.trust_plugin, f"--spec {file}")  # before anything is imported
    resolver = resolver_of(args)  # the run resolved and identified once, for all that follows
    validate_specs([spec], resolver)  # the task is registered, its preset and options still valid
    env, absent = recorded_env(file.parent)
    if env is None:
        reasons = [absent]
    else:
        reasons = differences(spec, env, resolver.identify(spec), identity.code_version())
    if reasons and not args.allow_changed:
        raise UsageError(
            f"--spec {file}: run {spec.run_id} would not be the recorded run: "
            f"{'; '.join(reasons)}; pass --allow-changed to train it anyway (or --device, "
            "--precision, --threads as recorded)"
        )
    if reasons:
        print(
            f"replaying run {spec.run_id} although it changed: {'; '.join(reasons)}",
            file=sys.stderr,
        )
    store = run_all([spec], training_request(args, f"replay-{spec.task}-{spec.run_id}", resolver))
    metrics = store.get(spec.run_id).metrics
    print(json.dumps({"run_id": spec.run_id, "seed": spec.seed, **metrics}))
    print(f"replay of {spec.run_id}: {compare_metrics(metrics, file.parent)}", file=sys.stderr)
    return 0
