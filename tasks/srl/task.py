"""SRL as a :class:`tasks.core.TaskSpec`: CoNLL-2012 sentences → one instance per predicate →
He et al. (2017)'s tagger → propositions scored with srl-eval.pl semantics.

Without ``data_dir`` the recipe uses the bundled **DEMO** set (real public-domain sentences with
heuristic predicate-argument labels from ``tasks/srl/demo.py``; not OntoNotes): numbers on it only
show that the pipeline learns and how representations compare on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from bilm.scalar_mix import MixSpec
from tasks.common.conll2012 import Sentence
from tasks.common.io import ReadStats
from tasks.common.vocab import (
    TokenIds,
    label_index,
    pad_labels,
    require_word_vectors,
    word_index,
    word_vectors,
)
from tasks.core import (
    Forward,
    RecipeBase,
    Represent,
    Split,
    TableRow,
    TaskSpec,
    UnitStatistics,
    configure,
    iter_batches,
    unique_unit_ids,
)
from tasks.features.inject import Injector
from tasks.metrics.prf import F1, span_f1_from_totals, span_statistics
from tasks.srl.config import GLOVE_6B_100D, GLOVE_6B_URL, PRESETS, SrlConfig
from tasks.srl.data import LAYOUTS, SrlExample, folder_files, load_splits
from tasks.srl.demo import ensure_demo
from tasks.srl.evaluate import SentenceColumns, gold_columns, predicted_columns, props_sentences
from tasks.srl.metric import evaluate_props, write_props
from tasks.srl.model import SrlBatch, SrlTagger
from tasks.srl.peer import PEER
from tasks.srl.synthetic import SYNTHETIC

VERSION = 3  # bump when reader, metric, model or a preset changes a number
# v1: He et al. (2017) alternating highway biLSTM tagger, BIO-constrained Viterbi, srl-eval.pl
#     scoring of the regrouped propositions; DEMO set v1
# v2: unit statistics keyed by the sentence's DOCUMENT_PART:INDEX instead of its position (stored
#     v1 units cannot be paired with v2 ones); no metric changes
# v3: He et al.'s highway LSTM cell exactly (the highway output is the recurrent state, the gate
#     reads x_t and h_{t-1}, one recurrent-dropout mask per sequence); paper preset clips each
#     gradient value at 1.0 (no norm clipping) with bucket noise 0.1; the reader also takes
#     conll-formatted-ontonotes-5.0 (conll-2012-test/, *.gold_conll)

#: The splits whose words the vocabulary indexes: train and dev, not test (allennlp builds the
#: SRL vocabulary from its train and validation files; the word vectors are trained, and a test
#: word outside it is unknown).
WORD_SPLITS: tuple[Split, ...] = ("train", "dev")

#: Predictions of one split: ``(sentence_id, predicate_index)`` → IOB2 tags.
SrlPredictions = dict[tuple[int, int], tuple[str, ...]]


def require_srl_word_vectors(source: str) -> None:
    """Raise before any data is read when ``source`` is the paper's unresolved GloVe 6B 100-d.

    Raises:
        FileNotFoundError: naming the file to fetch and the flag that passes it.
    """
    if source == GLOVE_6B_100D:
        raise FileNotFoundError(
            "the SRL paper preset uses GloVe 6B 100-d (lowercased, trainable; allennlp "
            "srl.jsonnet): pass --glove PATH/glove.6B.100d.txt (unzip "
            f"{GLOVE_6B_URL}), or choose the embedded 6B 50-d substitute explicitly with "
            "--set word_vectors=glove"
        )
    require_word_vectors(source)


@dataclass
class SrlRecipe(RecipeBase):
    """Data, vocabularies and helpers for one configuration (a :class:`tasks.core.TaskRecipe`).

    Attributes:
        config: the configuration.
        splits: split → examples.
        sentences: split → every sentence in read order (the props files are written over them).
        words: word → id.
        labels: tag names; index = tag id (``O`` first, then sorted).
        vectors: initial word vectors.
        stats: split → read statistics (examples, counted skips).
    """

    config: SrlConfig
    splits: dict[str, list[SrlExample]]
    sentences: dict[str, list[Sentence]]
    words: dict[str, int] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    vectors: torch.Tensor | None = None
    stats: dict[str, ReadStats] = field(default_factory=dict)

    @property
    def read_stats(self) -> dict[str, ReadStats]:
        """Split → read statistics of the splits read."""
        return {s: self.stats[s] for s in self.splits if s in self.stats}

    @property
    def ids(self) -> TokenIds:
        """Word ids (no characters: the tagger has no character encoder)."""
        return TokenIds(self.words, {}, self.config.lowercase_words, max_word_chars=1)

    # -------------------------------------------------------------- tokens and batches
    def sequences(self, examples: Sequence[SrlExample]) -> list[list[str]]:
        """The sentence of each instance (the feature cache stores each sentence once)."""
        return [list(ex.tokens) for ex in examples]

    def size(self, example: SrlExample) -> int:
        return len(example.tokens)

    def collate(self, examples: Sequence[SrlExample], represent: Represent) -> SrlBatch:
        """Padded word ids, predicate indicators, gold tag ids and representation layers.

        A gold tag never seen in training (possible in dev/test) gets the id of ``O``; it only
        enters a loss, which evaluation does not use.
        """
        tokens = [list(ex.tokens) for ex in examples]
        words, _, mask = self.ids.pad(tokens)  # (b, t)
        predicates = torch.zeros_like(words)  # (b, t)
        for row, ex in enumerate(examples):
            predicates[row, ex.instance.predicate_index] = 1
        gold = [ex.instance.tags for ex in examples]
        tags = pad_labels(gold, label_index(self.labels), unknown=0)  # (b, t); 0 = "O"
        return SrlBatch(words, predicates, mask, tags, represent(tokens))

    # -------------------------------------------------------------- model and predictions
    def build_model(self, injector: Injector) -> nn.Module:
        assert self.vectors is not None
        return SrlTagger(self.config, self.vectors, self.labels, injector)

    def predict(
        self, forward: Forward, examples: Sequence[SrlExample], represent: Represent
    ) -> SrlPredictions:
        """Viterbi tags of every instance, keyed by ``(sentence_id, predicate_index)``."""
        predictions: SrlPredictions = {}
        for chunk, batch in iter_batches(self, examples, represent):
            for ex, ids in zip(chunk, forward(batch).decoded, strict=True):
                predictions[ex.key] = tuple(self.labels[i] for i in ids)
        return predictions

    def _split_of(self, examples: Sequence[SrlExample]) -> str:
        splits = {ex.split for ex in examples}
        if len(splits) != 1:
            raise ValueError(f"examples must come from one split, got {sorted(splits)}")
        return splits.pop()

    def _columns(
        self, predictions: Mapping[tuple[int, int], Sequence[str]], examples: Sequence[SrlExample]
    ) -> tuple[list[SentenceColumns], list[SentenceColumns]]:
        """Gold and predicted props columns over every sentence of the examples' split; the
        gold keeps only the propositions of ``examples`` (all of them for a whole split)."""
        split = self._split_of(examples)
        sentences = self.sentences[split]
        keys = {ex.key for ex in examples}
        gold = [
            (length, [c for c in columns if (sentence_id, c.position) in keys])
            for sentence_id, (length, columns) in enumerate(gold_columns(sentences))
        ]
        predicted = list(predicted_columns(sentences, predictions))
        return gold, predicted

    def score(
        self, predictions: Mapping[tuple[int, int], Sequence[str]], examples: Sequence[SrlExample]
    ) -> dict[str, float]:
        """srl-eval.pl precision / recall / F1 (natural units, 0–1; ``V`` excluded, ``C-``
        merged) of the regrouped propositions: :func:`tasks.srl.metric.evaluate_props`, the
        function ``python -m tasks.srl.evaluate`` runs on the files of
        :meth:`write_predictions`."""
        gold, predicted = self._columns(predictions, examples)
        report = evaluate_props(props_sentences(gold), props_sentences(predicted))
        return {
            "f1": report.f1 / 100,
            "precision": report.precision / 100,
            "recall": report.recall / 100,
            "perfect_propositions": report.perfect_percent / 100,
        }

    def unit_statistics(
        self, predictions: Mapping[tuple[int, int], Sequence[str]], examples: Sequence[SrlExample]
    ) -> UnitStatistics:
        """Per sentence srl-eval's ``(correct, predicted, gold)`` arguments: the counts add over
        sentences, so the bootstrap resamples sentences (all their propositions together).

        The units are every sentence of the examples' split (those :meth:`score` counts), with
        the ids of :func:`unit_ids` (``DOCUMENT_PART:INDEX``)."""
        gold, predicted = self._columns(predictions, examples)
        counts = (
            evaluate_props([g], [p]).overall
            for g, p in zip(props_sentences(gold), props_sentences(predicted), strict=True)
        )
        return span_statistics(unit_ids(self.sentences[self._split_of(examples)]), counts)

    def write_predictions(
        self,
        predictions: Mapping[tuple[int, int], Sequence[str]],
        examples: Sequence[SrlExample],
        path: Path,
    ) -> Path:
        """``<path>.props`` (predicted) and ``<path>.gold.props`` (gold of the same
        propositions), srl-eval.pl's props format; returns the predicted file.

        ``python -m tasks.srl.evaluate <path>.gold.props <path>.props`` gives :meth:`score`;
        for a whole split, ``--conll-gold <split folder>`` does too.
        """
        gold, predicted = self._columns(predictions, examples)
        out = path.with_suffix(".props")
        write_props(out, predicted)
        write_props(path.with_suffix(".gold.props"), gold)
        return out


def unit_ids(sentences: Sequence[Sentence]) -> tuple[str, ...]:
    """One stable id per sentence: ``DOCUMENT_PART:INDEX``, the CoNLL-2012 document id, its
    part number and the 0-based index of the sentence in the part, e.g.
    ``bc/cctv/00/cctv_0001_0:12`` (the document key as coreference writes it, then the
    sentence).

    A document part read twice (the same id in two files) repeats its ids: the repeats get
    ``#2``, ``#3`` … in read order (the first keeps the bare id), so the ids are unique and equal
    across runs on the same data.

    Args:
        sentences: every sentence of a split, in read order.

    Returns:
        One id per sentence, unique.
    """
    return unique_unit_ids([f"{s.document_id}_{s.part}:{s.index}" for s in sentences])


def data_files(config: SrlConfig, folder: Path) -> list[Path]:
    """The files of the data folder ``folder`` that a run reads
    (:attr:`tasks.core.TaskSpec.data_files`; :func:`tasks.srl.data.folder_files`).

    ``--limit`` reads every file whole (no :attr:`tasks.core.TaskSpec.setup_limited`): the
    label set comes from every training predicate's tags, so a partial read would change a
    limited run's model.

    Raises:
        SrlNotAvailable: no train or no dev folder (naming the folder and the layouts).
        DataError: an empty split folder or an ambiguous one.
    """
    return folder_files(folder)


def setup(preset: str, overrides: Sequence[str], data_dir: str | None) -> SrlRecipe:
    """Read the splits (DEMO set when ``data_dir`` is None), build vocabularies and vectors.

    ``test`` is read when its folder exists (the demo set and CoNLL-2012 have one, the PropBank
    sample has none); a missing train or dev folder is an error, never a Hub download
    (:func:`tasks.srl.data.load_splits`).
    """
    config = configure(PRESETS, preset, overrides)
    require_srl_word_vectors(config.word_vectors)  # before minutes of reading data
    folder = Path(data_dir) if data_dir else ensure_demo()
    sentences, instances, stats = load_splits(folder, config.max_length)
    splits = {
        split: [SrlExample(instance, split) for instance in split_instances]
        for split, split_instances in instances.items()
    }
    recipe = SrlRecipe(config, splits, sentences, stats=stats)
    lower = config.lowercase_words
    recipe.words = word_index(splits, lambda ex: ex.tokens, WORD_SPLITS, lower)
    tags = {tag for ex in splits["train"] for tag in ex.instance.tags}
    recipe.labels = ["O", *sorted(tags - {"O"})]
    recipe.vectors = word_vectors(config.word_vectors, list(recipe.words), lower)
    return recipe


TASK = TaskSpec(
    name="srl",
    version=VERSION,
    metric=F1,
    configs=PRESETS,
    default_sites=frozenset({"input"}),  # source: paper Table 3 (input only 84.7, best) and §5.2
    # source: paper Table 2 (λ = 0.001 best, 84.8) and allennlp srl_elmo.jsonnet (l2 1e-3 on the
    # scalar-mix weights), no layer norm
    default_mix=MixSpec("all", 0.001, False),
    table_rows=(TableRow("SRL", F1, "srl"),),
    setup=setup,
    data_files=data_files,
    demo=ensure_demo,
    paper_split="test",  # Table 1: CoNLL-2012 test (Pradhan et al. 2013 split)
    table_split="test",  # the data has a labelled test split
    metric_from_totals=span_f1_from_totals,
    # no finetune_presets: paper A.1 names CoNLL 2012 as the one set whose perplexity fine-tuning
    # hardly lowered (unverified: docs/reference/srl.md)
    elmo_dropout=0.1,  # source: allennlp-models @b1f3722 srl_elmo.jsonnet (ELMo dropout 0.1)
    data_help=LAYOUTS,
    peer=PEER,  # allennlp-models' srl with alternating_lstm (nox -s peer)
    title="SRL (He et al. deep biLSTM)",
    synthetic=SYNTHETIC,
)
