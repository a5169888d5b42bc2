"""SNLI 1.0 (Bowman et al., 2015): reader, accuracy metric, evaluator and prediction writer.

Peters et al. (2018), §4 "Textual entailment": accuracy on the test pairs with a gold label.
The model (ESIM) is in ``tasks.snli.model``, the task protocol in ``tasks.snli.task``, the DEMO
pair set generator in ``tasks.snli.demo``.
"""

from tasks.snli.data import (
    LABELS,
    PlainPairReader,
    SnliExample,
    SnliNotAvailable,
    SnliReader,
    binary_parse_tokens,
    load_hf,
    pair_reader,
    to_hf_dataset,
    tokenize,
)
from tasks.snli.metric import AccuracyResult, accuracy

__all__ = [
    "LABELS",
    "AccuracyResult",
    "PlainPairReader",
    "SnliExample",
    "SnliNotAvailable",
    "SnliReader",
    "accuracy",
    "binary_parse_tokens",
    "load_hf",
    "pair_reader",
    "to_hf_dataset",
    "tokenize",
]
