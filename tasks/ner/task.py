"""NER (and any CoNLL-column tagging) as a :class:`tasks.core.TaskSpec`: column files → batches →
biLSTM-CRF → conlleval F1.

Data: ``--data DIR`` with CoNLL-2003's ``eng.train`` / ``eng.testa`` (dev) / ``eng.testb`` (test),
or ``train.txt`` / ``dev.txt`` / ``test.txt`` in any CoNLL column format (word first; the tag
column chosen with ``--set tag_column=N``); ``--data hf:NAME`` reads a Hugging Face dataset
(``hf:conll2003``, ``hf:eriktks/conll2003``) when online. The tag scheme is detected from the
training file: chunk schemes (IOB1, IOB2, BIOUL) are converted losslessly to BIOUL for the CRF and
scored as chunk F1 by conlleval's rules; plain tags (POS) are scored as conlleval ``-r`` does,
each token a chunk, whose F1 equals the token accuracy. Without ``data_dir`` the recipe uses the
bundled **DEMO** set (``tasks/ner/demo.py``; not CoNLL-2003).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from bilm.scalar_mix import MixSpec
from tasks.common.crf import allowed_transitions
from tasks.common.inject import Injector
from tasks.common.io import ReadStats, require_package
from tasks.common.overrides import apply_overrides
from tasks.common.spans import Scheme, convert
from tasks.common.vocab import TokenIds, char_vocabulary, index, require_word_vectors, word_vectors
from tasks.core import (
    Forward,
    MetricSpec,
    Represent,
    TableRow,
    TaskSpec,
    TrainConfig,
    UnitStatistics,
    iter_batches,
    span_f1_from_totals,
    unique_unit_ids,
)
from tasks.ner.config import PRESETS, NerConfig, preset
from tasks.ner.data import (
    TaggedSentence,
    check_tags,
    data_files,
    detect_scheme,
    load_hf_tagging,
    read_columns,
)
from tasks.ner.demo import ensure_demo
from tasks.ner.evaluate import write_tagged
from tasks.ner.metric import ConllevalResult, conlleval
from tasks.ner.model import CrfTagger, TaggerBatch

VERSION = 2  # bump when reader, metric, model or a preset changes a number
# v1: biLSTM-CRF (word + char CNN, 2 biLSTMs, BIOUL CRF with constrained Viterbi), any
#     CoNLL-column data with scheme detection, conlleval scoring, seqeval per-type F1, DEMO set
# v2: unit statistics keyed by the sentence's FILE:LINE instead of its position (stored v1 units
#     cannot be paired with v2 ones); no metric changes


@dataclass
class NerRecipe:
    """Data, label set and vocabularies for one configuration (a :class:`tasks.core.TaskRecipe`).

    Attributes:
        config: the configuration.
        splits: split → sentences, tags in ``encoding``.
        scheme: the data's own tag scheme (``None``: plain tags).
        encoding: the CRF's label encoding (BIOUL for chunk data unless ``label_encoding=source``).
        labels: label strings in id order.
        stats: per split, sentences read and skipped (also :attr:`read_stats`).
    """

    config: NerConfig
    splits: dict[str, list[TaggedSentence]]
    scheme: Scheme | None
    encoding: Scheme | None
    labels: list[str]
    words: dict[str, int] = field(default_factory=dict)
    chars: dict[str, int] = field(default_factory=dict)
    vectors: torch.Tensor | None = None
    stats: dict[str, ReadStats] = field(default_factory=dict)

    @property
    def train_config(self) -> TrainConfig:
        return self.config.train

    @property
    def read_stats(self) -> dict[str, ReadStats]:
        """Split → read statistics (optional member of :class:`tasks.core.TaskRecipe`)."""
        return {s: self.stats[s] for s in self.splits if s in self.stats}

    @property
    def output_scheme(self) -> Scheme | None:
        """The scheme the scorer and the prediction files use: the data's IOB1/IOB2 (BIOUL data
        are written as IOB2: conlleval has no rule for ``L-``/``U-``); ``None`` for plain tags."""
        if self.scheme is None:
            return None
        return "IOB2" if self.scheme == "BIOUL" else self.scheme

    def sequences(self, examples: Sequence[TaggedSentence]) -> list[list[str]]:
        return [list(ex.tokens) for ex in examples]

    def size(self, example: TaggedSentence) -> int:
        return len(example.tokens)

    @property
    def ids(self) -> TokenIds:
        """Word and character ids of this configuration's vocabularies."""
        return TokenIds(
            self.words, self.chars, self.config.lowercase_words, self.config.max_word_chars
        )

    def collate(self, examples: Sequence[TaggedSentence], represent: Represent) -> TaggerBatch:
        """Padded word / char ids, gold label ids (0 at pads) and representation layers."""
        tokens = [ex.tokens for ex in examples]
        words, chars, mask = self.ids.pad(tokens)
        label_id = {label: i for i, label in enumerate(self.labels)}
        tags = torch.zeros_like(words)  # (b, t)
        for row, ex in enumerate(examples):
            tags[row, : len(ex.tags)] = torch.tensor([label_id[t] for t in ex.tags])
        return TaggerBatch(words, chars, mask, tags, represent([list(t) for t in tokens]))

    def build_model(self, injector: Injector) -> nn.Module:
        assert self.vectors is not None
        allowed = allowed_transitions(self.labels, self.encoding)
        return CrfTagger(self.config, self.vectors, len(self.chars) + 2, allowed, injector)

    def predict(
        self, forward: Forward, examples: Sequence[TaggedSentence], represent: Represent
    ) -> list[list[str]]:
        """Decoded tags (in ``encoding``) of every sentence, in the order of ``examples``."""
        position = {id(ex): i for i, ex in enumerate(examples)}
        out: list[list[str]] = [[] for _ in examples]
        for chunk, batch in iter_batches(self, examples, represent):
            for ex, path in zip(chunk, forward(batch).paths, strict=True):
                out[position[id(ex)]] = [self.labels[i] for i in path]
        return out

    def _scored_tags(
        self, predictions: Sequence[Sequence[str]], examples: Sequence[TaggedSentence]
    ) -> tuple[list[list[str]], list[list[str]]]:
        """Gold and predicted tags in the output scheme (as written and scored)."""
        target, source = self.output_scheme, self.encoding
        if target is None or source is None:
            return [list(ex.tags) for ex in examples], [list(p) for p in predictions]
        gold = [convert(ex.tags, source, target) for ex in examples]
        return gold, [convert(p, source, target) for p in predictions]

    def score(
        self, predictions: Sequence[Sequence[str]], examples: Sequence[TaggedSentence]
    ) -> dict[str, float]:
        """conlleval's precision, recall, F1 and token accuracy (fractions), the scoring of
        ``python -m tasks.ner.evaluate`` on the written file (``-r`` for plain tags), plus
        seqeval's per-type F1 (``f1_TYPE``, default conlleval-compatible mode) for chunk data."""
        gold, predicted = self._scored_tags(predictions, examples)
        result = conlleval(gold, predicted, raw=self.scheme is None)
        scores = official_scores(result)
        if self.scheme is not None:
            scores.update(seqeval_per_type(gold, predicted))
        return scores

    def unit_statistics(
        self, predictions: Sequence[Sequence[str]], examples: Sequence[TaggedSentence]
    ) -> UnitStatistics:
        """Per sentence conlleval's ``(correct, predicted, gold)`` chunks (tokens with ``-r``
        for plain tags): chunk counts add over sentences, so the bootstrap resamples sentences.
        Unit ids: :func:`unit_ids` (``FILE:LINE`` of each sentence's first word)."""
        gold, predicted = self._scored_tags(predictions, examples)
        rows = []
        for g, p in zip(gold, predicted, strict=True):
            overall = conlleval([g], [p], raw=self.scheme is None).overall
            rows.append((float(overall.correct), float(overall.predicted), float(overall.gold)))
        return UnitStatistics(unit_ids(examples), tuple(rows))

    def write_predictions(
        self,
        predictions: Sequence[Sequence[str]],
        examples: Sequence[TaggedSentence],
        path: Path,
    ) -> Path:
        """conlleval input ``WORD GOLD PREDICTED`` (score with ``python -m tasks.ner.evaluate``,
        adding ``-r`` for plain tags)."""
        out = path.with_suffix(".txt")
        gold, predicted = self._scored_tags(predictions, examples)
        write_tagged(out, [ex.tokens for ex in examples], gold, predicted)
        return out


def unit_ids(examples: Sequence[TaggedSentence]) -> tuple[str, ...]:
    """One stable id per sentence: ``FILE:LINE``, the file's name (not its folder, so copies of
    the data in other places pair) and the 1-based line of the sentence's first word, e.g.
    ``eng.testa:1027``; Hugging Face rows: ``NAME:ROW`` (1-based row number).

    Sentences sharing a location (e.g. built in code without one: line 0) repeat an id: the
    first keeps it and the repeats get ``#2``, ``#3`` … in order, so the ids are unique and
    equal across runs on the same data.

    Args:
        examples: the scored sentences, in order.

    Returns:
        One id per sentence, unique.
    """
    return unique_unit_ids([f"{Path(ex.path).name}:{ex.line}" for ex in examples])


def official_scores(result: ConllevalResult) -> dict[str, float]:
    """conlleval's overall numbers as fractions (the evaluator prints them in percent)."""
    precision, recall, f1 = result.overall.scores()
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": result.accuracy / 100,
    }


def seqeval_per_type(gold: list[list[str]], predicted: list[list[str]]) -> dict[str, float]:
    """seqeval's per-type F1 (fractions, keys ``f1_TYPE``) in its default mode, which reads IOB
    tags as conlleval does (TASKS_SPEC §3.5; strict IOB2 mode would drop IOB1 chunks)."""
    metrics = require_package("seqeval.metrics", "per-type NER reports need seqeval")
    report = metrics.classification_report(gold, predicted, output_dict=True, zero_division=0)
    skip = {"micro avg", "macro avg", "weighted avg"}
    return {f"f1_{name}": float(v["f1-score"]) for name, v in report.items() if name not in skip}


def _read(config: NerConfig, data_dir: str | None) -> tuple[dict[str, list[TaggedSentence]], dict]:
    """Sentences per split with the file's tags, and the read statistics."""
    stats: dict[str, ReadStats] = {}
    if data_dir is not None and data_dir.startswith("hf:"):
        splits = load_hf_tagging(data_dir[3:], config.hf_tag_feature)
        for split, sentences in splits.items():
            stats[split] = ReadStats(len(sentences), source=f"{data_dir}[{split}]")
    else:
        folder = Path(data_dir) if data_dir else ensure_demo()
        splits = {}
        for split, path in data_files(folder).items():
            stats[split] = ReadStats(source=str(path))
            splits[split] = list(
                read_columns(
                    path,
                    config.tag_column,
                    max_tokens=config.max_sentence_tokens,
                    skip_long=split == "train",
                    stats=stats[split],
                )
            )
    n = config.dev_from_train
    if n > 0:
        if n >= len(splits["train"]):
            raise ValueError(f"dev_from_train={n} leaves no training sentence")
        splits["train"], splits["dev"] = splits["train"][:-n], splits["train"][-n:]
        if "train" in stats:
            stats["train"].examples -= n
            stats["dev"] = ReadStats(n, source=f"{stats['train'].source} (last {n} sentences)")
    if "dev" not in splits:
        raise FileNotFoundError(
            f"{data_dir}: no dev file (eng.testa or dev.txt); hold out the last N training "
            "sentences with --set dev_from_train=N"
        )
    return splits, stats


def _labels(scheme: Scheme | None, tags: set[str]) -> list[str]:
    """Label strings in id order: ``O`` first, then every prefix of the encoding for each chunk
    type seen (so any valid sequence can be decoded); plain tags sorted."""
    if scheme is None:
        return sorted(tags)
    prefixes = "BILU" if scheme == "BIOUL" else "BI"
    types = sorted({t.split("-", 1)[1] for t in tags if t != "O"})
    return ["O", *(f"{p}-{t}" for t in types for p in prefixes)]


def configure(preset_name: str, overrides: Sequence[str]) -> NerConfig:
    """The preset's configuration with ``overrides`` applied and validated; reads no data
    (:attr:`tasks.core.TaskSpec.configure`: the command line checks ``--set`` with it).

    Raises:
        ValueError: an unknown preset, override key or a bad value.
    """
    return apply_overrides(preset(preset_name), overrides)


def setup(preset_name: str, overrides: Sequence[str], data_dir: str | None) -> NerRecipe:
    """Read data (demo set when ``data_dir`` is None), detect the scheme, build vocabularies."""
    config = configure(preset_name, overrides)
    require_word_vectors(config.word_vectors)
    raw, stats = _read(config, data_dir)
    if config.tag_scheme == "auto":
        scheme = detect_scheme(ex.tags for ex in raw["train"])
    else:
        scheme = None if config.tag_scheme == "none" else config.tag_scheme
    for sentences in raw.values():
        check_tags(sentences, scheme)
    encoding: Scheme | None = scheme
    if scheme is not None and config.label_encoding == "BIOUL":
        encoding = "BIOUL"
    splits = raw
    if scheme is not None and encoding != scheme:
        splits = {
            s: [
                TaggedSentence(
                    ex.tokens, tuple(convert(ex.tags, scheme, encoding)), ex.line, ex.path
                )
                for ex in sentences
            ]
            for s, sentences in raw.items()
        }
    labels = _labels(
        encoding, {t for sentences in splits.values() for ex in sentences for t in ex.tags}
    )
    recipe = NerRecipe(config, splits, scheme, encoding, labels, stats=stats)
    fold = str.lower if config.lowercase_words else str
    recipe.words = index(
        fold(tok) for sentences in splits.values() for ex in sentences for tok in ex.tokens
    )
    recipe.chars = char_vocabulary(tok for ex in splits["train"] for tok in ex.tokens)
    recipe.vectors = word_vectors(config.word_vectors, list(recipe.words), config.lowercase_words)
    return recipe


F1 = MetricSpec("f1", label="F1", higher_is_better=True, scale=100.0, decimals=2)

TASK = TaskSpec(
    name="ner",
    version=VERSION,
    metric=F1,
    presets=PRESETS,
    default_sites=frozenset({"input"}),  # source: paper §3.3/§4 and allennlp ner_elmo.jsonnet
    default_mix=MixSpec("all", 0.1, False),  # source: paper A.7 [R], allennlp alpha 0.1
    table_rows=(TableRow("NER", F1, "ner"),),
    setup=setup,  # type: ignore[arg-type]
    configure=configure,
    demo=ensure_demo,
    paper_split="test",  # CoNLL-2003 eng.testb, mean of 5 seeds
    table_split="test",  # the data has a labelled test split
    metric_from_totals=span_f1_from_totals,
    elmo_dropout=0.0,  # source: allennlp ner_elmo.jsonnet (Elmo dropout 0.0), TASKS_SPEC §3.5
    seeds=5,  # source: paper Table 1 (NER: mean ± std over 5 seeds)
    data_help="a folder with CoNLL-2003's eng.train, eng.testa (dev) and eng.testb (test), or "
    "train.txt / dev.txt / test.txt column files (--set tag_column=N, dev_from_train=N); or "
    "hf:conll2003 when online",
)
