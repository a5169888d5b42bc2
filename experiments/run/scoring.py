"""A run's weights scored by the task's official-parity scorer: dev at every evaluation of the
loop (:func:`score_dev`: the EMA weights when EMA is on, what model selection needs) and every
requested split with the selected weights at the end (:func:`score_splits`, with the files a
record keeps: predictions in the task's official format, per-unit statistics, the readers' skip
counts)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bilm.files import write_json, write_text
from experiments.data.real_sets import portable_source
from experiments.run import health
from experiments.run.checkpoint import Weights
from experiments.run.setup import Run
from tasks.core import UnitStatistics

__all__ = ["score", "score_dev", "score_splits", "write_units"]


def score(run: Run, split: str) -> tuple[dict[str, float], Any]:
    """The official-parity metrics of ``split`` and the predictions they score (the model in
    evaluation mode)."""
    run.model.eval()
    examples = run.splits[split]
    with torch.no_grad():  # a trained representation's features too (collated here)
        predictions = run.recipe.predict(run.forward, examples, run.represent)
    return run.recipe.score(predictions, examples), predictions


def score_dev(run: Run) -> tuple[dict[str, float], Weights, int, UnitStatistics | None]:
    """The dev metrics of the weights evaluated (the EMA weights when EMA is on), those
    weights (frozen parameters never change: the live tensor, not a copy, e.g. a GloVe matrix),
    the number of distinct values they predict (:func:`health.prediction_values`) and, with
    :attr:`~experiments.run.setup.RunOptions.epoch_units`, the per-unit statistics of the
    predictions. The model is back in training mode afterwards.

    Raises:
        KeyError: the scorer did not return the task's selection metric.
    """
    context = run.ema.applied(run.model) if run.ema is not None else contextlib.nullcontext()
    with context:
        dev, predictions = score(run, "dev")
        values = health.prediction_values(predictions)
        units = (
            run.recipe.unit_statistics(predictions, run.splits["dev"]) if run.epoch_units else None
        )
        weights = {
            k: v.detach()
            if isinstance(v, nn.Parameter) and not v.requires_grad
            else v.detach().clone()
            for k, v in run.model.state_dict(keep_vars=True).items()
        }
    run.model.train()
    if run.task.metric.key not in dev:
        raise KeyError(
            f"the scorer returned {sorted(dev)}, not the selection metric {run.task.metric.key!r}"
        )
    return dev, weights, values, units


def score_splits(run: Run) -> tuple[dict[str, float], dict[str, Path]]:
    """``<split>_<metric>`` of every requested split, and the files written: the predictions
    in the official format, the per-unit statistics (paired significance tests) and the
    readers' skip counts of every split (shown under the run's tables)."""
    metrics: dict[str, float] = {}
    written: dict[str, Path] = {}
    for split in run.spec.eval_splits:
        scores, predictions = score(run, split)
        metrics.update({f"{split}_{k}": v for k, v in scores.items()})
        examples = run.splits[split]
        path = run.work / f"predictions-{split}"
        written[split] = run.recipe.write_predictions(predictions, examples, path)
        units = run.recipe.unit_statistics(predictions, examples)
        written[f"units-{split}"] = write_units(run.work / f"units-{split}.json", units)
    if run.recipe.read_stats:
        stats = {s: st.as_dict() for s, st in run.recipe.read_stats.items()}
        for entry in stats.values():  # no machine's absolute paths in a record
            if "source" in entry:
                entry["source"] = portable_source(str(entry["source"]))
        written["read-stats"] = write_text(
            run.work / "read-stats.json", json.dumps(stats, indent=1)
        )
    return metrics, written


def write_units(path: Path, units: UnitStatistics) -> Path:
    """``units`` as the JSON file a record keeps (``{"ids": [...], "rows": [[...], ...]}``)."""
    return write_json(path, {"ids": list(units.ids), "rows": [list(r) for r in units.rows]})
