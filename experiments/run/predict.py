"""A trained run's selected weights applied to new text: what ``predict RUN_ID --input FILE``
does (:mod:`experiments.cli.predict` turns its flags into a :class:`PredictRequest`).

The run is found in the request's store (``<store>/<task>/<run_id>/spec.json`` and
``env.json``); its selected (best-dev) weights in the training loop's checkpoint,
``<work>/<task>/<run_id>/checkpoint.pt`` (:mod:`experiments.run.checkpoint`: the store keeps no
weights). The run is rebuilt as it trained: the task's recipe from the spec's preset, ``--set``
overrides and data (its vocabularies and label set), the representation from the spec (the
task-tuned biLM from its cache when the spec fine-tuned one), the injector and the model; the
checkpoint's best weights are loaded and its frozen tensors (fixed word vectors, a frozen biLM)
checked against the rebuilt ones by their SHA-256. Frozen features are read through the feature
cache as in training (:attr:`PredictRequest.cache`; ``None``: computed live, in float32, where
the cache holds float16 copies). The predictions are written by the task's own writer, the file
format of the run's ``predictions-dev`` (``TaskRecipe.write_predictions``).

Before anything is built, the record's identity is compared with now on what the numbers are
*of* (data, representation, resolved configuration, result versions:
:data:`~experiments.run.identity.PORTABLE_FIELDS`); a difference refuses the request in one line
unless :attr:`PredictRequest.allow_changed` (a changed data folder can change a vocabulary under
the weights). Before that, the caller vets the stored spec (:func:`predict`'s ``vet``: the
command line refuses a plug-in representation it was not told to trust).

Input formats (:data:`FORMATS`):

* ``task`` (default): a file in the task's own format, the format of the run's dev split, read
  by the task's reader as its data module reads the dev split. The recipe is set up a second
  time on a copy of the run's data folder (files linked, not copied) whose dev file is the input
  (or, where an override names the dev file, with that override pointing at the input), so every
  rule of the reader applies; where the dev split is a folder, the input goes into an otherwise
  empty one under its own name (name it as the task's files are named). The model still reads
  the words through the run's own vocabulary.
* ``tokenized``: one sentence per line, tokens separated by whitespace;
* ``raw``: one text per line, tokenized by spaCy's rule-based English tokenizer (the
  project's, :func:`bilm.embed.spacy_tokenizer`).

  Blank lines are skipped. Both need a task whose example is one sentence: a dataclass with a
  ``tokens`` field and otherwise only per-token tuples (gold tags) and single values (a label, a
  line, a path), e.g. a tagger's or a sentence classifier's. Its gold fields get placeholders
  (each per-token field the dev split's most frequent value, e.g. ``O``; the first dev example's
  label), so a writer that prints gold beside the prediction prints the placeholder. Tasks whose
  examples hold more than a sentence (question and paragraph, sentence pairs, a predicate, a
  document) are refused in one line naming ``--format task``.

Every format: an input without any example is refused in one line naming the file (``no
example (every line is blank)``), nothing is written. A sentence longer than the run's length
limit (:data:`LENGTH_FIELDS`), which training never trains on, is treated as training treats it
(:func:`check_lengths`): cut where the model reads every split cut, else refused in one line
naming the file and line (``tokenized``, ``raw``); in the task's own format the task's reader
applies its dev-split rule (it refuses such a sentence, or keeps it), and one stderr line names
the input lines predicted whole or cut.

Every refusal is a :class:`PredictError`, one line that names the request's fields by their
command-line flags (``--input``, ``--work``, ``--allow-changed``), as the command prints it.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.run.errors import one_line

if TYPE_CHECKING:  # torch and the task registry load when a prediction runs
    import torch
    from torch import nn

    from experiments.run.spec import RunSpec
    from tasks.core import TaskRecipe

__all__ = [
    "FORMATS",
    "LENGTH_FIELDS",
    "PredictError",
    "PredictRequest",
    "PredictResult",
    "check_lengths",
    "length_limit",
    "predict",
    "read_sentences",
    "sentence_examples",
]

#: The input formats (the first is the default).
FORMATS = ("task", "tokenized", "raw")
#: Example fields filled from the input rather than from the template (their value's type).
_LOCATION_FIELDS = {"line": int, "path": str}
#: The configuration fields that bound how long a sentence a task reads (the first one a
#: configuration has is the run's limit): training never trains on a longer one (its reader
#: skips or refuses it), so an input sentence over it is refused or said (:func:`check_lengths`).
LENGTH_FIELDS = ("max_sentence_tokens", "max_tokens", "max_length")


class PredictError(ValueError):
    """A prediction refused before anything is written: an unknown run, missing or foreign
    weights, a changed run, an input the format cannot read (one line; the command line's exit
    status 2)."""


@dataclass(frozen=True)
class PredictRequest:
    """What to predict with which run, and where the output goes.

    Attributes:
        run_id: a stored run's id (``<store>/<task>/<run_id>/``).
        input: the text (``--input``).
        store: the results store holding the run.
        work: where the run trained (``<work>/<task>/<run_id>/checkpoint.pt``).
        out: where the task's writer writes (it sets the suffix of its format); a folder: the
            default name inside it; ``None``: beside the input,
            ``<input name>-predictions-<run_id>.<suffix>``.
        format: one of :data:`FORMATS`.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        precision: autocast of the forward pass (``fp32``, ``bf16``, ``fp16``); ``None``: the
            run's recorded precision.
        cache: the feature cache frozen representations are read through, as in training;
            ``None``: computed live (float32).
        allow_changed: predict even where what the run was made from changed since.
    """

    run_id: str
    input: Path
    store: Path
    work: Path
    out: Path | None = None
    format: str = FORMATS[0]
    device: str = "auto"
    precision: str | None = None
    cache: Path | None = None
    allow_changed: bool = False

    def __post_init__(self) -> None:
        """Refuse a format that is not one of :data:`FORMATS`."""
        if self.format not in FORMATS:
            raise PredictError(f"--format {self.format!r}: not one of {', '.join(FORMATS)}")


@dataclass(frozen=True)
class PredictResult:
    """What a prediction did.

    Attributes:
        run_id: the run whose weights predicted.
        task: its task.
        examples: how many examples of the input were predicted.
        predictions: the file the task's writer wrote.
    """

    run_id: str
    task: str
    examples: int
    predictions: Path


def predict(request: PredictRequest, vet: Callable[[RunSpec], None]) -> PredictResult:
    """Rebuild the run, load its selected weights, predict on the input and write the file.

    Args:
        request: the run, the input and where the output goes.
        vet: called with the stored run's spec before anything it names is imported or built
            (the command line refuses an untrusted plug-in representation there); it raises to
            refuse.

    Returns:
        The run id, its task, the number of examples and the file written.

    Raises:
        PredictError: an unknown run, missing weights, an input the format cannot read, or a
            run whose inputs changed (without ``allow_changed``); nothing is written.
    """
    from bilm.devices import resolve_device, resolve_precision

    stored = _stored_run(request.store, request.run_id)
    spec = stored.spec
    vet(spec)  # before any import of code the spec names
    checkpoint = request.work / spec.task / spec.run_id / "checkpoint.pt"
    _require_weights(checkpoint, stored)
    if not request.input.is_file():
        raise PredictError(f"--input {request.input}: no such file")
    recorded = stored.identity
    device = resolve_device(request.device)
    precision = resolve_precision(device, request.precision or recorded.get("precision", "fp32"))
    _check_unchanged(stored, request.device, precision, request.allow_changed)
    _set_threads(device, recorded.get("threads"))
    rebuilt = _rebuild(spec, device, precision)
    path = request.input
    with tempfile.TemporaryDirectory(prefix="elmo-bench-predict-") as scratch:
        writer, examples = _examples(request.format, spec, rebuilt.recipe, path, Path(scratch))
        _load_weights(rebuilt.model, checkpoint, stored)
        predictions = _predict(rebuilt, examples, request.cache)
        out = request.out or _default_out(path, spec.run_id)
        if out.is_dir():
            out = _default_out(out / path.name, spec.run_id)
        written = _write(writer, predictions, examples, out, path)
    return PredictResult(spec.run_id, spec.task, len(examples), written)


# ---------------------------------------------------------------------- the record, its weights
@dataclass(frozen=True)
class _Stored:
    """A stored run: its spec, folder, metrics and recorded identity."""

    spec: RunSpec
    folder: Path
    metrics: Mapping[str, float]
    identity: Mapping[str, Any]


def _stored_run(store: Path, run_id: str) -> _Stored:
    """The run ``run_id`` of ``store``.

    Raises:
        PredictError: no such run there.
    """
    from experiments.run.store import ResultsStore

    results = ResultsStore(store)
    folder = results.path_of(run_id)
    if folder is None:
        raise PredictError(f"run {run_id!r} is not in the store {store} (see --store)")
    record = results.get(run_id)
    return _Stored(record.spec, folder, record.metrics, record.provenance.identity)


def _require_weights(checkpoint: Path, stored: _Stored) -> None:
    """Raise unless the run's checkpoint (its selected weights) is there.

    Raises:
        PredictError: one line naming where they were looked for and how to get them.
    """
    if checkpoint.is_file():
        return
    spec_file = stored.folder / "spec.json"
    raise PredictError(
        f"no weights for run {stored.spec.run_id}: looked for {checkpoint} (the store keeps "
        "no weights; its training keeps them in its work folder). Get them by training it "
        f"again: python -m experiments run --spec {spec_file} --store OTHER_STORE "
        f"--work {checkpoint.parents[2]}, or pass --work where it trained"
    )


def _check_unchanged(stored: _Stored, device: str, precision: str, allow: bool) -> None:
    """Compare what the run was made of with now
    (:data:`~experiments.run.identity.PORTABLE_FIELDS`).

    Raises:
        PredictError: a difference, without ``allow`` (printed to stderr with it).
    """
    from experiments.run.identity import PORTABLE_FIELDS, reuse_differences, run_identity

    now = run_identity(stored.spec, device, precision)
    reasons = reuse_differences(stored.identity, now, PORTABLE_FIELDS)
    if reasons and not allow:
        raise PredictError(
            f"run {stored.spec.run_id} was made from other inputs than now: "
            f"{'; '.join(reasons)}; its weights may not fit the rebuilt model (pass "
            "--allow-changed to predict anyway)"
        )
    if reasons:
        print(f"predicting although the run changed: {'; '.join(reasons)}", file=sys.stderr)


def _set_threads(device: torch.device, threads: object) -> None:
    """On the CPU, the run's recorded thread count (the summation order of its numbers)."""
    import torch

    if device.type == "cpu" and isinstance(threads, int) and threads >= 1:
        torch.set_num_threads(threads)


def _load_weights(model: nn.Module, checkpoint: Path, stored: _Stored) -> None:
    """Load the checkpoint's selected weights into the rebuilt ``model``.

    The checkpoint must be the stored run's final one: its identity (written by the loop) and
    its selected step and epochs must be the record's; the frozen tensors it references (by
    SHA-256) must be the rebuilt ones.

    Raises:
        PredictError: the checkpoint is unreadable, of another training of this run id, holds no
            selected weights yet, or does not fit the rebuilt model.
    """
    import torch

    from experiments.run.checkpoint import tensor_reference
    from experiments.run.identity import reuse_key

    device = next(iter(model.state_dict().values())).device
    try:
        payload = torch.load(checkpoint, map_location=device, weights_only=True)
        state = json.loads(payload["state"])
    except Exception as error:  # a truncated or foreign file: torch raises many kinds
        raise PredictError(f"{checkpoint}: not a readable checkpoint ({one_line(error)})") from None
    identity = reuse_key(stored.identity)
    recorded = {k: stored.metrics.get(k) for k in ("best_step", "epochs_run")}
    found = {"best_step": state.get("best_step"), "epochs_run": state.get("epoch")}
    other = (payload.get("identity") or identity) != identity or any(
        v is not None and found[k] != v for k, v in recorded.items()
    )
    if other:
        raise PredictError(
            f"{checkpoint} holds another training of run {stored.spec.run_id} than the stored "
            f"one (selected step {found['best_step']}, {found['epochs_run']} epochs; recorded "
            f"{recorded['best_step']}, {recorded['epochs_run']}): train it again (see "
            "docs/runs.md, predict) or pass --work where the stored run trained"
        )
    best = payload.get("best_weights")
    if best is None:
        raise PredictError(f"{checkpoint}: no evaluation had selected weights yet")
    live = model.state_dict()
    frozen: dict[str, dict[str, Any]] = payload.get("frozen", {})
    changed = [n for n, ref in frozen.items() if n not in live or tensor_reference(live[n]) != ref]
    if changed:
        raise PredictError(
            f"{checkpoint}: the rebuilt run has other frozen tensors ({', '.join(changed[:3])}): "
            "their source (e.g. the word-vector file or the biLM) changed since it trained"
        )
    try:
        model.load_state_dict({**best, **{n: live[n] for n in frozen}})
    except RuntimeError as error:
        raise PredictError(
            f"{checkpoint}: the weights do not fit the rebuilt model ({one_line(error)[:300]})"
        ) from None


# ------------------------------------------------------------------------------- the rebuilt run
@dataclass
class _Rebuilt:
    """The objects of a rebuilt run (as :func:`experiments.run.setup.set_up` sets them up)."""

    recipe: TaskRecipe
    representation: Any
    model: nn.Module
    device: torch.device
    precision: str


def _run_splits(spec: RunSpec, recipe: TaskRecipe) -> dict[str, list[Any]]:
    """The training and dev examples the run used (``limit``, ``train_fraction``)."""
    from experiments.run.setup import training_subset

    splits = {s: list(recipe.splits[s])[: spec.limit] for s in ("train", "dev")}
    if spec.train_fraction is not None:
        splits["train"] = training_subset(splits["train"], spec.train_fraction)
    return splits


def _rebuild(spec: RunSpec, device: torch.device, precision: str) -> _Rebuilt:
    """The run's recipe, representation and model on ``device``, in the runner's order and
    seeding (weights still the initial ones), in evaluation mode.

    Raises:
        PredictError: the spec is of another version of its task.
    """
    from experiments.data.real_sets import data_path
    from experiments.run.represent import build_spec_representation, finetuned_bilm
    from experiments.run.setup import seed_everything
    from tasks.features.inject import Injector
    from tasks.registry import get_task

    task = get_task(spec.task)
    if spec.task_version != task.version:
        raise PredictError(
            f"run {spec.run_id} is of {spec.task} v{spec.task_version}, the code is "
            f"v{task.version}: its weights belong to another model"
        )
    seed_everything(spec.seed)
    # as the run built it: with its --limit, a streaming reader's vocabulary sizes the weights
    recipe = task.build_recipe(spec.preset, list(spec.overrides), data_path(spec.data), spec.limit)
    config = dict(spec.representation_config)
    if config.get("finetune"):  # the task-tuned biLM, from its cache (paper §3.4)
        splits = _run_splits(spec, recipe)
        config, _ = finetuned_bilm(
            config,
            recipe.sequences(splits["train"]),
            recipe.sequences(splits["dev"]),
            device=str(device),
            precision=precision,
            progress=False,
        )
    representation = build_spec_representation(spec, config)
    injector = Injector(representation, frozenset(spec.sites), spec.mix, dropout=spec.dropout)
    seed_everything(spec.seed)
    model = recipe.build_model(injector).to(device)
    model.eval()
    return _Rebuilt(recipe, representation, model, device, precision)


def _predict(rebuilt: _Rebuilt, examples: Sequence[Any], cache: Path | None) -> Any:
    """The recipe's predictions for ``examples`` (batch to device, autocast, no gradients)."""
    import torch

    from bilm.devices import autocast
    from experiments.run.represent import make_represent
    from experiments.run.setup import to_device

    recipe, device = rebuilt.recipe, rebuilt.device
    represent = make_represent(
        rebuilt.representation, recipe.sequences(examples), cache, False, device
    )

    def forward(batch: Any) -> Any:
        with torch.no_grad(), autocast(device, rebuilt.precision):
            return rebuilt.model(to_device(batch, device))

    try:
        return recipe.predict(forward, examples, represent)
    except KeyError as error:  # e.g. a gold label of the input the run's label set lacks
        raise PredictError(
            f"--input: {one_line(error)!r} is not in the run's labels or vocabulary (a gold "
            "label the training data never had?)"
        ) from None


# ---------------------------------------------------------------------------------- the input
def _examples(
    fmt: str, spec: RunSpec, recipe: TaskRecipe, path: Path, scratch: Path
) -> tuple[TaskRecipe, list[Any]]:
    """The examples of the input and the recipe whose writer describes them (the run's for
    sentences; for ``task``, the recipe that read them: a writer may need the split they came
    from).

    Raises:
        PredictError: an unreadable input, or one the format cannot build examples from.
    """
    if fmt == "task":
        writer, examples = _task_examples(spec, recipe, path, scratch)
        if not examples:
            raise PredictError(f"--input {path}: no example ({_why_none(path, spec.task)})")
    else:
        dev = list(recipe.splits["dev"])
        writer = recipe
        examples = sentence_examples(spec.task, dev, read_sentences(path, fmt), str(path))
        if not examples:
            raise PredictError(f"--input {path}: no sentence (every line is blank)")
    check_lengths(fmt, recipe, examples, path)
    return writer, examples


def _why_none(path: Path, task: str) -> str:
    """Why the reader found no example in ``path``, in words (every line blank, or not)."""
    try:
        blank = not path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        blank = False
    return (
        "every line is blank"
        if blank
        else f"{task}'s reader, reading it as the dev split, kept none"
    )


def length_limit(config: Any) -> tuple[str, int] | None:
    """The run's sentence length limit: the first of :data:`LENGTH_FIELDS` the configuration
    has set to a number, and its value (``None``: no limit)."""
    for name in LENGTH_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return name, value
    return None


def check_lengths(fmt: str, recipe: TaskRecipe, examples: Sequence[Any], path: Path) -> None:
    """Treat the input's sentences over the run's length limit (:func:`length_limit`) as
    training does, and say so.

    A sentence the model reads cut (the recipe's :meth:`~tasks.core.TaskRecipe.sequences` are
    shorter) is predicted cut; one line on stderr says so. Otherwise a ``tokenized`` or ``raw``
    line is refused, as training refuses or skips such a sentence; in the task's own format
    (``task``) the task's reader has already applied its rule for the dev split (refused it, or
    kept it), and one line says that it was predicted whole.

    Args:
        fmt: the ``--format``.
        recipe: the run's recipe (its configuration holds the limit).
        examples: the input's examples (``tokens`` and, where they have one, ``line``).
        path: the input (messages).

    Raises:
        PredictError: a ``tokenized`` or ``raw`` line over the limit, naming the file and line.
    """
    limit = length_limit(recipe.config)
    if limit is None:
        return
    field, most = limit
    long = []
    for i, example in enumerate(examples):
        tokens = getattr(example, "tokens", None)
        if isinstance(tokens, tuple) and len(tokens) > most:
            read = max((len(s) for s in recipe.sequences([example])), default=0)
            long.append((getattr(example, "line", None) or i + 1, len(tokens), read < len(tokens)))
    if not long:
        return
    whole = [item for item in long if not item[2]]
    if whole and fmt != "task":
        line, n, _ = whole[0]
        raise PredictError(
            f"--input {path}:{line}: a sentence of {n:,} tokens is longer than the run's "
            f"{field}={most}, which training never trains on (its reader skips or refuses such "
            "a sentence); split the line, or give the input in the task's own format with "
            "--format task (its reader then treats it as it treats the dev split)"
        )
    cut = [item for item in long if item[2]]
    for items, how in (
        (cut, f"predicted cut to {most} tokens, as the model reads every split"),
        (whole, "predicted whole, as the task's reader keeps such a sentence in a dev split"),
    ):
        if items:
            print(
                f"--input {path}: {_which(items)} the run's {field}={most}: {how}", file=sys.stderr
            )


def _which(items: Sequence[tuple[int, int, bool]]) -> str:
    """``"line 3 has 5,000 tokens, more than"`` or ``"3 sentences (lines 3, 7, 9) have more
    tokens than"`` (at most five line numbers)."""
    if len(items) == 1:
        line, n, _ = items[0]
        return f"line {line} has {n:,} tokens, more than"
    lines = ", ".join(str(line) for line, _, _ in items[:5]) + (", …" if len(items) > 5 else "")
    return f"{len(items):,} sentences (lines {lines}) have more tokens than"


def read_sentences(path: Path, fmt: str) -> list[tuple[int, tuple[str, ...]]]:
    """``(line, tokens)`` of each non-blank line of ``path``: whitespace tokens
    (``tokenized``) or spaCy's English tokens (``raw``).

    Raises:
        PredictError: the file is missing, empty or not UTF-8, or spaCy is missing for ``raw``.
    """
    from bilm.embed import spacy_tokenizer, whitespace_tokenize
    from tasks.common.io import iter_lines

    try:
        tokenize = spacy_tokenizer() if fmt == "raw" else whitespace_tokenize
        lines = [(number, tuple(tokenize(line))) for number, line in iter_lines(path)]
    except ValueError as error:  # DataError, EmbedError
        raise PredictError(f"--input {one_line(error)}") from None
    return [(number, tokens) for number, tokens in lines if tokens]


def sentence_examples(
    task: str,
    dev: Sequence[Any],
    sentences: Sequence[tuple[int, tuple[str, ...]]],
    source: str,
) -> list[Any]:
    """Examples of ``sentences`` shaped like the task's dev examples (``dataclasses.replace``
    of the first one): ``tokens`` set, each per-token tuple field set to the dev split's most
    frequent value, ``line`` and ``path`` fields to the input's; other fields keep the first
    dev example's values (a gold label the writer may print, never scored).

    Args:
        task: the task's name (messages).
        dev: the run's dev examples (the template and the placeholders).
        sentences: ``(line, tokens)`` of the input (:func:`read_sentences`).
        source: the input's path (``path`` fields).

    Raises:
        PredictError: the examples are not single sentences (no ``tokens`` field, or fields
            that hold more than one sentence: a pair, a question and its paragraph, a
            predicate, a document).
    """
    if not dev:
        raise PredictError(f"{task}: the run's dev split is empty: no example to shape input by")
    per_token = _per_token_fields(task, dev)
    fill = {name: _most_common(v for ex in dev for v in getattr(ex, name)) for name in per_token}
    template = dev[0]
    located = {
        name
        for name, kind in _LOCATION_FIELDS.items()
        if isinstance(getattr(template, name, None), kind)
    }
    examples = []
    for line, tokens in sentences:
        changes: dict[str, Any] = {"tokens": tokens}
        changes.update({name: (fill[name],) * len(tokens) for name in per_token})
        if "line" in located:
            changes["line"] = line
        if "path" in located:
            changes["path"] = source
        examples.append(dataclasses.replace(template, **changes))
    return examples


def _per_token_fields(task: str, dev: Sequence[Any]) -> list[str]:
    """The fields of the dev examples that hold one value per token (e.g. gold tags).

    Raises:
        PredictError: the examples are not one sentence each (see :func:`sentence_examples`).
    """
    template = dev[0]
    kind = type(template).__name__
    names = [f.name for f in dataclasses.fields(template)] if _is_dataclass(template) else []
    refuse = (
        f"--format raw and tokenized need examples of one sentence; a {task} example holds "
        f"more ({kind}: {', '.join(names) or 'no fields'}): give the input in the task's own "
        "file format with --format task"
    )
    if "tokens" not in names or not _is_tokens(template.tokens):
        raise PredictError(refuse)
    sample = dev[:100]
    per_token = []
    for name in names:
        if name == "tokens":
            continue
        values = [(getattr(ex, name), len(ex.tokens)) for ex in sample]
        if all(_is_tokens(value) and len(value) == n for value, n in values):
            per_token.append(name)
        elif not all(v is None or isinstance(v, bool | int | float | str) for v, _ in values):
            raise PredictError(refuse)
    return per_token


def _is_dataclass(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _is_tokens(value: object) -> bool:
    """A tuple of strings (a token sequence, or one tag per token)."""
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def _most_common(values: Iterator[str] | Sequence[str]) -> str:
    """The most frequent value (the first seen among equals)."""
    counts = collections.Counter(values)
    if not counts:
        raise PredictError("the run's dev split has no token to take a placeholder tag from")
    return counts.most_common(1)[0][0]


def _task_examples(
    spec: RunSpec, recipe: TaskRecipe, path: Path, scratch: Path
) -> tuple[TaskRecipe, list[Any]]:
    """The input read by the task's reader as the dev split of the run's data (see the module
    docstring), and the recipe that read it.

    Raises:
        PredictError: the run's dev split is not a file or folder of its data, or the reader
            refuses the input (its message, naming the input).
    """
    from experiments.data.real_sets import data_path
    from tasks.registry import get_task

    task = get_task(spec.task)
    stats = recipe.read_stats.get("dev")
    source = stats.source if stats is not None else ""
    overrides = list(spec.overrides)
    named = [i for i, item in enumerate(overrides) if _same_file(item.partition("=")[2], source)]
    data = data_path(spec.data)
    stand_in = path
    if named:  # the configuration names the dev file: point it at the input
        key = overrides[named[0]].partition("=")[0]
        overrides[named[0]] = f"{key}={path.resolve()}"
    else:
        if data is not None and ":" in data.split("/", 1)[0]:
            raise PredictError(
                f"--format task: run {spec.run_id} read {data}, not a folder; give the input "
                "as --format tokenized or raw"
            )
        root = Path(data) if data is not None else task.demo()
        dev = _dev_paths(source, root)
        if not dev:
            raise PredictError(
                f"--format task: the run's dev split ({source or 'no source recorded'}) is "
                f"not a file or folder of its data {root}; give the input as --format "
                "tokenized or raw"
            )
        copy = scratch / "data"
        stand_in = _mirror(_absolute(root), dev, path, copy)
        data = str(copy)
    try:
        reader = task.setup(spec.preset, overrides, data)
    except (ValueError, KeyError, FileNotFoundError) as error:
        message = one_line(error).replace(str(stand_in), str(path))
        raise PredictError(f"--input (read as {spec.task}'s dev split): {message}") from None
    return reader, list(reader.splits["dev"])


def _same_file(value: str, source: str) -> bool:
    """Whether the override value ``value`` names the file ``source``."""
    if not value or not source:
        return False
    with contextlib.suppress(OSError, ValueError):
        return Path(value).resolve() == Path(source).resolve()
    return False


def _dev_paths(source: str, root: Path) -> list[Path]:
    """The files and folders a :class:`~tasks.common.io.ReadStats` ``source`` names (a path,
    ``a, b`` for several, ``FOLDER/`` or ``FOLDER/**/GLOB`` for a folder), resolved; ``[]``
    when one is not inside ``root`` (a held-out part of train, a Hub name)."""
    root = _absolute(root)
    found = []
    for part in source.split(", "):
        text = part.split("/**/", 1)[0]
        if not text:
            return []
        item = _absolute(Path(text))
        if not item.exists() or not item.is_relative_to(root) or item == root:
            return []
        found.append(item)
    return found


def _absolute(path: Path) -> Path:
    """``path`` made absolute and normalised (``..`` removed), links not followed."""
    return Path(os.path.abspath(path))


def _mirror(root: Path, dev: Sequence[Path], path: Path, copy: Path) -> Path:
    """A copy of the folder ``root`` (real folders, files linked) without the dev files and
    folders ``dev``, the input in place of the first: under its file name when it is a file,
    in an otherwise empty folder under the input's own name when it is a folder. Returns where
    the input was put."""
    first = dev[0]
    stand_in = copy / first.relative_to(root)
    if first.is_dir():
        stand_in = stand_in / path.name

    def build(folder: Path, into: Path) -> None:
        into.mkdir(parents=True, exist_ok=True)
        for entry in sorted(folder.iterdir()):
            if entry in dev:
                continue
            if entry.is_dir():
                build(entry, into / entry.name)
            else:
                _link(entry, into / entry.name)

    build(root, copy)
    stand_in.parent.mkdir(parents=True, exist_ok=True)
    _link(path, stand_in)
    return stand_in


def _link(source: Path, target: Path) -> None:
    """``target`` as a symbolic link to ``source`` (a copy where links are refused)."""
    try:
        target.symlink_to(source.resolve())
    except OSError:
        shutil.copyfile(source, target)


# ---------------------------------------------------------------------------------- the output
def _default_out(path: Path, run_id: str) -> Path:
    """``<input name>-predictions-<run_id>`` beside the input (dots replaced: the writer sets
    the suffix, which must not cut the input's name)."""
    return path.with_name(f"{path.name.replace('.', '-')}-predictions-{run_id}")


def _write(
    writer: TaskRecipe, predictions: Any, examples: Sequence[Any], out: Path, source: Path
) -> Path:
    """Write with the task's writer into a scratch folder beside ``out``, then move its files
    (a writer may add a gold file beside its predictions) next to ``out``.

    Raises:
        PredictError: a file written would replace the input.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".predict-", dir=out.parent) as scratch:
        written = writer.write_predictions(predictions, examples, Path(scratch) / out.name)
        files = sorted(Path(scratch).iterdir())
        clash = [f.name for f in files if (out.parent / f.name).resolve() == source.resolve()]
        if clash:
            raise PredictError(
                f"--out {out}: the task's writer would write {out.parent / clash[0]}, the input "
                "itself; choose another --out"
            )
        for file in files:
            os.replace(file, out.parent / file.name)
    return out.parent / written.name
