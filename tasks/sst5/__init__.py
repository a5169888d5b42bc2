"""SST-5 (Socher et al., 2013): tree reader, root-accuracy metric, evaluator and writer.

Peters et al. (2018), §4 "Sentiment analysis": 5-class accuracy on the test sentences (roots).
"""

from tasks.sst5.data import (
    GRANULARITIES,
    Granularity,
    Phrase,
    SstExample,
    SstReader,
    SstTree,
    iter_trees,
    parse_tree,
    to_binary,
    to_hf_dataset,
)
from tasks.sst5.metric import SstResult, sst_accuracy

__all__ = [
    "GRANULARITIES",
    "Granularity",
    "Phrase",
    "SstExample",
    "SstReader",
    "SstResult",
    "SstTree",
    "iter_trees",
    "parse_tree",
    "sst_accuracy",
    "to_binary",
    "to_hf_dataset",
]
