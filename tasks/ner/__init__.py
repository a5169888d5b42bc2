"""NER on CoNLL-2003 (Tjong Kim Sang & De Meulder, 2003): reader, conlleval-exact metric, writer.

Peters et al. (2018), §4 "Named entity extraction": entity-level F1 from conlleval, Table 1. Tag
schemes and spans: :mod:`tasks.common.spans`; the P/R/F1 counter: :mod:`tasks.metrics.prf`.
"""

from tasks.ner.data import Conll2003Reader, NerExample, to_hf_dataset
from tasks.ner.metric import ConllevalResult, conlleval, score_rows

__all__ = [
    "Conll2003Reader",
    "ConllevalResult",
    "NerExample",
    "conlleval",
    "score_rows",
    "to_hf_dataset",
]
