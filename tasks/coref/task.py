"""Coreference as a :class:`tasks.core.TaskSpec`: documents → one batch each → Lee et al. (2017)'s
span-ranking model → response file → MUC, B³, CEAF-e and the CoNLL F1 (reference scorer v8.01).

Without ``data_dir`` the recipe uses the bundled **DEMO** set (public-domain novels, the Bible and
US addresses with heuristic name/pronoun chains, ``tasks/coref/demo.py``; not OntoNotes): numbers
on it only show that the pipeline learns and how representations compare on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from bilm.scalar_mix import MixSpec
from tasks.common.io import ReadStats
from tasks.common.vocab import (
    TokenIds,
    char_vocabulary,
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
)
from tasks.coref.config import PRESETS, TURIAN_50D, TURIAN_URL, CorefConfig
from tasks.coref.data import GENRES, CorefDocument, folder_files, load_splits
from tasks.coref.demo import ensure_demo
from tasks.coref.evaluate import write_document_response
from tasks.coref.metric import (
    BCUB_F1,
    CEAFE_F1,
    CONLL_F1,
    MUC_F1,
    conll_f1_from_totals,
    score_corpus,
    score_document,
)
from tasks.coref.model import CorefBatch, SpanRankingCoref, clusters_from_antecedents
from tasks.coref.peer import PEER
from tasks.coref.synthetic import SYNTHETIC
from tasks.features.inject import Injector
from tasks.representations import Layers

VERSION = 2  # bump when reader, metric, model or a preset changes a number
# v1: Lee et al. (2017) span ranking (e2e-coref `best`), DEMO set v1 from the public-domain corpus
# v2: the context biLSTM is Lee et al.'s CustomLSTMCell (coupled gates, learned initial state,
#     recurrent dropout fixed over time, block-orthonormal recurrent weights) instead of nn.LSTM


#: The splits whose words the vocabulary indexes: every split read (the word vectors are fixed,
#: so a dev/test word keeps its GloVe vector).
WORD_SPLITS: tuple[Split, ...] = ("train", "dev", "test")

Clusters = list[list[tuple[int, int]]]
Predictions = dict[tuple[str, int], Clusters]


def require_turian(source: str) -> None:
    """Raise before any data is read when the paper's Turian vectors were not given.

    Raises:
        FileNotFoundError: naming the file and the flag that passes it.
    """
    if source == TURIAN_50D:
        raise FileNotFoundError(
            "the coreference paper preset uses Turian et al. (2010) 50-d vectors next to GloVe "
            "(e2e-coref `best`: turian.50d.txt): pass --turian PATH/turian.50d.txt (a text file, "
            f"one word and 50 numbers per line, e.g. gunzipped from {TURIAN_URL}), i.e. "
            "--set turian_vectors=PATH, or leave them out explicitly with --set turian_vectors="
        )


@dataclass
class CorefRecipe(RecipeBase):
    """Data, vocabularies and helpers for one configuration (a :class:`tasks.core.TaskRecipe`)."""

    config: CorefConfig
    splits: dict[str, list[CorefDocument]]
    words: dict[str, int] = field(default_factory=dict)
    chars: dict[str, int] = field(default_factory=dict)
    vectors: list[torch.Tensor] = field(default_factory=list)
    stats: dict[str, ReadStats] = field(default_factory=dict)

    @property
    def read_stats(self) -> dict[str, ReadStats]:
        """Split → read statistics of the splits read."""
        return {s: self.stats[s] for s in self.splits if s in self.stats}

    @property
    def ids(self) -> TokenIds:
        """Word and character ids of this configuration's vocabularies."""
        return TokenIds(
            self.words, self.chars, self.config.lowercase_words, self.config.max_word_chars
        )

    def sequences(self, examples: Sequence[CorefDocument]) -> list[list[str]]:
        """Every sentence, as e2e-coref's ``cache_elmo.py`` runs the biLM; with
        ``document_as_one_sequence`` every document's tokens as one sequence instead."""
        if self.config.document_as_one_sequence:
            return [_tokens(doc.sentences) for doc in examples]
        return [list(words) for doc in examples for words in doc.sentences]

    def size(self, example: CorefDocument) -> int:
        """Tokens in the document."""
        return example.num_tokens

    def collate(self, examples: Sequence[CorefDocument], represent: Represent) -> CorefBatch:
        """One document: padded sentences, speaker and genre ids, gold mentions, layers."""
        if len(examples) != 1:
            raise ValueError(f"coreference batches hold one document, got {len(examples)}")
        doc = examples[0]
        sentences = [list(words) for words in doc.sentences]
        words, chars, mask = self.ids.pad(sentences)  # (n, t), (n, t, c), (n, t)
        speaker_ids: dict[str, int] = {}
        speakers = torch.zeros_like(words)  # (n, t)
        for i, row in enumerate(doc.speakers):
            ids = [speaker_ids.setdefault(s, len(speaker_ids) + 1) for s in row]
            speakers[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        genre = GENRES.index(doc.genre) + 1 if doc.genre in GENRES else 0
        mentions = [(s, e, c + 1) for c, cluster in enumerate(doc.clusters) for s, e in cluster]
        gold = torch.tensor(mentions, dtype=torch.long).view(-1, 3)  # (m, 3)
        return CorefBatch(
            words=words,
            chars=chars,
            mask=mask,
            speakers=speakers,
            genre=torch.tensor(genre),
            gold_starts=gold[:, 0],
            gold_ends=gold[:, 1],
            gold_clusters=gold[:, 2],
            layers=self._layers(sentences, mask, represent),
        )

    def _layers(
        self, sentences: list[list[str]], mask: torch.Tensor, represent: Represent
    ) -> Layers:
        """The representation's layers in the sentences' padded shape (L, n, t, d): read per
        sentence, or (``document_as_one_sequence``) read as one sequence and cut into them."""
        if not self.config.document_as_one_sequence:
            return represent(sentences)
        whole = represent([_tokens(sentences)])  # (L, 1, T, d)
        tensors = whole.tensors.new_zeros(
            whole.tensors.shape[0], *mask.shape, whole.tensors.shape[-1]
        )  # (L, n, t, d)
        mask = mask.to(tensors.device)
        tensors[:, mask] = whole.tensors[:, 0, : int(mask.sum())]  # row-major: T real tokens
        return Layers(tensors, mask)

    def build_model(self, injector: Injector) -> nn.Module:
        return SpanRankingCoref(
            self.config, self.vectors, len(self.chars) + 2, len(GENRES) + 1, injector
        )

    def predict(
        self, forward: Forward, examples: Sequence[CorefDocument], represent: Represent
    ) -> Predictions:
        """Predicted clusters per ``(document id, part)`` (whole documents, never cut)."""
        predictions: Predictions = {}
        for doc in examples:
            out = forward(self.collate([doc], represent))
            predictions[doc.key] = clusters_from_antecedents(
                out.starts.tolist(), out.ends.tolist(), out.antecedents.tolist()
            )
        return predictions

    def score(
        self, predictions: Mapping[tuple[str, int], Clusters], examples: Sequence[CorefDocument]
    ) -> dict[str, float]:
        """MUC, B³, CEAF-e (recall, precision, F1) and their mean F1 ``conll_f1`` (natural
        units): :func:`tasks.coref.metric.score_corpus`, the function behind
        ``python -m tasks.coref.evaluate``."""
        score = score_corpus((doc.clusters, predictions.get(doc.key, ())) for doc in examples)
        out = {"conll_f1": score.conll_f1}
        for name, prf in (("muc", score.muc), ("bcub", score.b_cubed), ("ceafe", score.ceafe)):
            out.update({f"{name}_f1": prf.f1, f"{name}_p": prf.precision, f"{name}_r": prf.recall})
        out["mention_f1"] = score.mentions.f1
        return out

    def unit_statistics(
        self, predictions: Mapping[tuple[str, int], Clusters], examples: Sequence[CorefDocument]
    ) -> UnitStatistics:
        """Per document the MUC, B³ and CEAF-e numerators and denominators (recall num / den,
        precision num / den: 12 columns): each metric sums over documents (as
        :func:`score_corpus`), so the bootstrap resamples documents."""
        rows = []
        for doc in examples:
            score = score_document(doc.clusters, predictions.get(doc.key, ()))
            rows.append(
                tuple(
                    float(x)
                    for prf in (score.muc, score.b_cubed, score.ceafe)
                    for x in (prf.recall_num, prf.recall_den, prf.precision_num, prf.precision_den)
                )
            )
        return UnitStatistics(
            tuple(f"{key}_{part}" for key, part in (d.key for d in examples)), tuple(rows)
        )

    def write_predictions(
        self,
        predictions: Mapping[tuple[str, int], Clusters],
        examples: Sequence[CorefDocument],
        path: Path,
    ) -> Path:
        """The response file ``<path>.response_conll``: the key lines of ``examples`` with the
        last column replaced; the same documents' key lines go to ``<path>.key_conll``, so
        ``python -m tasks.coref.evaluate <path>.key_conll <path>.response_conll`` prints the
        run's numbers (with every document of a split, the key is the split's gold file)."""
        out = Path(f"{path}.response_conll")
        write_document_response(
            [(doc.path, doc.key, doc.num_tokens) for doc in examples],
            predictions,
            out,
            key_out=Path(f"{path}.key_conll"),
        )
        return out


def _tokens(sentences: Sequence[Sequence[str]]) -> list[str]:
    """A document's sentences as one token sequence."""
    return [w for words in sentences for w in words]


def data_files(config: CorefConfig, folder: Path) -> list[Path]:
    """The files of the data folder ``folder`` that a run reads
    (:attr:`tasks.core.TaskSpec.data_files`; :func:`tasks.coref.data.folder_files`).

    ``--limit`` reads every file whole (no :attr:`tasks.core.TaskSpec.setup_limited`): the
    character vocabulary comes from every training word and sizes the character embedding
    drawn at the model's initialisation, so a partial read would change a limited run's
    numbers.

    Raises:
        DataError: no train or no dev files (naming the folder and the layouts).
    """
    return folder_files(folder)


def setup(preset: str, overrides: Sequence[str], data_dir: str | None) -> CorefRecipe:
    """Read data (demo set when ``data_dir`` is None; a folder in one of
    :data:`tasks.coref.data.LAYOUTS` otherwise, never the Hub), build vocabularies and word
    vectors."""
    config = configure(PRESETS, preset, overrides)
    require_word_vectors(config.word_vectors)  # before minutes of reading data
    require_turian(config.turian_vectors)
    folder = Path(data_dir) if data_dir else ensure_demo()
    splits, stats = load_splits(folder, config.max_document_tokens)
    recipe = CorefRecipe(config, splits, stats=stats)
    lower = config.lowercase_words
    recipe.words = word_index(
        splits, lambda doc: (w for words in doc.sentences for w in words), WORD_SPLITS, lower
    )
    recipe.chars = char_vocabulary(w for doc in splits["train"] for s in doc.sentences for w in s)
    vocab = list(recipe.words)
    recipe.vectors = [word_vectors(config.word_vectors, vocab, lower)]
    if config.turian_vectors:
        recipe.vectors.append(word_vectors(config.turian_vectors, vocab, lower))
    return recipe


TASK = TaskSpec(
    name="coref",
    version=VERSION,
    metric=CONLL_F1,
    configs=PRESETS,
    default_sites=frozenset({"input"}),  # source: paper A.6 (output site cost ≈ 0.7 F1), unverified
    default_mix=MixSpec("all", 0.0, False),  # source: paper A.6: λ = 0, no layer norm (unverified)
    table_rows=(
        TableRow("Coref", CONLL_F1, "coref"),
        TableRow("Coref", MUC_F1, "coref_muc"),
        TableRow("Coref", BCUB_F1, "coref_bcub"),
        TableRow("Coref", CEAFE_F1, "coref_ceafe"),
    ),
    setup=setup,
    data_files=data_files,
    demo=ensure_demo,
    paper_split="test",  # Table 1: CoNLL-2012 test (348 documents)
    table_split="test",  # the data has a labelled test split
    metric_from_totals=conll_f1_from_totals,
    data_help="a folder with train/dev/test.english.v4_gold_conll (e2e-coref names), "
    "train/, development/, test/ trees of *_gold_conll files (CoNLL-2012 v4, English) or "
    "train/, dev/, test/ folders of *.conll files (LitBank); test is optional",
    # no finetune_presets: paper A.1 names CoNLL 2012 as the one set whose perplexity fine-tuning
    # hardly lowered (unverified: docs/reference/coref.md)
    elmo_dropout=0.5,  # source: paper A.6, "50% dropout on ELMo" (unverified)
    peer=PEER,  # allennlp-models' coref (nox -s peer)
    title="Coreference (Lee et al. span ranking)",
    synthetic=SYNTHETIC,
)
