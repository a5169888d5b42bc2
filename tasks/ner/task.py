"""NER (and any CoNLL-column tagging) as a :class:`tasks.core.TaskSpec`: column files → batches →
biLSTM-CRF → conlleval F1.

Data: ``--data DIR`` in one of :data:`tasks.ner.data.ACCEPTED_LAYOUTS`: CoNLL-2003's ``eng.train``
/ ``eng.testa`` (dev) / ``eng.testb`` (test), CoNLL-2002's ``esp.*`` / ``ned.*``, ``train.txt`` /
``dev.txt`` / ``test.txt``, or ``train/`` / ``dev/`` / ``test/`` folders of ``*.tsv`` / ``*.conll``
/ ``*.txt`` column files (LitBank entities: the outermost layer), in any CoNLL column format (word
first; the tag column chosen with ``--set tag_column=N``); the test split is optional, a data set
without dev needs ``--set dev_from_train=N``. A folder is never completed from the Hub: only
``--data hf:NAME`` reads a Hugging Face dataset (``hf:conll2003``, ``hf:eriktks/conll2003``) when
online. What the reader detected is in each split's ``ReadStats.variant``. The tag scheme is
detected from the training file: chunk schemes (IOB1, IOB2, BIOUL; BIOES read as BIOUL) are
converted losslessly to BIOUL for the CRF and scored as chunk F1 by conlleval's rules; plain tags
(POS) are scored as conlleval ``-r`` does, each token a chunk, whose F1 equals the token
accuracy. Without ``data_dir`` the recipe uses the
bundled **DEMO** set (``tasks/ner/demo.py``; not CoNLL-2003).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch import nn

from bilm.scalar_mix import MixSpec
from tasks.common.io import ReadStats, require_package
from tasks.common.spans import Scheme, convert
from tasks.common.vocab import (
    TokenIds,
    char_vocabulary,
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
from tasks.ner.config import PRESETS, NerConfig
from tasks.ner.data import TaggedSentence, encode_splits, layout_files, load_splits, tag_labels
from tasks.ner.demo import NOTICE_FILE, ensure_demo
from tasks.ner.evaluate import write_tagged
from tasks.ner.metric import ConllevalResult, conlleval
from tasks.ner.model import CrfTagger, TaggerBatch
from tasks.ner.peer import PEER
from tasks.ner.synthetic import SYNTHETIC
from tasks.nn.crf import allowed_transitions

VERSION = 4  # bump when reader, metric, model or a preset changes a number
# v1: biLSTM-CRF (word + char CNN, 2 biLSTMs, BIOUL CRF with constrained Viterbi), any
#     CoNLL-column data with scheme detection, conlleval scoring, seqeval per-type F1, DEMO set
# v2: unit statistics keyed by the sentence's FILE:LINE instead of its position (stored v1 units
#     cannot be paired with v2 ones); no metric changes
# v3: allennlp's initialisation: words without a pre-trained vector start from
#     N(mean, std) of the found vectors instead of 0, character embeddings Xavier-uniform instead
#     of N(0, 1) (every preset); paper preset: 2 x 200 biLSTMs, element-wise dropout, batches
#     re-drawn every epoch (bucket_noise 0.1)
# v4: paper preset: batches of random instances every epoch (batching "shuffled", as
#     allennlp 0.5) instead of noisy length buckets; the char CNN encodes the real words alone in
#     training too (no char dropout): the same function, gradients differ in the last bits

#: The splits whose words the vocabulary indexes: every split read (allennlp's NER vocabulary
#: extends over its validation and test files; the words' GloVe vectors are fine-tuned).
WORD_SPLITS: tuple[Split, ...] = ("train", "dev", "test")


@dataclass
class NerRecipe(RecipeBase):
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
    def read_stats(self) -> dict[str, ReadStats]:
        """Split → read statistics of the splits read."""
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
        tags = pad_labels([ex.tags for ex in examples], label_index(self.labels))  # (b, t)
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
        raw = self.scheme is None
        counts = (
            conlleval([g], [p], raw=raw).overall for g, p in zip(gold, predicted, strict=True)
        )
        return span_statistics(unit_ids(examples), counts)

    def write_predictions(
        self,
        predictions: Sequence[Sequence[str]],
        examples: Sequence[TaggedSentence],
        path: Path,
    ) -> Path:
        """conlleval input ``WORD GOLD PREDICTED`` (score with ``python -m tasks.ner.evaluate``,
        adding ``-r`` for plain tags); whitespace inside a word (CoNLL-U and ``*.tsv`` words
        such as ``New York``) is written as ``_``, conlleval's fields being space-separated."""
        out = path.with_suffix(".txt")
        gold, predicted = self._scored_tags(predictions, examples)
        words = [["_".join(word.split()) for word in ex.tokens] for ex in examples]
        write_tagged(out, words, gold, predicted)
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
    tags as conlleval does (docs/reference/ner.md; strict IOB2 mode would drop IOB1 chunks)."""
    metrics = require_package("seqeval.metrics", "per-type NER reports need seqeval")
    report = metrics.classification_report(gold, predicted, output_dict=True, zero_division=0)
    skip = {"micro avg", "macro avg", "weighted avg"}
    return {f"f1_{name}": float(v["f1-score"]) for name, v in report.items() if name not in skip}


def data_files(config: NerConfig, folder: Path) -> list[Path]:
    """The files of the data folder ``folder`` that a run of ``config`` reads
    (:attr:`tasks.core.TaskSpec.data_files`): its layout's split files
    (:func:`tasks.ner.data.layout_files`), and the DEMO notice where the folder has one (it
    marks a DEMO set: its fingerprint has always held it).

    ``--limit`` reads every file whole (no :attr:`tasks.core.TaskSpec.setup_limited`): the tag
    set and scheme come from all the tags read, the character vocabulary from every training
    word, and words without a vector draw theirs at random before the model's initialisation,
    so a partial read would change a limited run's numbers.

    Raises:
        FileNotFoundError: no training split, or no dev split and no ``dev_from_train``.
        DataError: an ambiguous folder.
    """
    notice = folder / NOTICE_FILE
    return [*layout_files(config, folder), *([notice] if notice.is_file() else [])]


def setup(preset: str, overrides: Sequence[str], data_dir: str | None) -> NerRecipe:
    """Read data (demo set when ``data_dir`` is None), detect the scheme, build vocabularies."""
    config = configure(PRESETS, preset, overrides)
    require_word_vectors(config.word_vectors)
    raw, stats = load_splits(config, data_dir, ensure_demo)
    splits, scheme, encoding = encode_splits(raw, config, stats)
    labels = tag_labels(
        encoding, (t for sentences in splits.values() for ex in sentences for t in ex.tags)
    )
    recipe = NerRecipe(config, splits, scheme, encoding, labels, stats=stats)
    lower = config.lowercase_words
    recipe.words = word_index(splits, lambda ex: ex.tokens, WORD_SPLITS, lower)
    recipe.chars = char_vocabulary(tok for ex in splits["train"] for tok in ex.tokens)
    recipe.vectors = word_vectors(config.word_vectors, list(recipe.words), lower)
    return recipe


#: conlleval's F1, shown with two decimals as the paper's NER numbers (Table 1: 92.22).
NER_F1 = replace(F1, decimals=2)

TASK = TaskSpec(
    name="ner",
    version=VERSION,
    metric=NER_F1,
    configs=PRESETS,
    default_sites=frozenset({"input"}),  # source: paper §3.3/§4 and allennlp ner_elmo.jsonnet
    default_mix=MixSpec("all", 0.1, False),  # source: paper A.7 (unverified), allennlp alpha 0.1
    table_rows=(TableRow("NER", NER_F1, "ner"),),
    setup=setup,
    data_files=data_files,
    demo=ensure_demo,
    paper_split="test",  # CoNLL-2003 eng.testb, mean of 5 seeds
    table_split="test",  # the data has a labelled test split
    metric_from_totals=span_f1_from_totals,
    elmo_dropout=0.0,  # source: allennlp-models @b1f3722 ner_elmo.jsonnet (Elmo dropout 0.0)
    seeds=5,  # source: paper Table 1 (NER: mean ± std over 5 seeds)
    # source: paper A.1 ("in most cases" a fine-tuned biLM; its perplexity table lists CoNLL 2003,
    # unverified: docs/reference/ner.md)
    finetune_presets=frozenset({"paper"}),
    peer=PEER,  # allennlp-models' crf_tagger (nox -s peer)
    data_help="a folder with CoNLL-2003's eng.train, eng.testa (dev) and eng.testb (test), "
    "CoNLL-2002's esp.*/ned.*, train.txt / dev.txt / test.txt, or train/ dev/ test/ folders of "
    "*.tsv/*.conll/*.txt column files (test optional; --set tag_column=N, dev_from_train=N, "
    "layout=NAME); or hf:conll2003 when online",
    title="NER (biLSTM-CRF)",
    synthetic=SYNTHETIC,
)
