"""What a command asks for, read from its command line once and handed on typed.

A command's namespace stops in ``experiments/cli``: it builds one of these requests there, and
everything below (the planning of :mod:`experiments.plan.specs`, the runs, the tables) reads the
request. The task travels as its :class:`~tasks.core.TaskSpec`, looked up once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tasks.core import TaskSpec

__all__ = ["BaseRequest", "Data", "RunRequest", "SweepRequest"]

#: A command's ``--data``: one value for every task (``demo``, a folder, ``shared:FOLDER``,
#: ``hf:NAME``, a registered set's name, ``real``) or task name → value
#: (``--data ner=DIR,srl=DIR2`` or a TOML file).
Data = str | Mapping[str, str]


@dataclass(frozen=True)
class BaseRequest:
    """What every run of one task in a ``run`` or ``sweep`` command shares.

    Attributes:
        task: the task.
        preset: the task preset (``--config``).
        data: the command's ``--data`` (the task's own entry is read from a mapping).
        elmo: the biLM configuration the command line gives (``--elmo``, ``--finetune-bilm``),
            before the preset's defaults (:func:`~experiments.plan.specs.bilm_config_for`).
        overrides: the user's task configuration changes (``--set``, ``--glove``,
            ``--turian``), applied after the changes a registered set brings.
        eval_split: ``--eval-split`` (``None``: the set's scored splits, else dev).
        state: the biLM's LSTM state policy between batches.
        limit: the first N examples of each split (``None``: all).
        max_epochs: the epoch budget (``None``: the preset's).
    """

    task: TaskSpec
    preset: str
    data: Data
    elmo: Mapping[str, object]
    overrides: tuple[str, ...] = ()
    eval_split: str | None = None
    state: str = "reset"
    limit: int | None = None
    max_epochs: int | None = None


@dataclass(frozen=True)
class RunRequest:
    """``run TASK``: one configuration over seeds.

    Attributes:
        base: the task, preset, data and budget.
        representation: ``--repr`` (``none``: the baseline).
        representation_config: its configuration from the command line's flags and
            ``--repr-set`` (checked by the command line; the preset's biLM defaults are added
            in planning).
        sites: ``--sites`` (``None``: the task's, from the paper).
        mode: the scalar mix's mode (``None``: the task's).
        lam: the mix's λ (``None``: the task's).
        layer_norm: normalise each layer before the mix (``None``: the task's).
        dropout: on the mixed vectors (``None``: the task's).
        seeds: the seeds, one run each.
    """

    base: BaseRequest
    representation: str
    representation_config: Mapping[str, object]
    sites: tuple[str, ...] | None = None
    mode: str | None = None
    lam: float | None = None
    layer_norm: bool | None = None
    dropout: float | None = None
    seeds: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class SweepRequest:
    """``sweep TASK``: per representation, its modes × λ × sites × seeds.

    Attributes:
        base: the task, preset, data and budget.
        representations: each representation (``none``: the baseline) with its configuration
            from the command line (as :attr:`RunRequest.representation_config`), in order.
        modes: the mix modes (``None``: the task's).
        lams: the λ values (``None``: the task's).
        site_sets: the site sets (``None``: the task's).
        seeds: the seeds of every point.
    """

    base: BaseRequest
    representations: tuple[tuple[str, Mapping[str, object]], ...]
    modes: tuple[str, ...] | None = None
    lams: tuple[float, ...] | None = None
    site_sets: tuple[tuple[str, ...], ...] | None = None
    seeds: tuple[int, ...] = (0,)
