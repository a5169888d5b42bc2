"""What a task provides to the one training loop (``experiments/run/runner.py``).

A task package exposes ``TASK``, a :class:`TaskSpec`; ``tasks/registry.py`` lists them in one dict
literal. The runner and the rest of ``experiments/`` never name a task: everything task-specific
sits behind :class:`TaskSpec` (metric, presets, sites, mix, paper keys, demo data, table rows, the
files a data folder must hold, reading only as far as ``--limit`` needs) and :class:`TaskRecipe`
(splits, training configuration, batches, model, predictions, official scorer, unit statistics,
read statistics).

Only :class:`MixSpec` comes from ``bilm``; torch types are imported for type checking only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, get_args

import numpy as np

from bilm.scalar_mix import MixSpec
from tasks.common.overrides import apply_overrides
from tasks.common.sites import SITES, Site

if TYPE_CHECKING:
    import random

    from torch import Tensor, nn

    from tasks.common.io import ReadStats
    from tasks.common.peer import PeerAdapter
    from tasks.features.inject import Injector
    from tasks.representations import Layers

__all__ = [
    "ADDED",
    "SITES",
    "SPLITS",
    "Batching",
    "Column",
    "DataFiles",
    "Forward",
    "LimitedSetup",
    "MetricSpec",
    "Optimizer",
    "PresetElmo",
    "RecipeBase",
    "Represent",
    "Schedule",
    "Site",
    "Split",
    "Synthetic",
    "SyntheticExamples",
    "TableRow",
    "TaskRecipe",
    "TaskSpec",
    "TrainConfig",
    "UnitStatistics",
    "added_field",
    "batch_plan",
    "configure",
    "iter_batches",
    "loss_of",
    "safe_ratio",
    "unique_unit_ids",
]

Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = get_args(Split)
C = TypeVar("C")

#: Turns token sequences into representation layers (runs the representation, or reads the
#: cache; the baseline's layers are empty).
Represent = Callable[[Sequence[Sequence[str]]], "Layers"]
#: Runs the task model on one batch (the runner moves it to the device, autocasts, no grad).
Forward = Callable[[Any], Any]
#: ``(config, folder) -> files``: the files below a data folder that ``setup`` reads for this
#: configuration (:attr:`TaskSpec.data_files`).
DataFiles = Callable[[Any, Path], Sequence[Path]]
#: ``(preset, overrides, data_dir, limit) -> recipe``: ``setup`` reading at most the first
#: ``limit`` examples of each split (:attr:`TaskSpec.setup_limited`).
LimitedSetup = Callable[[str, Sequence[str], str | None, int], "TaskRecipe"]


#: Field metadata key of :func:`added_field`.
ADDED = "added_compatibly"


def added_field(default: Any, *, why: str) -> Any:
    """A configuration field added after results were stored, whose default reproduces the
    behaviour before it: at that default it is left out of the run identity's configuration
    fingerprint (``experiments.run.identity``), so stored runs stay valid; set to anything else it
    enters the fingerprint like every other field.

    Args:
        default: the value that keeps the old behaviour (immutable).
        why: what the field changes, one line (kept in the field's metadata).
    """
    return field(default=default, metadata={ADDED: why})


@dataclass(frozen=True)
class MetricSpec:
    """A metric: where it is stored, which way is better and how it is shown.

    Values are stored in natural units (F1 0.858, not 85.8) and scaled only when displayed.

    Attributes:
        key: the key in the scorer's output and in ``metrics.json`` (e.g. ``"f1"``).
        label: display name in tables (e.g. ``"F1"``).
        higher_is_better: selection direction.
        scale: display multiplier (100 shows a fraction as a percentage).
        decimals: displayed decimals.
    """

    key: str
    label: str = ""
    higher_is_better: bool = True
    scale: float = 100.0
    decimals: int = 1

    def display(self, value: float) -> str:
        """``value`` scaled and rounded, e.g. ``0.8581 -> "85.8"``."""
        return f"{value * self.scale:.{self.decimals}f}"


@dataclass(frozen=True)
class TableRow:
    """One row a task contributes to the paper's tables.

    Attributes:
        label: first column, e.g. ``"SQuAD"``.
        metric: the metric shown in the row.
        paper_key: the row's key in ``experiments/report/paper.toml``.
    """

    label: str
    metric: MetricSpec
    paper_key: str


Batching = Literal["examples", "tokens", "document", "shuffled"]
ScheduleKind = Literal["constant", "plateau", "exponential"]
OptimizerName = Literal["adam", "adadelta", "sgd", "adagrad"]


@dataclass(frozen=True)
class Schedule:
    """Learning-rate schedule.

    Attributes:
        kind: ``constant``; ``plateau`` (multiply by ``factor`` after ``patience`` evaluations
            without improvement of the selection metric, e.g. ESIM); ``exponential`` (multiply by
            ``factor`` every ``every`` optimizer steps, e.g. Lee et al. 2017: 0.999 every 100).
        factor: the multiplier.
        patience: evaluations without improvement before a plateau decay.
        every: steps between exponential decays.
        min_lr: floor of the learning rate.
    """

    kind: ScheduleKind = "constant"
    factor: float = 0.5
    patience: int = 0
    every: int = 100
    min_lr: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in get_args(ScheduleKind):
            raise ValueError(f"schedule.kind must be one of {get_args(ScheduleKind)}")
        if not 0.0 < self.factor <= 1.0:
            raise ValueError(f"schedule.factor must be in (0, 1], got {self.factor}")
        if self.every < 1 or self.patience < 0:
            raise ValueError("schedule.every must be >= 1 and schedule.patience >= 0")


@dataclass(frozen=True)
class Optimizer:
    """The optimizer and its arguments (torch names; defaults are torch's unless cited).

    Attributes:
        name: ``adam``, ``adadelta``, ``sgd`` or ``adagrad``.
        lr: learning rate.
        betas: Adam's β1, β2.
        eps: numerical ε (Adam, Adadelta, Adagrad).
        rho: Adadelta's ρ.
        momentum: SGD momentum.
        weight_decay: L2 penalty added by the optimizer.
    """

    name: OptimizerName = "adam"
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    rho: float = 0.9
    momentum: float = 0.0
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in get_args(OptimizerName):
            raise ValueError(f"optimizer.name must be one of {get_args(OptimizerName)}")
        if self.lr <= 0:
            raise ValueError(f"optimizer.lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class TrainConfig:
    """How the one training loop trains a task (declared by the task's preset).

    Attributes:
        epochs: epoch budget.
        patience: evaluations without improvement before early stopping (``None``: never stop).
        batching: ``examples`` (``batch_size`` examples of similar length), ``tokens``
            (as many similar-length examples as fit in ``batch_size`` tokens), ``document``
            (one example, e.g. one coreference document, per batch) or ``shuffled``
            (``batch_size`` examples drawn at random every epoch, whatever their lengths:
            allennlp 0.x's ``basic`` iterator, allennlp 2.x's data loader with ``shuffle``;
            evaluation batches are size-sorted as with ``examples``).
        batch_size: examples per batch, or the token budget with ``tokens``.
        optimizer: optimizer and learning rate.
        schedule: learning-rate schedule.
        clip_norm: gradient-norm clipping (``None``: none).
        ema: decay of an exponential moving average of the weights used for evaluation
            (0: none).
        eval_every: evaluate every N optimizer steps (``None``: after every epoch).
        clip_value: clip every gradient element to ``[-clip_value, clip_value]`` before the
            norm clipping (allennlp's ``grad_clipping``; ``None``: none). The loop clips the
            true gradients: under fp16 the grad scaler unscales them first.
        bucket_noise: batches are re-drawn every epoch from sizes multiplied by
            ``1 + U(-noise, noise)`` (allennlp's bucket sampler ``padding_noise``, 0.1 there),
            deterministic per seed and epoch (:func:`batch_plan`); 0: the same size-sorted
            batches every epoch, only their order shuffled. Evaluation batches and
            ``document`` batching ignore it.
    """

    epochs: int = 10
    patience: int | None = None
    batching: Batching = "examples"
    batch_size: int = 32
    optimizer: Optimizer = field(default_factory=Optimizer)
    schedule: Schedule = field(default_factory=Schedule)
    clip_norm: float | None = None
    ema: float = 0.0
    eval_every: int | None = None
    clip_value: float | None = added_field(None, why="element-wise gradient clipping")
    bucket_noise: float = added_field(0.0, why="batch membership re-drawn every epoch")

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        if self.batching not in get_args(Batching):
            raise ValueError(f"batching must be one of {get_args(Batching)}")
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"patience must be >= 1 or None, got {self.patience}")
        if self.eval_every is not None and self.eval_every < 1:
            raise ValueError(f"eval_every must be >= 1 or None, got {self.eval_every}")
        if not 0.0 <= self.ema < 1.0:
            raise ValueError(f"ema must be in [0, 1), got {self.ema}")
        if self.clip_value is not None and self.clip_value <= 0:
            raise ValueError(f"clip_value must be > 0 or None, got {self.clip_value}")
        if not 0.0 <= self.bucket_noise < 1.0:
            raise ValueError(f"bucket_noise must be in [0, 1), got {self.bucket_noise}")


#: A column sum of unit statistics: one float, or one per bootstrap sample as a ``(m,)`` array.
Column = TypeVar("Column", float, np.ndarray)


def safe_ratio(num: Column, den: Column) -> Column:
    """``num / den``, 0 where ``den`` is 0 (every scorer's 0/0 convention): on two floats a
    float, on two ``(m,)`` arrays elementwise (the bootstrap's column sums of ``m`` samples at
    once, :attr:`TaskSpec.metric_from_totals`). The same IEEE division either way, so a metric
    built from it gives bit-identical values on a float and on an array holding it."""
    if isinstance(num, np.ndarray) or isinstance(den, np.ndarray):
        num, den = np.broadcast_arrays(np.asarray(num, np.float64), np.asarray(den, np.float64))
        return np.divide(num, den, out=np.zeros(den.shape), where=den != 0)  # (m,)
    return num / den if den else 0.0


@dataclass(frozen=True)
class UnitStatistics:
    """A metric's sufficient statistics per resampling unit, for paired bootstrap tests.

    The metric of any multiset of units is :attr:`TaskSpec.metric_from_totals` applied to the
    column sums of their rows (e.g. accuracy: rows ``(correct,)`` over ``n`` units → sum / n;
    span F1: rows ``(correct, predicted, gold)``; SQuAD: ``(f1, exact_match)`` per question).
    Units are what the bootstrap resamples: examples, or sentences / documents for span metrics.

    Attributes:
        ids: one id per unit, equal across runs on the same data (pairs the two systems).
        rows: one row of statistics per unit.
    """

    ids: tuple[str, ...]
    rows: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.rows):
            raise ValueError(f"{len(self.ids)} unit ids for {len(self.rows)} rows")
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("unit ids must be unique")


def unique_unit_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """``ids`` made unique for :class:`UnitStatistics`: each repeat of an earlier id gets
    ``#2``, ``#3`` … (the next number not yet taken), in order, and the first occurrence keeps
    the bare id, so the ids are equal across runs on the same data."""
    seen: set[str] = set()
    out = []
    for base in ids:
        unit, n = base, 1
        while unit in seen:
            n += 1
            unit = f"{base}#{n}"
        seen.add(unit)
        out.append(unit)
    return tuple(out)


class TaskRecipe(Protocol):
    """Data and model for one configuration of a task (built by :attr:`TaskSpec.setup`).

    The recipe never moves anything to a device: its batches are CPU tensors, the runner moves
    them, and predictions go through the ``forward`` callable the runner hands in. Attributes are
    read-only here, so a dataclass with narrower types (``splits: dict[str, list[X]]``) conforms.

    Optional: ``check_fits(splits, device) -> None``, called by the harness once the run's splits
    and device are known and before anything is trained, raises a ``ValueError`` for batches the
    device cannot hold (SQuAD: :meth:`tasks.squad.task.SquadRecipe.check_fits`).
    """

    @property
    def config(self) -> Any:
        """The task's frozen configuration (recorded in logs)."""
        ...

    @property
    def train_config(self) -> TrainConfig:
        """How the runner trains this configuration (:class:`RecipeBase` reads the config's)."""
        ...

    @property
    def splits(self) -> Mapping[str, Sequence[Any]]:
        """``"train"``, ``"dev"`` and, where available, ``"test"`` → examples."""
        ...

    @property
    def read_stats(self) -> Mapping[str, ReadStats]:
        """Split → examples, skips by reason and the file(s) read; counts what the reader and
        the recipe's own policy dropped (the runner refuses an empty split or one where more
        than ``RunOptions.max_skipped`` of the examples were skipped, and stores the counts)."""
        ...

    def sequences(self, examples: Sequence[Any]) -> list[list[str]]:
        """Every token sequence the representation must see for these examples."""
        ...

    def size(self, example: Any) -> int:
        """An example's length in tokens (batches group similar sizes; token budgets count it)."""
        ...

    def collate(self, examples: Sequence[Any], represent: Represent) -> Any:
        """One padded CPU batch with representation layers attached."""
        ...

    def build_model(self, injector: Injector) -> nn.Module:
        """The task model; its forward returns an object with ``.loss`` (Tensor)."""
        ...

    def predict(self, forward: Forward, examples: Sequence[Any], represent: Represent) -> Any:
        """Predictions for ``examples`` (whatever :meth:`score` and the writer take)."""
        ...

    def score(self, predictions: Any, examples: Sequence[Any]) -> dict[str, float]:
        """The official-parity metrics in natural units (the same function as the task's
        ``python -m tasks.<task>.evaluate``)."""
        ...

    def unit_statistics(self, predictions: Any, examples: Sequence[Any]) -> UnitStatistics:
        """The selection metric's sufficient statistics per resampling unit (significance
        tests): :attr:`TaskSpec.metric_from_totals` of their column sums is the metric."""
        ...

    def write_predictions(self, predictions: Any, examples: Sequence[Any], path: Path) -> Path:
        """Write predictions in the official format; returns the file written."""
        ...


class Configured(Protocol):
    """A task configuration: frozen, with its training loop's configuration in ``train``."""

    @property
    def train(self) -> TrainConfig: ...


class RecipeBase:
    """What every recipe provides the same way: :attr:`train_config` is its config's ``train``.

    A recipe dataclass inherits it and declares ``config`` with its own configuration type.
    """

    config: Configured

    @property
    def train_config(self) -> TrainConfig:
        """The configuration's ``train`` field (epochs, batching, optimizer, schedule…)."""
        return self.config.train


def _no_preset(task: str, preset: str, presets: Iterable[str]) -> str:
    """The one message for an unknown preset name."""
    owner = f"task {task!r} has" if task else "there is"
    return f"{owner} no preset {preset!r}; choose {', '.join(presets)}"


def configure(
    presets: Mapping[str, Callable[[], C]], preset: str, overrides: Sequence[str], task: str = ""
) -> C:
    """The configuration ``presets[preset]`` builds, with ``key=value`` ``overrides`` applied
    and validated (reads no data).

    Args:
        presets: preset name → builder of its configuration; the first is the default.
        preset: the preset's name.
        overrides: ``key=value`` items (:func:`tasks.common.overrides.apply_overrides`).
        task: the task's name, for the error message.

    Raises:
        ValueError: an unknown preset (the valid ones are listed, the default first), override
            key or a bad value.
    """
    if preset not in presets:
        raise ValueError(_no_preset(task, preset, presets))
    return apply_overrides(presets[preset](), overrides)


@dataclass(frozen=True)
class PresetElmo:
    """Where a preset's ELMo runs inject the representation and with which dropout, for a preset
    that departs from the paper's (:attr:`TaskSpec.default_sites`, :attr:`TaskSpec.elmo_dropout`).

    Attributes:
        sites: the injection sites.
        dropout: dropout on the mixed ELMo vectors.
    """

    sites: frozenset[str]
    dropout: float


#: ``(recipe, split, count, rng) -> examples``: ``count`` synthetic examples of ``split`` drawn
#: from the recipe's vocabulary and labels with ``rng`` (a function of the generator's state).
SyntheticExamples = Callable[[Any, str, int, "random.Random"], list[Any]]


@dataclass(frozen=True)
class Synthetic:
    """How a benchmark times a task without its data files (``benchmarks/bench_tasks.py``).

    Attributes:
        examples: builds synthetic examples of realistic size over the recipe's vocabulary
            (may mutate the recipe where its scorer reads more than the examples, as SRL's
            sentences).
        stand_ins: preset → overrides that replace the files the preset must be given (e.g.
            GloVe 840B) by random vectors of the same width, so that the preset's model can be
            built and timed anywhere.
    """

    examples: SyntheticExamples
    stand_ins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskSpec:
    """One task: everything the harness needs, so that ``experiments/`` names no task.

    Attributes:
        name: registry key.
        version: bump when the reader, metric, model or a preset changes a number (part of
            run ids).
        metric: the selection metric (early stopping, tables).
        configs: preset name → builder of its configuration (the task's ``config.PRESETS``);
            the first is the default. :attr:`presets` lists the names, :meth:`configure`
            builds one.
        default_sites: where the paper injects ELMo for this task.
        default_mix: the paper's λ / LastOnly / layer norm for this task.
        table_rows: the rows the task contributes to the paper's tables (first = main metric).
        setup: ``(preset, overrides, data_dir) -> TaskRecipe``; ``data_dir`` None = demo set.
        demo: ``() -> Path``: builds the bundled demo set if needed and returns its folder.
        metric_from_totals: the selection metric (natural units) from the column sums of the
            recipe's :class:`UnitStatistics` rows: ``k`` floats, or ``k`` ``(m,)`` arrays (one
            sum per bootstrap sample) giving ``(m,)`` metrics. Written with :func:`safe_ratio`
            and arithmetic it takes both; one that takes floats alone is called per sample
            (slower: the significance tests resample 10,000 times per table cell).
        paper_split: the split of the paper's Table 1 number for this task.
        data_help: what ``--data`` must hold (shown in errors and ``--help``).
        elmo_dropout: dropout on the mixed ELMo vectors in the paper's configuration of this
            task (paper §3.3 and allennlp: 0.5 unless the task's config says otherwise).
        seeds: how many seeds the task's own reproductions average by default (the paper
            reports a mean over 5 seeds for SNLI, NER and SST-5; 3 elsewhere).
        table_split: the split of the Table 1 numbers of the task's own reproductions unless
            ``--eval-split`` says otherwise: ``test`` where the data has a labelled test
            split (the paper's Table 1 is test), ``dev`` where it has none (SQuAD).
        preset_elmo: preset name → its own sites and ELMo dropout, for the presets whose ELMo
            runs depart from ``default_sites`` / ``elmo_dropout`` (read through
            :meth:`sites_for` and :meth:`elmo_dropout_for`).
        finetune_presets: the presets whose ELMo runs first fine-tune the biLM for one epoch
            on the task's training text, then freeze it (paper §3.4 and A.1: "in most cases"
            the paper used a biLM fine-tuned on the task's text; read through
            :meth:`finetune_for`). A ``--finetune-bilm`` on the command line wins.
        peer: how the reference implementation (allennlp-models) trains this task's baseline
            on the same data (:class:`tasks.common.peer.PeerAdapter`; ``nox -s peer``);
            ``None`` where none is runnable.
        title: the task and its model as targets and reports name them, e.g. ``"SQuAD (BiDAF +
            self-attention)"`` (``nox -l``); empty: the first table row's label
            (:attr:`heading`).
        synthetic: synthetic data of realistic size for the speed benchmark
            (:class:`Synthetic`); ``None``: the benchmark lists the task as not timed.
        data_files: ``(config, folder) -> files``: the files below a local data folder that
            ``setup`` reads for ``config`` (the configuration :meth:`configure` builds), found
            by the reader's own layout lookup without reading any data (and a DEMO set's notice,
            which marks it); empty where the configuration names its files instead of the
            folder's. Raises (a
            ``FileNotFoundError`` or a ``ValueError``, in one line naming the folder and the
            files it wanted) where the folder holds none of the task's layouts. The run
            identity fingerprints exactly these files, after this check
            (``experiments.run.identity``). ``None``: every file below the folder.
        setup_limited: ``(preset, overrides, data_dir, limit) -> TaskRecipe``: ``setup`` whose
            splits hold at most the first ``limit`` examples of each split, the same ones a
            full read would give first, its reader stopping there where it streams and where
            nothing else the recipe derives (vocabularies, label sets, random draws) depends
            on the examples left unread; elsewhere it reads everything, as ``setup`` does.
            ``None``: the harness cuts ``setup``'s splits (:meth:`build_recipe`).
    """

    name: str
    version: int
    metric: MetricSpec
    configs: Mapping[str, Callable[[], Any]]
    default_sites: frozenset[str]
    default_mix: MixSpec
    table_rows: tuple[TableRow, ...]
    setup: Callable[[str, Sequence[str], str | None], TaskRecipe]
    demo: Callable[[], Path]
    metric_from_totals: Callable[[Sequence[float]], float]
    paper_split: Split = "test"
    data_help: str = ""
    elmo_dropout: float = 0.5
    seeds: int = 3
    table_split: Split = "dev"
    preset_elmo: Mapping[str, PresetElmo] = field(default_factory=dict)
    finetune_presets: frozenset[str] = frozenset()
    peer: PeerAdapter | None = None
    title: str = ""
    synthetic: Synthetic | None = None
    data_files: DataFiles | None = None
    setup_limited: LimitedSetup | None = None

    def __post_init__(self) -> None:
        dropouts = [self.elmo_dropout] + [p.dropout for p in self.preset_elmo.values()]
        if not all(0.0 <= p < 1.0 for p in dropouts):
            raise ValueError(f"task {self.name!r}: elmo_dropout must be in [0, 1)")
        if set(self.preset_elmo) - set(self.configs):
            raise ValueError(f"task {self.name!r}: preset_elmo names an unknown preset")
        if set(self.finetune_presets) - set(self.configs):
            raise ValueError(f"task {self.name!r}: finetune_presets names an unknown preset")
        if self.seeds < 1:
            raise ValueError(f"task {self.name!r}: seeds must be >= 1")
        if not self.configs:
            raise ValueError(f"task {self.name!r} declares no preset")
        sites = set(self.default_sites).union(*(p.sites for p in self.preset_elmo.values()))
        bad = sorted(sites - set(SITES))
        if bad:
            raise ValueError(f"task {self.name!r}: unknown default sites {bad}")
        if not self.table_rows or self.table_rows[0].metric.key != self.metric.key:
            raise ValueError(f"task {self.name!r}: the first table row must show {self.metric.key}")
        if self.synthetic is not None and set(self.synthetic.stand_ins) - set(self.configs):
            raise ValueError(f"task {self.name!r}: synthetic stand-ins name an unknown preset")

    @property
    def heading(self) -> str:
        """:attr:`title`, else the first table row's label."""
        return self.title or self.table_rows[0].label

    @property
    def presets(self) -> tuple[str, ...]:
        """The preset names ``setup`` accepts, in order; the first is the default."""
        return tuple(self.configs)

    def sites_for(self, preset: str) -> frozenset[str]:
        """The injection sites of ``preset``'s ELMo runs (:attr:`preset_elmo`, else
        :attr:`default_sites`)."""
        own = self.preset_elmo.get(preset)
        return frozenset(own.sites) if own is not None else frozenset(self.default_sites)

    def elmo_dropout_for(self, preset: str) -> float:
        """The ELMo dropout of ``preset``'s runs (:attr:`preset_elmo`, else
        :attr:`elmo_dropout`)."""
        own = self.preset_elmo.get(preset)
        return own.dropout if own is not None else self.elmo_dropout

    def finetune_for(self, preset: str) -> float | None:
        """Epochs of biLM fine-tuning on the task's text before ``preset``'s ELMo runs
        (:attr:`finetune_presets`: one epoch, as in paper A.1), ``None`` for none."""
        return 1.0 if preset in self.finetune_presets else None

    def check_preset(self, preset: str) -> None:
        """Raise a ValueError listing the valid presets unless ``preset`` is one."""
        if preset not in self.configs:
            raise ValueError(_no_preset(self.name, preset, self.presets))

    def build_recipe(
        self, preset: str, overrides: Sequence[str], data_dir: str | None, limit: int | None = None
    ) -> TaskRecipe:
        """The recipe of a run: ``setup``'s, or with a ``limit`` :attr:`setup_limited`'s where
        the task has one (its splits then hold at most ``limit`` examples each; the caller
        still cuts them, for the tasks without one).

        Args:
            preset: the preset's name.
            overrides: ``key=value`` items.
            data_dir: the data folder (``None``: the DEMO set) or ``hf:NAME``.
            limit: the run's ``--limit`` (``None``: every example).
        """
        if limit is not None and self.setup_limited is not None:
            return self.setup_limited(preset, overrides, data_dir, limit)
        return self.setup(preset, overrides, data_dir)

    def configure(self, preset: str, overrides: Sequence[str]) -> Any:
        """The preset's configuration with ``overrides`` applied and validated, reading no data
        (the step ``setup`` starts with). The command line calls it before any run starts, so a
        bad ``--set`` key or value is an error at once.

        Raises:
            ValueError: an unknown preset, override key or a bad value (naming the problem).
        """
        return configure(self.configs, preset, overrides, self.name)


def loss_of(output: Any) -> Tensor:
    """The scalar loss of a model output."""
    loss = output.loss
    if loss is None:
        raise ValueError("the model returned no loss (were gold labels missing?)")
    return loss


def batch_plan(sizes: Sequence[int], config: TrainConfig, seed: int | None) -> list[list[int]]:
    """Indices of each batch: similar sizes together, batch order shuffled by ``seed``.

    Examples are sorted by size (stable), cut into batches of ``batch_size`` examples, of at most
    ``batch_size`` tokens (an example longer than the budget gets a batch of its own), or of one
    example each (``document``); ``seed`` None keeps the sorted order (evaluation).

    With a ``seed`` (training: the runner derives one from the run's seed and the epoch) and
    ``config.bucket_noise`` > 0, the sort key of each example is its size times
    ``1 + U(-noise, noise)``, drawn from ``random.Random(seed)`` before that same generator
    shuffles the batches (allennlp's bucket sampler with ``padding_noise``), so batch membership
    changes from epoch to epoch but is a function of ``(sizes, config, seed)`` alone: a resumed
    epoch recomputes its plan. Token budgets still count the true sizes; ``document`` batching
    draws no noise. With noise 0 no number is drawn before the shuffle.
    """
    import random

    rng = random.Random(seed) if seed is not None else None
    if config.batching == "document":
        chunks: list[list[int]] = [[i] for i in range(len(sizes))]
    elif config.batching == "shuffled" and rng is not None:
        order = list(range(len(sizes)))
        rng.shuffle(order)  # membership random every epoch; the batch order with it
        step = config.batch_size
        return [order[i : i + step] for i in range(0, len(order), step)]
    else:
        keys: Sequence[float] = sizes
        if rng is not None and config.bucket_noise > 0:
            noise = config.bucket_noise
            keys = [size * (1.0 + rng.uniform(-noise, noise)) for size in sizes]
        order = sorted(range(len(sizes)), key=lambda i: keys[i])
        chunks = _cut(order, sizes, config)
    if rng is not None:
        rng.shuffle(chunks)
    return chunks


def _cut(order: Sequence[int], sizes: Sequence[int], config: TrainConfig) -> list[list[int]]:
    """``order`` cut into consecutive batches of ``batch_size`` examples (``examples``) or of at
    most ``batch_size`` padded tokens, longest true size × count (``tokens``)."""
    if config.batching in ("examples", "shuffled"):  # shuffled: evaluation batches
        step = config.batch_size
        return [list(order[i : i + step]) for i in range(0, len(order), step)]
    chunks: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        longest_next = max(longest, sizes[i])
        if current and longest_next * (len(current) + 1) > config.batch_size:
            chunks.append(current)
            current, longest_next = [], sizes[i]
        current.append(i)
        longest = longest_next
    if current:
        chunks.append(current)
    return chunks


def iter_batches(
    recipe: TaskRecipe, examples: Sequence[Any], represent: Represent
) -> Iterator[tuple[list[Any], Any]]:
    """Evaluation batches (the training batching, in size order, unshuffled):
    ``(examples of the batch, collated batch)``."""
    plan = batch_plan([recipe.size(e) for e in examples], recipe.train_config, None)
    for indices in plan:
        chunk = [examples[i] for i in indices]
        yield chunk, recipe.collate(chunk, represent)
