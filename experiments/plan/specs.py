"""Requests into run specs: a task's Table 1 ELMo spec, its baseline, ``run``'s point and
``sweep``'s grid, and what a ``--data`` value means for one task.

A task's base spec is the paper's ELMo configuration for it, read from its
:class:`~tasks.core.TaskSpec` (default sites, mix and ELMo dropout for the preset); its biLM is
the one the command line names or, when it names none, the preset's (:func:`bilm_config_for`:
the ``paper`` preset runs the published ELMo and fine-tunes it where the paper did, A.1). The
tables of :mod:`experiments.report.reproductions` and ``run``/``sweep`` build their specs here,
so the same request gives the same run ids whichever command makes it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.data.real_sets import SHIPPED_ELMO_FAMILIES, named_set
from experiments.plan.requests import BaseRequest, Data, RunRequest, SweepRequest
from experiments.run.spec import NO_REPRESENTATION, RunSpec, baseline_of, derive, expand_sweep
from tasks.core import TaskSpec
from tasks.representations import REPRESENTATION_OPTIONS

__all__ = [
    "BILM_SOURCES",
    "PAPER_PRESET",
    "PUBLISHED_ELMO",
    "DataChoice",
    "PlanError",
    "base_spec",
    "baseline",
    "bilm_config_for",
    "data_choice",
    "data_of",
    "mapped_tasks",
    "model_of",
    "preset_bilm",
    "request_base",
    "run_specs",
    "sweep_specs",
]

#: The preset of the paper's own recipes (``--config paper``).
PAPER_PRESET = "paper"
#: The published biLM of the paper (``--elmo published:original``): the ``paper`` preset's ELMo.
PUBLISHED_ELMO = "original"
#: The keys of a biLM configuration that say which weights it loads (none: the preset's biLM).
BILM_SOURCES = ("checkpoint", "options", "weights", "published")


class PlanError(ValueError):
    """A request that gives no runs (an unknown task's data, a set another task reads, an
    option that does not apply): one line, exit status 2 on the command line."""


def data_of(data: Data, task_name: str) -> str:
    """The data value of a task: ``data`` itself, or its entry for the task.

    Raises:
        KeyError: ``data`` is a mapping without the task.
    """
    if isinstance(data, str):
        return data
    if task_name not in data:
        raise KeyError(f"--data names no data for {task_name} (it names {', '.join(data)})")
    return data[task_name]


def mapped_tasks(
    task_names: Sequence[str], data: Data, explicit: bool = False
) -> tuple[list[str], list[str]]:
    """The rows a table has on ``data``, and the tasks left out.

    One data value for every row leaves every task in. A mapping (task → data) keeps the
    tasks it names and leaves out the others (a table's caption names them); tasks it names
    that the table does not have are ignored (one mapping serves every table).

    Args:
        task_names: the table's tasks.
        data: the table's data.
        explicit: the tasks were chosen (``--tasks``): each must be in the mapping.

    Raises:
        KeyError: a chosen task the mapping names no data for.
    """
    if isinstance(data, str):
        return list(task_names), []
    if explicit:
        for name in task_names:
            data_of(data, name)
    kept = [t for t in task_names if t in data]
    if not kept:
        raise KeyError(
            f"--data names data for {', '.join(data)}, none of this table's tasks "
            f"({', '.join(task_names)})"
        )
    return kept, [t for t in task_names if t not in data]


@dataclass(frozen=True)
class DataChoice:
    """A ``--data`` value as one task's run reads it.

    Attributes:
        label: the spec's data label (a registered set's ``shared:<folder>``, else the value).
        changes: task configuration changes that come with the data, applied before the
            user's ``--set`` (a set's :meth:`~experiments.data.real_sets.RealSet.changes`).
        eval_splits: the splits its runs score unless ``--eval-split`` is given (a set's
            :attr:`~experiments.data.real_sets.RealSet.eval_splits`); ``None``: the command's
            default.
        name: the registered set's name, ``None`` for any other value.
        shipped_elmo: its runs take the shipped small biLM as ELMo unless ``--elmo`` names
            another (a set of :data:`~experiments.data.real_sets.SHIPPED_ELMO_FAMILIES`).
    """

    label: str
    changes: tuple[str, ...] = ()
    eval_splits: tuple[str, ...] | None = None
    name: str | None = None
    shipped_elmo: bool = False

    def overrides(self, user: Sequence[str]) -> list[str]:
        """The run's task configuration changes: :attr:`changes`, then the user's ``user``
        (``--set``); a user's key replaces the change of the same key (a spec takes each key
        once)."""
        keys = {item.partition("=")[0].strip() for item in user}
        kept = [c for c in self.changes if c.partition("=")[0].strip() not in keys]
        return [*kept, *user]


def model_of(task: TaskSpec) -> str:
    """A task's model as its title names it, e.g. ``biLSTM-CRF`` for ``NER (biLSTM-CRF)``
    (the whole heading when it names none)."""
    _, paren, model = task.heading.partition(" (")
    return model.removesuffix(")") if paren and task.heading.endswith(")") else task.heading


def data_choice(value: str, task: TaskSpec, preset: str) -> DataChoice:
    """What ``task`` reads for the ``--data`` value ``value`` under ``preset``.

    Args:
        value: one task's ``--data`` value (a folder, ``demo``, ``shared:FOLDER``,
            ``hf:NAME`` or a registered set's name).
        task: the task that reads it.
        preset: the ``--config`` preset (a set's changes may depend on it).

    Returns:
        For a registered set, its label, changes for ``preset`` and scored splits; any other
        value unchanged, with no changes.

    Raises:
        PlanError: a registered set that another task reads (the line names that task).
    """
    item = named_set(value)
    if item is None:
        return DataChoice(value)
    if item.task != task.name:
        from tasks.registry import get_task  # the reading task's model, for the message

        raise PlanError(
            f"--data {item.name} is read by the {item.task} task "
            f"({model_of(get_task(item.task))}): run {item.task} --data {item.name}"
        )
    shipped = item.family in SHIPPED_ELMO_FAMILIES
    return DataChoice(item.data, item.changes(preset), item.eval_splits, item.name, shipped)


def preset_bilm(config: Mapping[str, Any], preset: str, shipped: bool = False) -> dict[str, Any]:
    """An ELMo configuration with the preset's biLM where it names none (:data:`BILM_SOURCES`):
    the values ELMo's options declare for ``preset``
    (:attr:`~tasks.representations.ReprOption.presets`: the ``paper`` preset's is the
    published ELMo, what the paper used, never a smaller substitute), unless ``shipped`` (the
    shipped small biLM, as in every other preset: no source key)."""
    if shipped or any(key in config for key in BILM_SOURCES):
        return dict(config)
    own = {o.name: v for o in REPRESENTATION_OPTIONS["elmo"] for p, v in o.presets if p == preset}
    return {**own, **config}


def bilm_config_for(
    task: TaskSpec, preset: str, rep_config: Mapping[str, Any], shipped: bool = False
) -> dict[str, Any]:
    """The biLM configuration of a task's ELMo runs: ``rep_config`` with the preset's biLM
    where it names none (:func:`preset_bilm`) and its ``finetune`` as given
    (``--finetune-bilm EPOCHS``; ``0``: no fine-tuning) or, when it has none, the preset's
    (:meth:`~tasks.core.TaskSpec.finetune_for`: the paper preset fine-tunes where the paper
    did, A.1). A configuration without fine-tuning has no ``finetune`` key, so its run ids
    are those of runs made before the key existed."""
    return _tuned(preset_bilm(rep_config, preset, shipped), task.finetune_for(preset))


def _tuned(config: dict[str, Any], preset_epochs: float | None) -> dict[str, Any]:
    """``config`` with its own ``finetune`` epochs, else ``preset_epochs``; no key for none."""
    epochs = config.pop("finetune", None)
    if epochs is None:
        epochs = preset_epochs
    if epochs:
        config["finetune"] = epochs
    return config


def base_spec(
    task: TaskSpec,
    preset: str,
    data: str,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str] = (),
    eval_splits: Sequence[str] = ("dev",),
    shipped: bool = False,
) -> RunSpec:
    """The paper's ELMo configuration of a task (its mix; the preset's sites and ELMo dropout,
    :meth:`~tasks.core.TaskSpec.sites_for`; its biLM, :func:`bilm_config_for`).

    Raises:
        KeyError: an unknown preset.
    """
    task.check_preset(preset)
    sites, dropout = task.sites_for(preset), task.elmo_dropout_for(preset)
    epochs = task.finetune_for(preset)
    return RunSpec(
        task=task.name,
        task_version=task.version,
        representation="elmo",
        representation_config=_tuned(preset_bilm(rep_config, preset, shipped), epochs),
        sites=tuple(sorted(sites)),  # type: ignore[arg-type]
        mix=task.default_mix,
        dropout=dropout,
        state="reset",
        preset=preset,
        overrides=tuple(overrides),
        data=data,
        eval_splits=tuple(eval_splits),
    )


def baseline(spec: RunSpec) -> RunSpec:
    """The matching run without ELMo."""
    return baseline_of(spec)


def _choice(base: BaseRequest) -> DataChoice:
    """The request's data for its task (a per-task ``--data``'s entry), resolved."""
    try:
        value = data_of(base.data, base.task.name)
    except KeyError as error:  # a mapping without the task
        raise PlanError(str(error.args[0])) from None
    choice = data_choice(value, base.task, base.preset)
    if choice.name is not None and Path(value).is_dir():
        print(
            f"note: --data {value} is the registered set (its folder: {choice.label}); the "
            f"folder {value} here is --data ./{value}",
            file=sys.stderr,
        )
    return choice


def request_base(
    base: BaseRequest, elmo: Mapping[str, object] | None = None
) -> tuple[RunSpec, DataChoice]:
    """The task's Table 1 ELMo spec in the request's preset, data, biLM (``elmo``, default the
    request's :attr:`~experiments.plan.requests.BaseRequest.elmo`), changes and budget, and the
    data it reads.

    A registered set's name as data (:func:`data_choice`) gives the spec the set tables build
    for it: the set's data label, its changes for the preset before the user's (a user's key
    replaces the set's change of that key), its scored splits unless ``eval_split`` is given,
    and the shipped biLM where the set's family takes it.

    Raises:
        PlanError: a set another task reads, a per-task data without the task.
        KeyError, ValueError: an unknown preset or a bad budget value.
    """
    choice = _choice(base)
    if base.eval_split is not None:
        splits: tuple[str, ...] = ("dev", "test") if base.eval_split == "test" else ("dev",)
    else:
        splits = choice.eval_splits or ("dev",)
    spec = base_spec(
        base.task,
        base.preset,
        choice.label,
        base.elmo if elmo is None else elmo,
        choice.overrides(base.overrides),
        splits,
        choice.shipped_elmo,
    )
    changes: dict[str, object] = {"state": base.state, "limit": base.limit}
    if base.max_epochs is not None:
        changes["max_epochs"] = base.max_epochs
    return derive(spec, changes), choice


def _configured(
    name: str, config: Mapping[str, object], base: BaseRequest, choice: DataChoice
) -> dict[str, object]:
    """A representation's configuration in a run: ELMo's with the preset's biLM and
    fine-tuning (:func:`bilm_config_for`), any other's as given."""
    if name == "elmo":
        return bilm_config_for(base.task, base.preset, config, choice.shipped_elmo)
    return dict(config)


def _point(request: RunRequest, base: RunSpec) -> RunSpec:
    """``run``'s one configuration on ``base``, the ELMo spec :func:`run_specs` built with the
    point's ELMo configuration: the representation with its sites, mix and dropout.

    Raises:
        PlanError: ``--repr-set`` options for the baseline.
        KeyError, ValueError: a bad site, mode or value (:func:`~experiments.run.spec.derive`).
    """
    name = request.representation
    if name == NO_REPRESENTATION:
        if request.representation_config:
            raise PlanError("--repr-set does not apply to --repr none (the baseline)")
        return baseline(base)
    point: dict[str, object] = {}
    if name != "elmo":  # ELMo's configuration is the base's, with the preset's biLM defaults
        point = {
            "representation": name,
            "representation_config": dict(request.representation_config),
        }
    if request.dropout is not None:
        point["dropout"] = request.dropout
    if request.sites:
        point["sites"] = request.sites
    if request.mode:
        point["mode"] = request.mode
    if request.lam is not None:
        point["lam"] = request.lam
    if request.layer_norm is not None:
        point["layer_norm"] = request.layer_norm
    return derive(base, point)


def run_specs(request: RunRequest) -> tuple[list[RunSpec], RunSpec]:
    """``run``'s specs, one per seed, and its point (the seeds' first, for naming).

    Raises:
        PlanError, KeyError, ValueError: as :func:`request_base` and a bad site, mode or value.
    """
    elmo = request.representation_config if request.representation == "elmo" else None
    base, _ = request_base(request.base, elmo)
    point = _point(request, base)
    return expand_sweep(point, seed=list(request.seeds)), point


def sweep_specs(request: SweepRequest) -> list[RunSpec]:
    """``sweep``'s grid: per representation, its modes × λ × sites × seeds (the baseline: its
    seeds alone).

    Raises:
        PlanError: options for the baseline alone.
        KeyError, ValueError: as :func:`request_base` and :func:`~experiments.run.spec.derive`.
    """
    base, choice = request_base(request.base)
    grid: dict[str, list[object]] = {}
    if request.modes:
        grid["mode"] = list(request.modes)
    if request.lams is not None:
        grid["lam"] = list(request.lams)
    if request.site_sets:
        grid["sites"] = list(request.site_sets)
    reps = request.representations
    if all(name == NO_REPRESENTATION for name, _ in reps) and any(c for _, c in reps):
        raise PlanError("--repr-set does not apply to --repr none (the baseline)")
    specs: list[RunSpec] = []
    for name, config in reps:
        if name == NO_REPRESENTATION:
            specs += expand_sweep(baseline(base), seed=list(request.seeds))
        else:
            changes = {
                "representation": name,
                "representation_config": _configured(name, config, request.base, choice),
            }
            specs += expand_sweep(derive(base, changes), **grid, seed=list(request.seeds))
    return specs
