"""SNLI as a :class:`tasks.core.TaskSpec`: pairs → batches → ESIM → accuracy.

Data sources, in order (:func:`load_splits`):

1. explicit files (config ``train_file`` / ``dev_file`` / ``test_file``; relative names are
   resolved in ``--data DIR`` when one is given);
2. ``--data DIR`` holding ``snli_1.0_{train,dev,test}.jsonl`` (official SNLI; MultiNLI files in
   the same format work too) or ``{train,dev,test}.jsonl`` (official or plain
   ``{"premise", "hypothesis", "label"}`` records with any label set, taken from the training
   file); the test file is optional;
3. ``--data DIR`` without those files: ``stanfordnlp/snli`` through Hugging Face ``datasets``
   (a clear error when offline);
4. no ``--data``: the bundled **DEMO** set (``tasks/snli/demo.py``: real public-domain
   sentences with rule-made hypotheses; not SNLI). Numbers on it only show that the pipeline
   learns and how representations compare on it.

Model policy for unusable pairs (counted in ``recipe.skipped`` / ``recipe.truncated``, logged):
a training pair with an empty side (no tokens) or a side longer than ``max_tokens`` is skipped; a
dev/test side longer than ``max_tokens`` is cut (the pair is still predicted and scored); an empty
dev/test side is a :class:`~tasks.common.io.DataError` at its file and line (it cannot be
predicted, and skipping it would change the denominator).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from bilm.scalar_mix import MixSpec
from tasks.common.inject import Injector
from tasks.common.io import DataError, ReadStats
from tasks.common.overrides import apply_overrides
from tasks.common.vocab import TokenIds, index, require_word_vectors, word_vectors
from tasks.core import (
    Forward,
    MetricSpec,
    Represent,
    TableRow,
    TaskSpec,
    TrainConfig,
    UnitStatistics,
    accuracy_from_totals,
    iter_batches,
)
from tasks.snli.config import PRESETS, SnliConfig, preset
from tasks.snli.data import (
    HF_DATASET,
    LABELS,
    SKIP_NO_GOLD,
    SnliExample,
    SnliReader,
    load_hf,
    pair_reader,
    split_file,
    tokenize,
)
from tasks.snli.demo import ensure_demo
from tasks.snli.evaluate import write_predictions
from tasks.snli.metric import accuracy
from tasks.snli.model import ESIM, SnliBatch

logger = logging.getLogger(__name__)

VERSION = 2  # bump when reader, metric, model or a preset changes a number
# v1: ESIM (Chen et al. 2017) with ELMo at the encoder's input and output; official, plain and
#     Hugging Face data; the DEMO pair set generated from the public-domain corpus
# v2: mini preset: at most 8 epochs, early stopping after 2 evaluations without improvement

SKIP_EMPTY = "empty premise or hypothesis"
SKIP_LONG = "a side longer than max_tokens"


def pair_tokens(example: SnliExample) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The PTB tokens of the binary parses when present, else :func:`tasks.snli.data.tokenize`
    of the sentences (plain and Hugging Face examples carry tokens already)."""
    premise = example.premise_tokens
    hypothesis = example.hypothesis_tokens
    return (
        premise if premise is not None else tokenize(example.premise),
        hypothesis if hypothesis is not None else tokenize(example.hypothesis),
    )


@dataclass
class SnliRecipe:
    """Data, vocabulary and helpers for one configuration (a :class:`tasks.core.TaskRecipe`)."""

    config: SnliConfig
    splits: dict[str, list[SnliExample]]
    labels: tuple[str, ...] = LABELS
    words: dict[str, int] = field(default_factory=dict)
    vectors: torch.Tensor | None = None
    skipped: Counter[str] = field(default_factory=Counter)  # training pairs left out, by reason
    truncated: Counter[str] = field(default_factory=Counter)  # dev/test pairs cut, by split
    sources: dict[str, str] = field(default_factory=dict)  # split → file or Hub name
    read_stats: dict[str, ReadStats] = field(default_factory=dict)  # split → reading + policy

    @property
    def train_config(self) -> TrainConfig:
        return self.config.train

    # -------------------------------------------------------------- tokens
    def tokens(self, example: SnliExample) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Premise and hypothesis tokens as the model reads them (cut at ``max_tokens``)."""
        premise, hypothesis = pair_tokens(example)
        cut = self.config.max_tokens
        return premise[:cut], hypothesis[:cut]

    def sequences(self, examples: Sequence[SnliExample]) -> list[list[str]]:
        """Premise and hypothesis of each pair (the biLM reads each sentence on its own)."""
        out: list[list[str]] = []
        for ex in examples:
            premise, hypothesis = self.tokens(ex)
            out += [list(premise), list(hypothesis)]
        return out

    def size(self, example: SnliExample) -> int:
        """Premise + hypothesis tokens (batches group pairs of similar size)."""
        premise, hypothesis = self.tokens(example)
        return len(premise) + len(hypothesis)

    @property
    def ids(self) -> TokenIds:
        """Word ids of this configuration's vocabulary (no characters: ESIM reads words only)."""
        return TokenIds(self.words, {}, self.config.lowercase_words, 1)

    # -------------------------------------------------------------- batches
    def collate(self, examples: Sequence[SnliExample], represent: Represent) -> SnliBatch:
        """Padded premise and hypothesis ids, label ids, representation layers."""
        pairs = [self.tokens(ex) for ex in examples]
        premises = [p for p, _ in pairs]
        hypotheses = [h for _, h in pairs]
        pw, _, pm = self.ids.pad(premises)
        hw, _, hm = self.ids.pad(hypotheses)
        label_id = {label: i for i, label in enumerate(self.labels)}
        labels = None
        if all(ex.label in label_id for ex in examples):
            labels = torch.tensor([label_id[ex.label] for ex in examples], dtype=torch.long)
        return SnliBatch(
            pw,
            pm,
            hw,
            hm,
            labels,
            represent([list(p) for p in premises]),
            represent([list(h) for h in hypotheses]),
        )

    # -------------------------------------------------------------- model
    def build_model(self, injector: Injector) -> nn.Module:
        assert self.vectors is not None
        return ESIM(self.config, self.vectors, len(self.labels), injector)

    def predict(
        self, forward: Forward, examples: Sequence[SnliExample], represent: Represent
    ) -> dict[str, str]:
        """``{pair_id: predicted label}``."""
        out: dict[str, str] = {}
        for chunk, batch in iter_batches(self, examples, represent):
            for ex, label in zip(chunk, forward(batch).predictions.tolist(), strict=True):
                out[ex.pair_id] = self.labels[label]
        return out

    def score(
        self, predictions: Mapping[str, str], examples: Sequence[SnliExample]
    ) -> dict[str, float]:
        """Accuracy (0–1) over the labelled pairs, missing predictions wrong: the function
        behind ``python -m tasks.snli.evaluate`` (:func:`tasks.snli.metric.accuracy`)."""
        gold = {ex.pair_id: ex.label for ex in examples}
        scored = {k: v for k, v in predictions.items() if k in gold}
        return {"accuracy": accuracy(gold, scored).accuracy}

    def unit_statistics(
        self, predictions: Mapping[str, str], examples: Sequence[SnliExample]
    ) -> UnitStatistics:
        """Per labelled pair ``(correct, 1)`` (a missing prediction is wrong), id = pairID."""
        rows = tuple((float(predictions.get(ex.pair_id) == ex.label), 1.0) for ex in examples)
        return UnitStatistics(tuple(ex.pair_id for ex in examples), rows)

    def write_predictions(
        self, predictions: Mapping[str, str], examples: Sequence[SnliExample], path: Path
    ) -> Path:
        """``{"pairID", "label"}`` JSON lines in the order of ``examples``: the file
        ``python -m tasks.snli.evaluate DATA PRED`` scores."""
        out = path.with_suffix(".jsonl")
        items = [
            (ex.pair_id, predictions[ex.pair_id]) for ex in examples if ex.pair_id in predictions
        ]
        write_predictions(out, items, self.labels)
        return out


# ------------------------------------------------------------------------------------ data
def _resolve(name: str, data_dir: str | None) -> Path:
    path = Path(name)
    if not path.is_absolute() and data_dir is not None and not path.exists():
        path = Path(data_dir) / name
    if not path.is_file():
        raise DataError(path, None, "no such file")
    return path


def load_splits(
    config: SnliConfig, data_dir: str | None, stats: dict[str, ReadStats] | None = None
) -> tuple[dict[str, list[SnliExample]], tuple[str, ...], dict[str, str]]:
    """Read train, dev and (when present) test; see the module docstring for the sources.

    Args:
        config: the configuration (explicit files).
        data_dir: ``--data DIR``, or None.
        stats: when given, filled with each split's read statistics (pairs read, pairs without
            a gold label skipped, the source).

    Returns:
        ``(splits, labels, sources)``: the labelled examples, the label set (the three SNLI
        labels for official files; plain files: the training file's labels in order of first
        appearance) and where each split came from.

    Raises:
        DataError: a file is missing or malformed, or a dev/test label is outside the label set.
        SnliNotAvailable: no local files and no Hugging Face Hub.
    """
    explicit = {"train": config.train_file, "dev": config.dev_file, "test": config.test_file}
    folder = Path(data_dir) if data_dir else (None if config.train_file else ensure_demo())
    files: dict[str, Path] = {}
    for split, name in explicit.items():
        if name is not None:
            files[split] = _resolve(name, data_dir)
        elif folder is not None and (found := split_file(folder, split)) is not None:
            files[split] = found
    if "train" not in files or "dev" not in files:
        if data_dir is None:
            raise ValueError("train_file and dev_file must both be given (or --data DIR)")
        logger.warning(
            "no train/dev files in %s; trying the Hugging Face Hub (%s)", data_dir, HF_DATASET
        )
        splits: dict[str, list[SnliExample]] = {}
        for split in ("train", "dev", "test"):
            splits[split], unlabeled = load_hf(split)
            if stats is not None:
                hub = ReadStats(len(splits[split]), source=f"hf:{HF_DATASET}[{split}]")
                hub.skipped[SKIP_NO_GOLD] += unlabeled
                stats[split] = hub
            logger.info(
                "%s %s: %d pairs without a gold label skipped", HF_DATASET, split, unlabeled
            )
        return splits, LABELS, {s: f"hf:{HF_DATASET}" for s in splits}
    train_reader = pair_reader(files["train"])
    train = list(train_reader)
    readers = {"train": train_reader}
    labels = (
        LABELS
        if isinstance(train_reader, SnliReader)
        else tuple(dict.fromkeys(ex.label for ex in train))
    )
    splits = {"train": train}
    for split in ("dev", "test"):
        if split in files:
            readers[split] = pair_reader(files[split], labels)
            splits[split] = list(readers[split])
    if stats is not None:
        for split, reader in readers.items():
            stats[split] = reader.stats
            stats[split].source = str(files[split])
    for split, path in files.items():
        logger.info("%s: %s, %d labelled pairs", split, path, len(splits[split]))
    return splits, labels, {s: str(p) for s, p in files.items()}


def apply_policy(
    splits: dict[str, list[SnliExample]], config: SnliConfig, sources: Mapping[str, str]
) -> tuple[dict[str, list[SnliExample]], Counter[str], Counter[str]]:
    """The model's policy for empty and over-long pairs (module docstring).

    Returns:
        ``(splits, skipped, truncated)``: training pairs left out by reason, dev/test pairs cut
        by split.

    Raises:
        DataError: an empty premise or hypothesis in dev or test (file and line).
    """
    skipped: Counter[str] = Counter()
    truncated: Counter[str] = Counter()
    out: dict[str, list[SnliExample]] = {}
    for split, examples in splits.items():
        kept = []
        for ex in examples:
            premise, hypothesis = pair_tokens(ex)
            empty = not premise or not hypothesis
            long = max(len(premise), len(hypothesis)) > config.max_tokens
            if split == "train" and (empty or long):
                skipped[SKIP_EMPTY if empty else SKIP_LONG] += 1
                continue
            if empty:
                side = "premise" if not premise else "hypothesis"
                raise DataError(
                    sources.get(split, split), ex.line, f"pair {ex.pair_id!r}: empty {side}"
                )
            truncated[split] += long
            kept.append(ex)
        out[split] = kept
    for reason, n in skipped.items():
        logger.warning("train: %d pairs skipped (%s)", n, reason)
    for split, n in truncated.items():
        if n:
            logger.warning("%s: %d pairs cut to max_tokens=%d", split, n, config.max_tokens)
    return out, skipped, truncated


def configure(preset_name: str, overrides: Sequence[str]) -> SnliConfig:
    """The preset's configuration with ``overrides`` applied and validated; reads no data
    (:attr:`tasks.core.TaskSpec.configure`: the command line checks ``--set`` with it).

    Raises:
        ValueError: an unknown preset, override key or a bad value.
    """
    return apply_overrides(preset(preset_name), overrides)


def setup(preset_name: str, overrides: Sequence[str], data_dir: str | None) -> SnliRecipe:
    """Read data (DEMO set when ``data_dir`` is None and no files are given), apply the pair
    policy, build the vocabulary and the fixed word vectors."""
    config = configure(preset_name, overrides)
    require_word_vectors(config.word_vectors)  # before minutes of reading data
    stats: dict[str, ReadStats] = {}
    splits, labels, sources = load_splits(config, data_dir, stats)
    splits, skipped, truncated = apply_policy(splits, config, sources)
    recipe = SnliRecipe(config, splits, labels, skipped=skipped, truncated=truncated)
    recipe.sources = sources
    if "train" in stats:  # the policy's training skips join the reader's
        stats["train"].examples = len(splits["train"])
        for reason, n in skipped.items():
            stats["train"].skipped[reason] += n
            if reason == SKIP_LONG:
                stats["train"].exempt.add(reason)  # a configured filter (max_tokens)
    recipe.read_stats = stats
    recipe.words = index(
        tok.lower() if config.lowercase_words else tok
        for examples in splits.values()
        for ex in examples
        for side in recipe.tokens(ex)
        for tok in side
    )
    recipe.vectors = word_vectors(config.word_vectors, list(recipe.words), config.lowercase_words)
    return recipe


ACCURACY = MetricSpec("accuracy", label="accuracy", higher_is_better=True, scale=100.0, decimals=1)

TASK = TaskSpec(
    name="snli",
    version=VERSION,
    metric=ACCURACY,
    presets=PRESETS,
    # source: paper §5.2 / Table 3 (input & output best for SNLI) and A.3 [R]
    default_sites=frozenset({"input", "output"}),
    # source: paper A.3 [R] (λ = 0.001 with layer normalisation for SNLI; Table 2 "λ=0.001")
    default_mix=MixSpec("all", 0.001, True),
    table_rows=(TableRow("SNLI", ACCURACY, "snli"),),
    setup=setup,  # type: ignore[arg-type]
    configure=configure,
    demo=ensure_demo,
    paper_split="test",  # Table 1: SNLI test accuracy (9,824 labelled pairs)
    table_split="test",  # the data has a labelled test split
    metric_from_totals=accuracy_from_totals,
    seeds=5,  # source: paper Table 1 (SNLI 88.7 ± 0.17: mean ± std over five seeds)
    data_help="a folder with snli_1.0_{train,dev,test}.jsonl (official SNLI 1.0) or "
    '{train,dev,test}.jsonl (official records, or {"premise", "hypothesis", "label"} per line '
    "with any label set); without them stanfordnlp/snli is read through Hugging Face datasets",
)
