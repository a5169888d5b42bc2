"""SST-5 as a :class:`tasks.core.TaskSpec`: data → batches → BCN → root accuracy.

Data: ``--data DIR`` (SST tree files or JSON lines, :func:`tasks.sst5.data.find_files`; a folder is
never completed from the Hub), explicit files, or ``--data hf:NAME`` (``hf:SetFit/sst5``).
Without ``data_dir`` the recipe uses the bundled **DEMO** set (public-domain corpus sentences
whose every subtree is labelled by the VADER sentiment lexicon, ``tasks/sst5/demo.py``; not
SST): numbers on it only show that the pipeline learns and how representations compare on it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from bilm.scalar_mix import MixSpec
from tasks.common.io import ReadStats
from tasks.common.vocab import TokenIds, require_word_vectors, word_index, word_vectors
from tasks.core import (
    Forward,
    PresetElmo,
    RecipeBase,
    Represent,
    Split,
    TableRow,
    TaskSpec,
    UnitStatistics,
    batch_plan,
    configure,
)
from tasks.features.inject import Injector
from tasks.metrics.accuracy import ACCURACY, accuracy_from_totals, accuracy_statistics
from tasks.sst5.config import PRESETS, Sst5Config
from tasks.sst5.data import Layout, TextExample, find_files, load_splits, missing_files_error
from tasks.sst5.demo import NOTICE_FILE, ensure_demo
from tasks.sst5.evaluate import write_label_lines
from tasks.sst5.metric import label_accuracy, sst_accuracy
from tasks.sst5.model import BiattentiveClassificationNetwork, SstBatch
from tasks.sst5.peer import PEER
from tasks.sst5.synthetic import SYNTHETIC

logger = logging.getLogger(__name__)

VERSION = 2  # bump when reader, metric, model or a preset changes a number
# v1: BCN (paper: two ReLU output layers; maxout option), phrases >= 4 tokens, DEMO set v1;
#     a later change touched only the paper preset (ELMo input only, ELMo dropout 0.0, embedding
#     dropout 0.5 with ELMo, bucket_noise 0.1): its runs differ in sites, dropout and config
#     fingerprint, the mini preset's numbers are unchanged
# v2: the mini preset's output network is allennlp's maxout (its ReLU units died at lr 1e-3)
#     a later change touched only the paper preset (allennlp's maxout output network and Adam
#     1e-3, M. Peters' configuration of the paper's 54.7, instead of A.8's ReLU layers at 1e-4,
#     unverified):
#     its runs differ in the resolved configuration, the mini preset's numbers are unchanged

#: The splits whose words the vocabulary indexes: every split read (the word vectors are fixed,
#: so a dev/test word keeps its GloVe vector).
WORD_SPLITS: tuple[Split, ...] = ("train", "dev", "test")


@dataclass
class Sst5Recipe(RecipeBase):
    """Data, vocabulary and helpers for one configuration (a :class:`tasks.core.TaskRecipe`).

    Attributes:
        config: the configuration.
        splits: ``train`` (sentences and, for tree files, phrases), ``dev``, ``test`` (sentences).
        labels: label names in index order.
        layout: ``"trees"``, ``"jsonl"`` or ``"hub"`` (how the data was read; sets the scorer).
        files: split → the file read.
        read_stats: split → examples produced and skipped by reason.
        words: word → id.
        vectors: the fixed word vectors.
    """

    config: Sst5Config
    splits: dict[str, list[TextExample]]
    labels: tuple[str, ...]
    layout: Layout
    files: dict[str, str] = field(default_factory=dict)
    read_stats: dict[str, ReadStats] = field(default_factory=dict)
    words: dict[str, int] = field(default_factory=dict)
    vectors: torch.Tensor | None = None

    @property
    def training_data(self) -> dict[str, object]:
        """What the model trains on: the rule, sentence and phrase counts, skips (logged)."""
        train = self.splits["train"]
        roots = sum(ex.root for ex in train)
        phrases = self.config.train_subtrees and self.layout == "trees"
        return {
            "rule": self.config.training_data if phrases else "sentences (no trees)",
            "sentences": roots,
            "phrases": len(train) - roots,
            "skipped": dict(self.read_stats["train"].skipped) if "train" in self.read_stats else {},
        }

    def sequences(self, examples: Sequence[TextExample]) -> list[list[str]]:
        """The tokens of each text (a phrase is read on its own, as allennlp's subtrees)."""
        return [list(ex.tokens) for ex in examples]

    def size(self, example: TextExample) -> int:
        return len(example.tokens)

    @property
    def ids(self) -> TokenIds:
        return TokenIds(self.words, {}, self.config.lowercase_words, 1)

    def collate(self, examples: Sequence[TextExample], represent: Represent) -> SstBatch:
        """Padded word ids, mask, labels and representation layers."""
        tokens = [list(ex.tokens) for ex in examples]
        words, _, mask = self.ids.pad(tokens)
        labels = torch.tensor([ex.label for ex in examples], dtype=torch.long)
        return SstBatch(words, mask, labels, represent(tokens))

    def build_model(self, injector: Injector) -> nn.Module:
        assert self.vectors is not None
        return BiattentiveClassificationNetwork(
            self.config, self.vectors, len(self.labels), injector
        )

    def predict(
        self, forward: Forward, examples: Sequence[TextExample], represent: Represent
    ) -> list[int]:
        """Predicted label indices, in the order of ``examples``."""
        out = [0] * len(examples)
        plan = batch_plan([self.size(ex) for ex in examples], self.train_config, None)
        for indices in plan:  # the evaluation batching of tasks.core.iter_batches
            batch = self.collate([examples[i] for i in indices], represent)
            for i, label in zip(indices, forward(batch).predictions.tolist(), strict=True):
                out[i] = label
        return out

    def score(
        self, predictions: Sequence[int], examples: Sequence[TextExample]
    ) -> dict[str, float]:
        """Accuracy in natural units (0–1): for SST trees the root accuracies of
        ``python -m tasks.sst5.evaluate TREES.txt PRED.txt`` (:func:`sst_accuracy`: ``accuracy``
        = fine-grained, ``binary_accuracy``); otherwise the label accuracy of
        ``python -m tasks.sst5.evaluate GOLD.jsonl PRED.txt``."""
        if self.layout == "trees":
            result = sst_accuracy([ex.label for ex in examples], list(predictions))
            assert result.fine_grained_accuracy is not None
            return {
                "accuracy": result.fine_grained_accuracy,
                "binary_accuracy": result.binary_accuracy,
            }
        gold = [self.labels[ex.label] for ex in examples]
        return {"accuracy": label_accuracy(gold, [self.labels[p] for p in predictions])}

    def unit_statistics(
        self, predictions: Sequence[int], examples: Sequence[TextExample]
    ) -> UnitStatistics:
        """Per sentence ``(correct, 1)``, id = its line: accuracy = column sums ``c / n``
        (paired bootstrap tests)."""
        return accuracy_statistics(
            (str(ex.line) for ex in examples),
            (p == ex.label for p, ex in zip(predictions, examples, strict=True)),
        )

    def write_predictions(
        self, predictions: Sequence[int], examples: Sequence[TextExample], path: Path
    ) -> Path:
        """One label name per line, in example order (0–4 for SST trees)."""
        out = path.with_suffix(".txt")
        write_label_lines(out, (self.labels[p] for p in predictions))
        return out


def data_files(config: Sst5Config, folder: Path) -> list[Path]:
    """The files of the data folder ``folder`` that a run of ``config`` reads
    (:attr:`tasks.core.TaskSpec.data_files`): none where the configuration names its own files
    (``train_file`` ...: the folder is not read), else the split files of the folder's layout
    (:func:`tasks.sst5.data.find_files`), and the DEMO notice where the folder has one (it marks
    a DEMO set: its fingerprint has always held it).

    Raises:
        SstNotAvailable: the folder holds neither layout (naming the files it lacks).
    """
    if (config.train_file, config.dev_file, config.test_file) != (None, None, None):
        return []
    found = find_files(folder)
    if found is None:
        raise missing_files_error(folder)
    notice = folder / NOTICE_FILE
    return [*found[1].values(), *([notice] if notice.is_file() else [])]


def streams(config: Sst5Config) -> bool:
    """Whether a run with ``--limit`` may read only its first examples: everything the recipe
    derives from the data must then be what a full read gives for them. The vocabulary is the
    words read, but the word vectors are fixed (frozen in the model) and the labels are the
    trees' 0–4, so only random vectors (``random:N``, drawn per vocabulary row: the whole
    vocabulary decides each word's vector) need the whole files."""
    return not config.word_vectors.startswith("random:")


def setup(
    preset: str, overrides: Sequence[str], data_dir: str | None, limit: int | None = None
) -> Sst5Recipe:
    """Read data (the DEMO set when neither ``data_dir`` nor explicit files are given), build
    the vocabulary and word vectors.

    ``limit`` (``--limit``, :attr:`tasks.core.TaskSpec.setup_limited`): SST tree files are read
    only as far as the first ``limit`` examples of each split where the configuration
    :func:`streams` (JSON lines and the Hub are read whole: their label set is the training
    file's); the splits may still hold more, and the harness cuts them."""
    config = configure(PRESETS, preset, overrides)
    require_word_vectors(config.word_vectors)  # before reading data
    first = limit if streams(config) else None
    data = load_splits(config, data_dir, ensure_demo, first)
    recipe = Sst5Recipe(config, data.splits, data.labels, data.layout, data.files, data.stats)
    recipe.words = word_index(
        data.splits, lambda ex: ex.tokens, WORD_SPLITS, config.lowercase_words
    )
    recipe.vectors = word_vectors(config.word_vectors, list(recipe.words), config.lowercase_words)
    logger.info("SST-5 training data (%s): %s", data.layout, recipe.training_data)
    return recipe


TASK = TaskSpec(
    name="sst5",
    version=VERSION,
    metric=ACCURACY,
    configs=PRESETS,
    # source: M. Peters' BCN + ELMo config that reached the paper's 54.7 (allennlp a27afe0b,
    # "SST config with ELMo": use_input_elmo true, use_integrator_output_elmo false); A.8
    # (unverified) has input and output, as allennlp's v0.5.0 config (users got 51.4-53.2 with it)
    default_sites=frozenset({"input"}),
    default_mix=MixSpec("all", 0.001, False),  # source: paper A.8 (λ = 0.001, unverified)
    table_rows=(TableRow("SST-5", ACCURACY, "sst5"),),
    setup=setup,
    setup_limited=setup,
    data_files=data_files,
    demo=ensure_demo,
    paper_split="test",  # Table 1: the 2,210 test roots, 5 seeds
    table_split="test",  # the data has a labelled test split
    seeds=5,  # source: paper Table 1 (mean ± std over 5 seeds)
    # source: paper A.1 ("in most cases" a fine-tuned biLM; its perplexity table lists SST,
    # unverified: docs/reference/sst5.md)
    finetune_presets=frozenset({"paper"}),
    metric_from_totals=accuracy_from_totals,
    elmo_dropout=0.0,  # source: allennlp a27afe0b (Elmo "dropout": 0.0)
    # mini keeps allennlp's v0.5.0 BCN + ELMo placement (input and integrator output, Elmo
    # dropout 0.5), with which its DEMO numbers were measured
    preset_elmo={"mini": PresetElmo(frozenset({"input", "output"}), 0.5)},
    peer=PEER,  # allennlp-models' bcn (nox -s peer)
    data_help="a folder with the SST tree files train.txt, dev.txt, test.txt "
    '(trainDevTestTrees_PTB), or train.jsonl, dev.jsonl (or valid.jsonl), test.jsonl with {"text", '
    '"label"} per line; explicit files with --set train_file=... dev_file=... test_file=...; '
    "or hf:SetFit/sst5 (the Hugging Face Hub, sentences only)",
    title="SST-5 (BCN)",
    synthetic=SYNTHETIC,
)
