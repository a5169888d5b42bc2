"""SNLI 1.0 (Bowman et al., 2015): reader, accuracy metric, evaluator and prediction writer.

Peters et al. (2018), §4 "Textual entailment": accuracy on the test pairs with a gold label.
"""

from tasks.snli.data import LABELS, SnliExample, SnliReader, binary_parse_tokens, to_hf_dataset
from tasks.snli.metric import AccuracyResult, accuracy

__all__ = [
    "LABELS",
    "AccuracyResult",
    "SnliExample",
    "SnliReader",
    "accuracy",
    "binary_parse_tokens",
    "to_hf_dataset",
]
