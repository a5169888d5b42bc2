"""A stored run's spec read back, and what changed since it was recorded (``run --spec``).

The spec file of a stored run (``<store>/<task>/<run_id>/spec.json``, :meth:`RunSpec.to_dict`)
is read as it is; the ``env.json`` beside it says what the run was made from
(``provenance.identity``, :mod:`experiments.run.identity`) and with which code
(``provenance.code``). :func:`differences` compares both with what this code, these files and
these options give now; :func:`compare_metrics` compares a replay's metrics with the recorded
``metrics.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.plan.specs import PlanError
from experiments.run import identity
from experiments.run.errors import one_line
from experiments.run.spec import RunSpec

__all__ = [
    "ENV_FILE",
    "METRICS_FILE",
    "SPEC_FILE",
    "compare_metrics",
    "differences",
    "read_json",
    "read_spec",
    "recorded_env",
]

SPEC_FILE = "spec.json"
ENV_FILE = "env.json"
METRICS_FILE = "metrics.json"


def read_json(path: Path, what: str) -> Any:
    """One JSON file of the replayed run.

    Raises:
        PlanError: it is missing, unreadable or not JSON (naming the file).
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"--spec {path}: no such file ({what})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PlanError(f"--spec {path}: cannot be read ({one_line(error)})") from None
    except json.JSONDecodeError as error:
        raise PlanError(
            f"--spec {path}: not valid JSON ({error.msg}: line {error.lineno}, "
            f"column {error.colno})"
        ) from None


def read_spec(path: Path) -> tuple[RunSpec, Path]:
    """The spec of a stored run and its file (a run folder stands for its ``spec.json``).

    Raises:
        PlanError: the file is missing, not JSON or not a :class:`RunSpec`.
    """
    file = path / SPEC_FILE if path.is_dir() else path
    data = read_json(file, "the spec.json of a stored run")
    try:
        if not isinstance(data, Mapping):
            raise TypeError(f"a JSON object was expected, got {type(data).__name__}")
        return RunSpec.from_dict(data), file
    except (KeyError, TypeError, ValueError) as error:
        raise PlanError(f"--spec {file}: not a run spec ({one_line(error)})") from None


def recorded_env(folder: Path) -> tuple[dict[str, Any] | None, str]:
    """``(env.json, why it is absent)`` of the run folder holding the spec file."""
    path = folder / ENV_FILE
    if not path.is_file():
        return None, f"no {ENV_FILE} beside it, so what the run was made from is unknown"
    env = read_json(path, "the run's provenance")
    return (env, "") if isinstance(env, dict) else (None, f"{path} is not a JSON object")


def differences(
    spec: RunSpec, env: Mapping[str, Any], now: identity.RunIdentity, code: identity.CodeVersion
) -> list[str]:
    """Why a replay of ``spec`` would not be the recorded run: one phrase per difference
    between the record's ``env.json`` and the identity and code of now (empty: none).

    Args:
        spec: the spec read from the file.
        env: the record's ``env.json``.
        now: :func:`~experiments.run.identity.run_identity` of ``spec`` with this command's options.
        code: :func:`~experiments.run.identity.code_version` of this process.
    """
    provenance = env.get("provenance")
    provenance = provenance if isinstance(provenance, Mapping) else {}
    reasons: list[str] = []
    recorded_id = env.get("run_id")
    if isinstance(recorded_id, str) and recorded_id != spec.run_id:
        reasons.append(f"the spec now has run id {spec.run_id}, recorded as {recorded_id}")
    reasons += identity.reuse_differences(provenance.get("identity"), now)
    recorded_code = provenance.get("code")
    before = recorded_code.get("harness_hash") if isinstance(recorded_code, Mapping) else None
    if not before:
        reasons.append("no recorded code version (a record older than code versions)")
    elif before != code.harness_hash:
        commit = recorded_code.get("git_sha") if isinstance(recorded_code, Mapping) else None
        at = f", recorded at commit {commit[:7]}" if isinstance(commit, str) else ""
        reasons.append(
            f"code changed (sources of bilm/, tasks/, experiments/ {before[:8]} → "
            f"{code.harness_hash[:8]}{at})"
        )
    return reasons


def compare_metrics(record: Mapping[str, float], folder: Path) -> str:
    """One line: the replay's metrics against the recorded ``metrics.json``."""
    path = folder / METRICS_FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"no readable {path} to compare the metrics with"
    if not isinstance(recorded, dict):
        return f"{path} is not a JSON object: metrics not compared"
    changed = [
        f"{key} {recorded.get(key)!r} → {record.get(key)!r}"
        for key in sorted(set(recorded) | set(record))
        if recorded.get(key) != record.get(key)
    ]
    if not changed:
        return f"metrics identical to the recorded run ({path})"
    more = f" (+{len(changed) - 4} more)" if len(changed) > 4 else ""
    return f"metrics differ from the recorded run ({path}): {'; '.join(changed[:4])}{more}"
