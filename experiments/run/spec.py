"""Run specifications: one frozen, JSON-serialisable :class:`RunSpec` per training run.

``RunSpec → run → store → render`` (docs/harness.md). A spec names everything that can change a
number (task and its version, representation, injection sites, Eq. (1) mixing with λ or LastOnly,
ELMo dropout, biLM state policy, preset, overrides, seed, data, budget); its :func:`run_id` is a
hash of :func:`canonical_json`, so two variants can never share a result folder.

Nothing here imports a task; the vocabularies (sites, mix, state policies) come from ``bilm`` and
``tasks.core``, which own them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bilm.bilm import STATE_POLICIES, StatePolicy
from bilm.scalar_mix import MixSpec
from tasks.core import SITES, SPLITS, Site
from tasks.representations.adapt import adapt_config

MIX_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(MixSpec))
NO_REPRESENTATION = "none"
RUN_ID_LENGTH = 12
#: Fields added after the first store format: left out of the canonical JSON while they hold
#: their default, so every run id written before they existed stays valid.
_OMITTED_AT_DEFAULT: dict[str, Any] = {"eval_splits": ("dev",), "train_fraction": None}


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines one run's numbers.

    Values are normalised on construction so that equal runs hash equally: ``sites`` becomes a
    sorted tuple (a comma-separated string is accepted), ``overrides`` a sorted tuple, floats are
    floats, and ``representation_config`` a JSON round-tripped copy (treat it as read-only).

    A baseline is ``representation="none"``; it has no sites and keeps the default mix, dropout
    and state (use :func:`baseline_of`), so one baseline run serves every ablation column.

    Attributes:
        task: task name, e.g. ``"squad"`` or ``"snli"``.
        task_version: the task's version (bumped when reader, metric or model changes a number).
        representation: e.g. ``"elmo"``, ``"elmo_random"``, ``"glove"``, ``"cove"``, ``"none"``.
        representation_config: JSON data for the representation (checkpoint path, options).
        sites: injection sites, a sorted subset of ``("input", "output")``.
        mix: layer mixing, shared by all sites.
        dropout: dropout on the injected ELMo vectors.
        state: biLM LSTM state policy, ``"reset"``, ``"carry"`` or ``"warm"``.
        preset: the task's configuration preset, e.g. ``"mini"`` (CPU minutes) or ``"paper"``
            (the task lists its presets; the runner checks the name).
        overrides: dotted ``key=value`` overrides of the preset, sorted.
        seed: random seed of the run.
        data: ``"demo"`` or a label naming the data directory.
        max_epochs: epoch budget (``None``: the preset's).
        limit: use only the first ``limit`` examples of each split (``None``: all); smoke runs.
        eval_splits: splits scored with the selected weights: ``("dev",)`` or
            ``("dev", "test")``; the paper's test numbers are scored only when asked for.
        train_fraction: train on this share of the training examples, a random subset drawn
            with a fixed generator (the same examples for every run of any seed, so baseline
            and ELMo see the same subset; paper §5.4, Figure 1: 0.1 %–100 %). ``None``: all.
    """

    task: str
    task_version: int
    representation: str = "elmo"
    representation_config: Mapping[str, Any] = field(default_factory=dict)
    sites: tuple[Site, ...] = ("input",)
    mix: MixSpec = field(default_factory=MixSpec)
    dropout: float = 0.5
    state: StatePolicy = "reset"
    preset: str = "mini"
    overrides: tuple[str, ...] = ()
    seed: int = 0
    data: str = "demo"
    max_epochs: int | None = None
    limit: int | None = None
    eval_splits: tuple[str, ...] = ("dev",)
    train_fraction: float | None = None

    def __post_init__(self) -> None:
        _check_str("task", self.task)
        _check_str("representation", self.representation)
        _check_str("data", self.data)
        for name in ("task_version", "seed"):
            _check_int(name, getattr(self, name))
        for name in ("max_epochs", "limit"):
            value = getattr(self, name)
            if value is not None:
                _check_int(name, value)
                if value < 1:
                    raise ValueError(f"{name} must be >= 1 or None, got {value}")
        if self.train_fraction is not None:
            fraction = _as_float("train_fraction", self.train_fraction)
            if not 0.0 < fraction <= 1.0:
                raise ValueError(f"train_fraction must be in (0, 1] or None, got {fraction}")
            object.__setattr__(self, "train_fraction", None if fraction == 1.0 else fraction)
        object.__setattr__(self, "sites", _normalise_sites(self.sites))
        object.__setattr__(self, "overrides", _normalise_overrides(self.overrides))
        config = _json_copy(self.representation_config)
        adapt_config(config)  # a bad mode or option fails here, naming its key
        if config.get("adapt") == "frozen":  # the default: the same run as without the key
            del config["adapt"]
        object.__setattr__(self, "representation_config", config)
        if not isinstance(self.mix, MixSpec):
            raise TypeError(f"mix must be a MixSpec, got {type(self.mix).__name__}")
        dropout = _as_float("dropout", self.dropout)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        object.__setattr__(self, "dropout", dropout)
        if self.state not in STATE_POLICIES:
            raise ValueError(f"state must be one of {STATE_POLICIES}, got {self.state!r}")
        _check_str("preset", self.preset)
        splits = self.eval_splits
        if isinstance(splits, str):
            splits = tuple(s.strip() for s in splits.split(",") if s.strip())
        if (
            not isinstance(splits, Iterable)
            or "dev" not in splits
            or not set(splits)
            <= {
                "dev",
                "test",
            }
        ):
            raise ValueError(f"eval_splits must be ('dev',) or ('dev', 'test'), got {splits}")
        object.__setattr__(self, "eval_splits", tuple(s for s in SPLITS if s in splits))
        if "state" in self.representation_config:
            raise ValueError(
                "representation_config must not set 'state': the spec's state field is the one "
                "state policy of a run"
            )
        if self.representation == NO_REPRESENTATION:
            canonical = baseline_fields()
            off = [k for k, v in canonical.items() if getattr(self, k) != v]
            if off:
                raise ValueError(
                    f"representation 'none' (a baseline) must keep {off} at {canonical}; "
                    "build it with baseline_of(spec)"
                )
        elif not self.sites:
            raise ValueError(f"representation {self.representation!r} needs at least one site")

    def __hash__(self) -> int:
        return hash(canonical_json(self))

    @property
    def run_id(self) -> str:
        """This spec's :func:`run_id`."""
        return run_id(self)

    @property
    def plugin(self) -> str | None:
        """The representation when it is a plug-in, ``package.module:Factory`` (code that
        building it imports and runs), else ``None``."""
        return self.representation if ":" in self.representation else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (lists for tuples); inverse of :meth:`from_dict`."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["mix"] = dataclasses.asdict(self.mix)
        data["representation_config"] = _json_copy(self.representation_config)
        data["sites"] = list(self.sites)
        data["overrides"] = list(self.overrides)
        data["eval_splits"] = list(self.eval_splits)
        for name, default in _OMITTED_AT_DEFAULT.items():
            value = data[name]
            if (tuple(value) if isinstance(value, list) else value) == default:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """Rebuild a spec from :meth:`to_dict` output.

        Raises:
            ValueError: on unknown keys (the message lists the valid ones).
        """
        valid = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(f"unknown RunSpec fields {unknown}; valid: {sorted(valid)}")
        values = dict(data)
        if "mix" in values and not isinstance(values["mix"], MixSpec):
            mix = dict(values["mix"])
            unknown = sorted(set(mix) - set(MIX_FIELDS))
            if unknown:
                raise ValueError(f"unknown MixSpec fields {unknown}; valid: {list(MIX_FIELDS)}")
            values["mix"] = MixSpec(**mix)
        for name in ("sites", "overrides", "eval_splits"):
            if name in values and not isinstance(values[name], str):
                values[name] = tuple(values[name])
        return cls(**values)


def canonical_json(spec: RunSpec) -> str:
    """The spec as JSON with sorted keys and no whitespace: the input of :func:`run_id`."""
    return json.dumps(
        spec.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def run_id(spec: RunSpec) -> str:
    """``blake2b(canonical_json(spec) + str(task_version))``, first 12 hex digits."""
    payload = (canonical_json(spec) + str(spec.task_version)).encode("utf-8")
    return hashlib.blake2b(payload).hexdigest()[:RUN_ID_LENGTH]


def baseline_fields() -> dict[str, Any]:
    """The field values every baseline (``representation="none"``) spec carries."""
    return {
        "representation": NO_REPRESENTATION,
        "representation_config": {},
        "sites": (),
        "mix": MixSpec(),
        "dropout": 0.0,
        "state": "reset",
    }


def baseline_of(spec: RunSpec) -> RunSpec:
    """The baseline matching ``spec``: same task, preset, overrides, seed, data and budget."""
    return dataclasses.replace(spec, **baseline_fields())


def derive(spec: RunSpec, changes: Mapping[str, Any]) -> RunSpec:
    """A copy of ``spec`` with ``changes`` applied.

    Keys are :class:`RunSpec` field names or :class:`MixSpec` field names (``mode``, ``lam``,
    ``layer_norm``), which change ``spec.mix``.

    Raises:
        ValueError: on an unknown key (the message lists the valid ones).
    """
    top = _check_keys(changes, "spec")
    mix_changes = {k: v for k, v in changes.items() if k in MIX_FIELDS}
    top_changes = {k: v for k, v in changes.items() if k in top}
    if mix_changes:
        mix = top_changes.get("mix", spec.mix)
        top_changes["mix"] = dataclasses.replace(mix, **mix_changes)
    return dataclasses.replace(spec, **top_changes)


def expand_sweep(base: RunSpec, **axes: Iterable[Any]) -> list[RunSpec]:
    """Cartesian product of ``axes`` applied to ``base``, deduplicated by run_id.

    The first axis varies slowest. Keys as in :func:`derive`; e.g.
    ``expand_sweep(spec, mode=["all"], lam=[1.0, 0.001], seed=range(5))`` gives 10 specs, and
    ``sites=[("input",), ("input", "output"), "output"]`` sweeps injection sites.

    Raises:
        ValueError: on an unknown key, or an axis given as a bare string (wrap it in a list).
    """
    names = list(axes)
    values: list[Sequence[Any]] = []
    for name in names:
        axis = axes[name]
        if isinstance(axis, str | bytes) or not isinstance(axis, Iterable):
            raise ValueError(f"axis {name!r} must be a list of values, got {axis!r}")
        values.append(list(axis))
    specs: dict[str, RunSpec] = {}
    for combo in itertools.product(*values):
        spec = derive(base, dict(zip(names, combo, strict=True)))
        specs.setdefault(spec.run_id, spec)
    return list(specs.values())


def _check_keys(keys: Iterable[str], what: str) -> set[str]:
    """RunSpec's field names; raises a ValueError listing the valid keys for any other key."""
    top = {f.name for f in dataclasses.fields(RunSpec)}
    unknown = sorted(set(keys) - top - set(MIX_FIELDS))
    if unknown:
        raise ValueError(f"unknown {what} keys {unknown}; valid: {sorted(top | set(MIX_FIELDS))}")
    return top


def _check_str(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {result}")
    return result


def _normalise_sites(sites: object) -> tuple[str, ...]:
    if isinstance(sites, str):
        sites = [s.strip() for s in sites.split(",") if s.strip()]
    if not isinstance(sites, Iterable):
        raise TypeError(f"sites must be a sequence of {SITES}, got {sites!r}")
    result = tuple(sorted(set(sites)))
    bad = [s for s in result if s not in SITES]
    if bad:
        raise ValueError(f"unknown sites {bad}; valid: {list(SITES)}")
    return result


def _normalise_overrides(overrides: object) -> tuple[str, ...]:
    if isinstance(overrides, str) or not isinstance(overrides, Iterable):
        raise TypeError(f"overrides must be a sequence of 'key=value' strings, got {overrides!r}")
    items = list(overrides)
    keys = []
    for item in items:
        key, sep, _ = item.partition("=") if isinstance(item, str) else ("", "", "")
        if not sep or not key.strip() or key != key.strip():
            raise ValueError(f"override must look like 'key=value', got {item!r}")
        keys.append(key)
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ValueError(f"override keys given twice: {duplicates}")
    return tuple(sorted(items))


def _json_copy(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"representation_config must be a mapping, got {value!r}")
    try:
        text = json.dumps(dict(value), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"representation_config is not JSON data: {error}") from error
    result: dict[str, Any] = json.loads(text)
    return result


def spec_matches(spec: RunSpec, filters: Mapping[str, Any]) -> bool:
    """Whether ``spec`` has every value in ``filters`` (keys as in :func:`derive`).

    ``sites`` may be given in any form :class:`RunSpec` accepts (``"input,output"``).

    Raises:
        ValueError: on an unknown key (the message lists the valid ones).
    """
    _check_keys(filters, "filter")
    for key, wanted in filters.items():
        if key in MIX_FIELDS:
            actual: Any = getattr(spec.mix, key)
        else:
            actual = getattr(spec, key)
        if key == "sites":
            wanted = _normalise_sites(wanted)
        elif key == "overrides":
            wanted = _normalise_overrides(wanted)
        if actual != wanted:
            return False
    return True


def describe_run(spec: RunSpec) -> str:
    """A run on one line, e.g. ``snli elmo λ=0.001 input+output seed=0``."""
    if spec.representation == NO_REPRESENTATION:
        return f"{spec.task} baseline seed={spec.seed}"
    mix = spec.mix.label
    return f"{spec.task} {spec.representation} {mix} {'+'.join(spec.sites)} seed={spec.seed}"
