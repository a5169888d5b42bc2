"""Dead runs: a training run that never learned, found from its evaluation log.

The loop (:mod:`experiments.run.runner`) adds to every evaluation's log line what the rules need:
``grad_norm_mean`` and ``grad_norm_max`` (the total gradient norm of the trainable parameters
before any clipping, over the optimizer steps since the previous evaluation; ``None`` when no
step was taken) and ``dev_prediction_values`` (:func:`prediction_values` of the dev predictions).
A run is **dead** when any of these holds (:func:`diagnose`):

* ``constant``: at the selected evaluation (the weights whose numbers the record stores) every
  dev prediction is the same value, or nothing is predicted at all (``dev_prediction_values``
  ≤ 1), or a selection metric where higher is better is exactly 0 there (an F1 of 0: no predicted
  unit is right, e.g. a tagger that predicts ``O`` everywhere but the given predicate);
* ``zero gradients``: the gradient norm was 0 at every optimizer step of some evaluation interval
  (no parameter could move: a frozen model, every ReLU unit dead, a detached loss);
* ``flat``: the dev selection metric equals its first value at every one of at least
  :data:`MIN_FLAT_EVALS` evaluations (lr 0, a collapsed model predicting the majority class).

The rule for predictions is generic, so no task declares anything: the predictions object (a
list, a mapping of example id → prediction, nested lists, tuples, tensors, dataclasses) is read
down to its atoms (labels, tags, answer strings, span offsets) and their distinct values counted.

The verdict is stored with the run: ``metrics.json`` gets ``dead`` (1.0 or 0.0) and the
attachment :data:`HEALTH_FILE` the reasons in words; tables mark a cell resting on a dead run
with :data:`DEAD_MARK` and name the runs and reasons in a footnote (``--exclude-dead`` leaves
them out of the means). A record written before these checks has no ``dead`` metric and counts
as not checked (never marked).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEAD_KEY",
    "DEAD_MARK",
    "HEALTH_FILE",
    "MIN_FLAT_EVALS",
    "Health",
    "diagnose",
    "health_json",
    "prediction_values",
    "record_reasons",
]

DEAD_KEY = "dead"  # the record's metric: 1.0 dead, 0.0 healthy, absent: not checked
HEALTH_FILE = "health.json"  # the record's attachment: {"dead": bool, "reasons": [...]}
DEAD_MARK = "☠"  # table cells using a dead run ("✝" would be mistaken for "†": not converged)
MIN_FLAT_EVALS = 3  # evaluations before an unchanged dev metric counts as flat


@dataclass(frozen=True)
class Health:
    """The verdict on one run.

    Attributes:
        reasons: why the run is dead, one sentence each (empty: healthy).
    """

    reasons: tuple[str, ...] = ()

    @property
    def dead(self) -> bool:
        """Whether any rule fired."""
        return bool(self.reasons)


def prediction_values(predictions: Any) -> int:
    """The number of distinct atomic values in a predictions object: labels, tags, answer
    strings, span offsets (0: nothing predicted).

    Mappings are read through their values (the keys are example ids), sequences, sets,
    tensors (``tolist``) and dataclasses through their items; strings and other scalars are
    atoms.
    """
    seen: set[Any] = set()
    for atom in _atoms(predictions):
        seen.add(_hashable(atom))
    return len(seen)


def _atoms(value: Any) -> Iterator[Any]:
    """The atoms below ``value``, depth first (iteratively: deep nesting is fine)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes | int | float | bool) or item is None:
            yield item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
        elif hasattr(item, "tolist") and callable(item.tolist):  # tensors, numpy arrays
            listed = item.tolist()
            stack.extend(listed if isinstance(listed, list) else [listed])
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        else:
            yield item


def _hashable(atom: Any) -> Any:
    try:
        hash(atom)
    except TypeError:
        return repr(atom)
    return atom


def diagnose(
    log: Sequence[Mapping[str, Any]],
    metric_key: str,
    higher_is_better: bool = True,
    selected_step: int | None = None,
) -> Health:
    """Apply the rules of the module docstring to a run's evaluation log.

    Args:
        log: the run's log lines, one per evaluation, in order.
        metric_key: the selection metric's key without the split (``"accuracy"``).
        higher_is_better: the metric's direction (a 0 is suspicious only where higher is
            better).
        selected_step: the optimizer step of the selected evaluation (``best_step``);
            ``None`` or not in the log: the constant-prediction rule is not applied.

    Returns:
        The verdict with its reasons in words.
    """
    key = f"dev_{metric_key}"
    reasons = []
    selected = next((r for r in log if r.get("step") == selected_step), None)
    if selected is not None:
        reasons += _constant_reasons(selected, key, higher_is_better)
    for record in log:
        norm = record.get("grad_norm_mean")
        if isinstance(norm, int | float) and norm == 0.0:
            reasons.append(
                f"zero gradients: the gradient norm was 0 at every optimizer step up to "
                f"epoch {record.get('epoch')} (step {record.get('step')})"
            )
            break
    values = [r[key] for r in log if isinstance(r.get(key), int | float)]
    if len(values) >= MIN_FLAT_EVALS and all(v == values[0] for v in values):
        reasons.append(
            f"flat dev metric: {key} stayed at its first value {values[0]:.6g} over all "
            f"{len(values)} evaluations"
        )
    return Health(tuple(reasons))


def _constant_reasons(record: Mapping[str, Any], key: str, higher_is_better: bool) -> list[str]:
    """The constant-prediction rule at the selected evaluation ``record``."""
    where = f"at the selected evaluation (epoch {record.get('epoch')}, step {record.get('step')})"
    count = record.get("dev_prediction_values")
    if isinstance(count, int) and count == 0:
        return [f"constant predictions: nothing predicted on dev {where}"]
    if isinstance(count, int) and count == 1:
        return [f"constant predictions: every dev prediction is the same value {where}"]
    value = record.get(key)
    if higher_is_better and isinstance(value, int | float) and value == 0.0:
        return [f"constant predictions: {key} is 0 {where}"]
    return []


def health_json(health: Health) -> str:
    """The :data:`HEALTH_FILE` attachment of a run."""
    return json.dumps({"dead": health.dead, "reasons": list(health.reasons)}, indent=1) + "\n"


def record_reasons(
    run_id: str,
    metrics: Mapping[str, float],
    attachments: Callable[[str, str], str | None] | None = None,
) -> str | None:
    """Why a stored run is dead, in words; ``None`` when it is not (or was never checked).

    Args:
        run_id: the run.
        metrics: its stored metrics (``dead`` among them when it was checked).
        attachments: reads a stored run's files (the reasons come from :data:`HEALTH_FILE`);
            ``None``: "reasons not read".
    """
    flag = metrics.get(DEAD_KEY)
    if flag is None or not math.isfinite(flag) or flag <= 0:
        return None
    text = attachments(run_id, HEALTH_FILE) if attachments is not None else None
    try:
        reasons = json.loads(text).get("reasons", []) if text else []
    except (json.JSONDecodeError, AttributeError):
        reasons = []
    return "; ".join(str(r) for r in reasons) or "reasons not read"
