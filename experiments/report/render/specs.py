"""Table specs: which runs fill which cell (:class:`TableSpec`, :class:`Row`, the columns), the
named tables' builders (Tables 1–3 of Peters et al., 2018, and the tables beyond the paper), when
the paper's numbers may stand beside ours (:func:`paper_comparable`), and the words for a biLM
configuration and a smoke run that captions and footnotes share."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from experiments.data.real_sets import SHARED_PREFIX, is_shared
from experiments.plan.specs import PAPER_PRESET, PUBLISHED_ELMO
from experiments.run.spec import NO_REPRESENTATION, RunSpec, baseline_fields, derive
from tasks.core import MetricSpec
from tasks.representations import HF_DEFAULT_MODEL, representation_label

DEFAULT_PAPER = Path(__file__).parent.parent / "paper.toml"


SPLITS = ("train", "dev", "test")  # the prefixes of split metric keys ("dev_f1")


@dataclass(frozen=True)
class Row:
    """One table row: a task in its base configuration.

    Attributes:
        label: shown in the first column, e.g. ``"SQuAD (F1)"``.
        base: the complete spec the columns modify (its seed is replaced by each table seed).
        metric: the metric shown.
        seeds: seeds of this row; ``None`` uses the table's.
        paper_key: the row's section in the paper table; ``None`` uses ``base.task``.
        split: the split of this row's numbers; ``None`` uses the table's (Table 1 mixes
            SQuAD's dev row with the other tasks' test rows).
        paper_split: the split of the paper's number for this row; ``None`` uses the table's.
    """

    label: str
    base: RunSpec
    metric: MetricSpec
    seeds: tuple[int, ...] | None = None
    paper_key: str | None = None
    split: str | None = None
    paper_split: str | None = None


@dataclass(frozen=True)
class RunsColumn:
    """A column of runs: the row's base spec with ``changes`` (keys as in ``spec.derive``).

    Attributes:
        label: header, e.g. ``"Last Only"``.
        changes: spec changes, e.g. ``{"mode": "last"}``; empty for the base itself.
        paper_key: the paper's value for this column; ``None`` when the paper has none.
        versus: label of this column's reference column (an ablation's baseline); its cells
            then carry the difference to it with a significance test.
        expect: the direction a claim predicts against ``versus`` (``"above"``: ELMo beats
            the baseline; ``"below"``: random weights fall short of ELMo); rows where the
            test does not show it (Holm-adjusted p ≥ α, or a difference the other way) are
            named in a footnote. ``None``: no claim.
    """

    label: str
    changes: Mapping[str, Any] = field(default_factory=dict)
    paper_key: str | None = None
    versus: str | None = None
    expect: Literal["above", "below"] | None = None


@dataclass(frozen=True)
class IncreaseColumn:
    """Difference of two :class:`RunsColumn` means, absolute and relative error reduction.

    The relative value, ``Δ / (100 − minuend_base)`` as in Table 1, is shown for metrics scaled to
    percentages (``scale == 100``) only.

    Attributes:
        label: header, e.g. ``"Increase"``.
        minuend: label of the improved column (e.g. ``"ELMo"``).
        subtrahend: label of the reference column (e.g. ``"Baseline"``).
        paper_key: the paper's ``<key>_abs`` and ``<key>_rel`` values; ``None`` for none.
    """

    label: str
    minuend: str
    subtrahend: str
    paper_key: str | None = None


Column = RunsColumn | IncreaseColumn


@dataclass(frozen=True)
class TableSpec:
    """Rows × columns of a results table.

    Attributes:
        name: short name, e.g. ``"table2"``; also the default paper section.
        title: caption.
        rows: the rows, in order.
        columns: the columns, in order.
        seeds: seeds of every row without its own.
        paper_table: section of the paper data; ``None`` uses ``name``.
        split: the split our runs were scored on (``None``: not stated).
        paper_split: the split of the paper's numbers in this table; when both splits are
            stated and differ, the paper column stays empty (with a footnote): a paper number
            sits beside ours only for the same split (and setup: :func:`paper_comparable`).
        caption: lines printed under the title (biLM, preset, data, seeds, ...).
    """

    name: str
    title: str
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    seeds: tuple[int, ...] = (0,)
    paper_table: str | None = None
    split: str | None = None
    paper_split: str | None = None
    caption: tuple[str, ...] = ()

    @property
    def paper_comparable(self) -> bool:
        """Whether the paper's numbers are for the split of our runs (or splits are unstated);
        the split only: :func:`paper_comparable` is the whole rule."""
        return self.split is None or self.paper_split is None or self.split == self.paper_split

    def splits_of(self, row: Row) -> tuple[str | None, str | None]:
        """The row's split and its paper number's split (the row's own, else the table's)."""
        return row.split or self.split, row.paper_split or self.paper_split

    def row_comparable(self, row: Row) -> bool:
        """Whether the paper's number for ``row`` is for the split of our runs (the split
        only: :func:`paper_comparable` is the whole rule)."""
        ours, paper = self.splits_of(row)
        return ours is None or paper is None or ours == paper

    def __post_init__(self) -> None:
        labels = [c.label for c in self.columns]
        if len(set(labels)) != len(labels):
            raise ValueError(f"column labels must be unique: {labels}")
        runs = {c.label for c in self.columns if isinstance(c, RunsColumn)}
        for column in self.columns:
            if isinstance(column, IncreaseColumn):
                refs: tuple[str | None, ...] = (column.minuend, column.subtrahend)
            else:
                refs = (column.versus,) if column.versus is not None else ()
            for ref in refs:
                if ref not in runs or ref == column.label:
                    raise ValueError(
                        f"{column.label!r} refers to {ref!r}; run columns: {sorted(runs)}"
                    )
        if not self.seeds or any(not r.seeds for r in self.rows if r.seeds is not None):
            raise ValueError("seeds must not be empty")

    def expected(self, row: Row, column: RunsColumn) -> tuple[RunSpec, ...]:
        """The specs (one per seed) that fill a cell, deduplicated in seed order."""
        specs: dict[str, RunSpec] = {}
        for seed in row.seeds if row.seeds is not None else self.seeds:
            spec = derive(row.base, {**column.changes, "seed": seed})
            specs.setdefault(spec.run_id, spec)
        return tuple(specs.values())

    def pair_of(self, column: Column) -> tuple[str, str] | None:
        """The two run columns a column's test compares (``None``: the column has no test)."""
        if isinstance(column, IncreaseColumn):
            return column.minuend, column.subtrahend
        return (column.label, column.versus) if column.versus is not None else None


def load_paper(path: str | Path = DEFAULT_PAPER) -> dict[str, Any]:
    """Read the paper's numbers (``experiments/report/paper.toml``)."""
    with Path(path).open("rb") as handle:
        return tomllib.load(handle)


def paper_comparable(table: TableSpec, row: Row) -> tuple[bool, str]:
    """Whether the paper's numbers may stand beside ``row``'s, and why not.

    They may when the row's base spec (for a baseline row still the ELMo spec it derives from)
    uses the ``paper`` preset, the published biLM (``{"published": "original"}``), the task's
    real data (not ``demo``, all of it: no ``limit``, no ``train_fraction``), and our numbers are
    for the split of the paper's (or a split is unstated).

    Returns:
        ``(True, "")``, or ``(False, reasons)`` with the reasons joined by commas, e.g.
        ``"DEMO data, preset mini, biLM = the shipped small biLM, not the published ELMo"``.
    """
    base = row.base
    reasons = []
    ours, paper = table.splits_of(row)
    if ours is not None and paper is not None and ours != paper:
        reasons.append(f"the paper's numbers are {paper} numbers and ours are {ours} numbers")
    if base.data == "demo":
        reasons.append("DEMO data")
    elif is_shared(base.data):
        reasons.append(f"another data set ({base.data.removeprefix(SHARED_PREFIX)})")
    if base.limit is not None:
        reasons.append(f"only the first {base.limit:,} examples of each split")
    if base.train_fraction is not None:
        reasons.append(f"{100 * base.train_fraction:g} % of the training set")
    if base.preset != PAPER_PRESET:
        reasons.append(f"preset {base.preset}")
    if base.representation != "elmo":
        reasons.append(f"representation {base.representation}, not the published ELMo")
    elif base.representation_config.get("published") != PUBLISHED_ELMO:
        reasons.append(f"biLM = {bilm_description(base.representation_config)}")
    return not reasons, ", ".join(reasons)


def bilm_description(config: Mapping[str, Any], detail: bool = False) -> str:
    """An ELMo configuration in words, e.g. ``"the shipped small biLM, not the published ELMo"``
    (for the paper's ``{"published": "original"}``: ``"the published ELMo 'original' (Peters et
    al. 2018)"``); ``detail`` adds the shipped biLM's size and training data. The one wording of
    a biLM in captions and footnotes."""
    if "published" in config:
        name = config["published"]
        if name == PUBLISHED_ELMO:
            return f"the published ELMo {name!r} (Peters et al. 2018)"
        return f"the published ELMo {name!r}, not the paper's {PUBLISHED_ELMO!r}"
    if "weights" in config:
        what = f"official-format weights {Path(str(config['weights'])).name}"
    elif "checkpoint" in config:
        what = f"checkpoint {Path(str(config['checkpoint'])).name}"
    elif detail:
        what = (
            "the shipped small English biLM (elmo-bench-small-en, 3.0 M parameters, trained on "
            "2.3 M tokens)"
        )
    else:
        what = "the shipped small biLM"
    return f"{what}, not the published ELMo"


def config_label(spec: RunSpec) -> str:
    """A run's representation and its configuration, short: ``"elmo published:original"``,
    ``"elmo checkpoint=default"`` (the shipped biLM), ``"cove weights=w.pth"``, ``"none"``."""
    if spec.representation == NO_REPRESENTATION:
        return NO_REPRESENTATION
    config = dict(spec.representation_config)
    tuned = " fine-tuned" if config.pop("finetune", None) else ""
    if spec.representation == "hf" and "model" not in config:  # the model, never "default"
        config["model"] = f"{HF_DEFAULT_MODEL} (bundled)"
    if "published" in config:
        label = f"published:{config['published']}"
    elif "weights" in config:
        label = f"weights={Path(str(config['weights'])).name}"
    elif "checkpoint" in config:
        label = f"checkpoint={Path(str(config['checkpoint'])).name}"
    elif not config and spec.representation == "elmo":
        label = "checkpoint=default"
    else:
        label = ", ".join(f"{k}={v}" for k, v in sorted(config.items())) or "default"
    return f"{spec.representation} {label}{tuned}"


def smoke_reasons(spec: RunSpec) -> list[str]:
    """Why ``spec`` is a smoke run, in words: its ``--limit`` (``"first 20 examples of each
    split"``) and a ``--max-epochs`` below its preset's budget (``"1 of the preset's 10
    epochs"``); ``[]`` for a run on the whole data with the preset's budget."""
    return _smoke_text([spec.limit] if spec.limit is not None else [], _short_budgets([spec]))


def smoke_label(specs: Iterable[RunSpec]) -> str:
    """`` [SMOKE RUNS: ...]`` for a title (the :func:`smoke_reasons` of the specs together,
    e.g. ``" [SMOKE RUNS: first 20 examples of each split; 1 of the presets' 10–40
    epochs]"``), or ``""`` when no spec is a smoke run."""
    specs = list(specs)
    limits = sorted({s.limit for s in specs if s.limit is not None})
    reasons = _smoke_text(limits, _short_budgets(specs))
    return f" [SMOKE RUNS: {'; '.join(reasons)}]" if reasons else ""


def _short_budgets(specs: Iterable[RunSpec]) -> list[tuple[int, int | None]]:
    """``(max_epochs, the preset's epochs or None when unknown)`` of the specs whose
    ``max_epochs`` is below their preset's budget (or whose budget is unknown)."""
    found = []
    for spec in specs:
        if spec.max_epochs is not None:
            budget = _preset_epochs(spec.task, spec.preset, tuple(spec.overrides))
            if budget is None or spec.max_epochs < budget:
                found.append((spec.max_epochs, budget))
    return found


def _smoke_text(limits: Sequence[int], budgets: Sequence[tuple[int, int | None]]) -> list[str]:
    """The smoke reasons in words: the ``--limit`` values and the short epoch budgets."""
    reasons = []
    if limits:
        reasons.append(f"first {'/'.join(f'{n:,}' for n in limits)} examples of each split")
    if budgets:
        ran = span(sorted({e for e, _ in budgets}))
        known = sorted({b for _, b in budgets if b is not None})
        if not known:
            reasons.append(f"at most {ran} epochs (--max-epochs)")
        else:
            whose = "the preset's" if len(known) == 1 else "the presets'"
            reasons.append(f"{ran} of {whose} {span(known)} epochs")
    return reasons


@functools.lru_cache(maxsize=256)
def _preset_epochs(task: str, preset: str, overrides: tuple[str, ...]) -> int | None:
    """The epoch budget of ``task``'s ``preset`` with ``overrides``; ``None`` when the task or
    preset is not registered here."""
    from tasks.registry import get_task

    try:
        epochs = get_task(task).configure(preset, list(overrides)).train.epochs
    except (KeyError, ValueError, AttributeError):
        return None
    return int(epochs) if isinstance(epochs, int) else None


def span(values: Sequence[int]) -> str:
    """``"3"``, ``"2–5"`` or ``"?"`` for sorted values."""
    if not values:
        return "?"
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}–{values[-1]}"


def table1(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Table 1: baseline vs ELMo (each row's base spec is its best ELMo configuration)."""
    return TableSpec(
        name="table1",
        title="Table 1: baseline vs ELMo + baseline (test)",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields(), "baseline"),
            RunsColumn("ELMo", {}, "elmo"),
            IncreaseColumn("Increase", "ELMo", "Baseline", "increase"),
        ),
        seeds=seeds,
    )


def table2(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Table 2: layer weighting, each row at its base sites; every ELMo column is tested
    against the baseline."""
    return TableSpec(
        name="table2",
        title="Table 2: baseline, LastOnly and all layers with λ = 1 and λ = 0.001 (dev)",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields(), "baseline"),
            RunsColumn("Last Only", {"mode": "last"}, "last_only", versus="Baseline"),
            RunsColumn("λ=1", {"mode": "all", "lam": 1.0}, "lambda_1", versus="Baseline"),
            RunsColumn("λ=0.001", {"mode": "all", "lam": 0.001}, "lambda_0_001", versus="Baseline"),
        ),
        seeds=seeds,
    )


def table3(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Table 3: where ELMo is injected, each row with its base mix; the other placements are
    tested against input only (the paper's reference placement, §5.2)."""
    return TableSpec(
        name="table3",
        title="Table 3: ELMo at the input, input and output, or output only (dev)",
        rows=tuple(rows),
        columns=(
            RunsColumn("Input Only", {"sites": ("input",)}, "input_only"),
            RunsColumn(
                "Input & Output",
                {"sites": ("input", "output")},
                "input_output",
                versus="Input Only",
            ),
            RunsColumn("Output Only", {"sites": ("output",)}, "output_only", versus="Input Only"),
        ),
        seeds=seeds,
    )


def dynamic_table(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Beyond the paper: per-token layer weights (``mode="dynamic"``, :mod:`bilm.dynamic_mix`)
    against the paper's static mix (Eq. 1) at each row's own λ and sites, tested against it.
    The paper has no such column, so no paper number stands beside it."""
    return TableSpec(
        name="dynamic",
        title="Static (Eq. 1) vs per-token (dynamic) layer weights",
        rows=tuple(rows),
        columns=(
            RunsColumn("Static (all layers)", {"mode": "all"}),
            RunsColumn("Dynamic", {"mode": "dynamic"}, versus="Static (all layers)"),
        ),
        seeds=seeds,
    )


def bilm_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    rep_config: Mapping[str, Any] | None = None,
) -> TableSpec:
    """Beyond the paper's tables: how the biLM is run (paper §3.4, A.1; docs/bilm.md). Each row's
    ELMo configuration with the LSTM state reset per sentence (this project's default), started
    from a fixed warm-up state, carried across batches row by row (the official biLM and
    allennlp's stateful ELMo), and with the biLM first fine-tuned for one epoch on the task's
    training text (paper A.1, "in most cases"); each tested against reset. ``rep_config`` is the
    rows' biLM configuration, to which fine-tuning is added. No paper number stands beside them
    (the paper reports no such comparison)."""
    base = dict(rep_config or {})
    base.pop("finetune", None)
    tuned = {"representation_config": {**base, "finetune": 1.0}, "state": "reset"}
    return TableSpec(
        name="bilm",
        title="biLM state policy and task fine-tuning",
        rows=tuple(rows),
        columns=(
            RunsColumn("Reset (default)", {"representation_config": base, "state": "reset"}),
            RunsColumn(
                "Warm", {"representation_config": base, "state": "warm"}, versus="Reset (default)"
            ),
            RunsColumn(
                "Carry", {"representation_config": base, "state": "carry"}, versus="Reset (default)"
            ),
            RunsColumn("Fine-tuned biLM", tuned, versus="Reset (default)"),
        ),
        seeds=seeds,
    )


def adapt_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    rep_config: Mapping[str, Any] | None = None,
    others: Mapping[str, Mapping[str, Any]] | None = None,
) -> TableSpec:
    """Beyond the paper: what of the representation trains with the task model
    (docs/adaptation.md). For each row's ELMo configuration (``rep_config``) and each other
    representation (name → configuration; default the bundled MiniLM): frozen features (the
    paper's use), the whole encoder fine-tuned, and LoRA adapters, each tested against the same
    representation frozen. No paper number stands beside them (the paper trains no biLM with
    its task)."""
    base = {k: v for k, v in (rep_config or {}).items() if k != "finetune"}
    others = {"hf": {}} if others is None else others
    groups = {"elmo": base, **others}
    columns: list[Column] = []
    for name, config in groups.items():
        label = representation_label(name, config)
        frozen = f"{label}, frozen"
        columns.append(
            RunsColumn(frozen, {"representation": name, "representation_config": dict(config)})
        )
        for mode, words in (("finetune", "fine-tuned"), ("lora", "LoRA")):
            changes = {"representation": name, "representation_config": {**config, "adapt": mode}}
            columns.append(RunsColumn(f"{label}, {words}", changes, versus=frozen))
    return TableSpec(
        name="adapt",
        title="Frozen, fine-tuned or adapted with LoRA",
        rows=tuple(rows),
        columns=tuple(columns),
        seeds=seeds,
    )


def directions_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    rep_config: Mapping[str, Any] | None = None,
) -> TableSpec:
    """Beyond the paper: the biLM's two directions apart (docs/adaptation.md). Each row's ELMo
    configuration with the mix over every layer's forward half alone, its backward half alone,
    and both (ELMo), each direction tested against both. No paper number stands beside them."""
    base = {k: v for k, v in (rep_config or {}).items() if k != "finetune"}
    return TableSpec(
        name="directions",
        title="The biLM's forward and backward language models apart",
        rows=tuple(rows),
        columns=(
            RunsColumn("Both (ELMo)", {"representation_config": base}),
            *(
                RunsColumn(
                    f"{words} only",
                    {"representation_config": {**base, "directions": direction}},
                    versus="Both (ELMo)",
                )
                for direction, words in (("forward", "Forward"), ("backward", "Backward"))
            ),
        ),
        seeds=seeds,
    )


def representation_columns(
    others: Mapping[str, Mapping[str, Any]],
    versus: str,
    expects: Mapping[str, Literal["above", "below"]] | None = None,
) -> tuple[RunsColumn, ...]:
    """A column per other representation (name → configuration), each tested against the
    column ``versus``, with the direction a claim predicts for some (name → ``expect``)."""
    return tuple(
        RunsColumn(
            representation_label(name, config),
            {"representation": name, "representation_config": dict(config)},
            versus=versus,
            expect=(expects or {}).get(name),
        )
        for name, config in others.items()
    )


def real_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    others: Mapping[str, Mapping[str, Any]] | None = None,
) -> TableSpec:
    """The real sets (``--data real``): the baseline, ELMo tested against it, and each other
    representation (name → configuration; default the random-weight biLM and the bundled
    MiniLM) tested against ELMo. No paper number stands beside them (other data)."""
    others = {"bilm-random": {}, "hf": {}} if others is None else others
    return TableSpec(
        name="real",
        title="Real sets: baseline, ELMo and other representations",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields()),
            RunsColumn("ELMo", {}, versus="Baseline", expect="above"),
            *representation_columns(others, "ELMo", {"bilm-random": "below"}),
        ),
        seeds=seeds,
    )


def paper_data_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    others: Mapping[str, Mapping[str, Any]] | None = None,
) -> TableSpec:
    """Table 1 on the paper's own public data sets (``reproduce paper-data``): the baseline,
    ELMo and each other representation (name → configuration; default the bundled MiniLM,
    frozen), each tested against the baseline, as Table 1 tests ELMo's increase."""
    others = {"hf": {}} if others is None else others
    return TableSpec(
        name="paper-data",
        title="Table 1 on the paper's data: baseline, ELMo and MiniLM",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields()),
            RunsColumn("ELMo", {}, versus="Baseline"),
            *representation_columns(others, "Baseline"),
        ),
        seeds=seeds,
    )


def cove_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    cove_config: Mapping[str, Any] | None = None,
) -> TableSpec:
    """CoVe beside ELMo: the baseline, the baseline + CoVe with its last layer (McCann et al.'s
    setting) and with both layers mixed at λ = 1 (paper §5.1), and the row's ELMo configuration.
    CoVe runs at the row's sites with ELMo's dropout; ``cove_config`` None (no CoVe weights)
    leaves the CoVe columns out."""
    columns: list[Column] = [RunsColumn("Baseline", baseline_fields(), "baseline")]
    if cove_config is not None:
        cove = {"representation": "cove", "representation_config": dict(cove_config)}
        last, both = "CoVe, last layer", "CoVe, λ=1"
        columns += [
            RunsColumn(last, {**cove, "mode": "last"}, "cove_last", versus="Baseline"),
            RunsColumn(both, {**cove, "mode": "all", "lam": 1.0}, "cove_lambda_1", last),
        ]
    versus = "CoVe, last layer" if cove_config is not None else None
    columns += [
        RunsColumn("ELMo", {}, "elmo", versus=versus),
        IncreaseColumn("Increase", "ELMo", "Baseline"),
    ]
    return TableSpec(
        name="cove",
        title="CoVe beside ELMo",
        rows=tuple(rows),
        columns=tuple(columns),
        seeds=seeds,
    )
