"""NER on CoNLL-2003 (Tjong Kim Sang & De Meulder, 2003): reader, conlleval-exact metric, writer.

Peters et al. (2018), §4 "Named entity extraction": entity-level F1 from conlleval, Table 1.
"""

from tasks.ner.data import (
    SCHEMES,
    Chunk,
    Conll2003Reader,
    NerExample,
    Scheme,
    chunks_to_tags,
    convert,
    is_valid,
    tags_to_chunks,
    to_hf_dataset,
)
from tasks.ner.metric import ChunkScore, ConllevalResult, conlleval, score_rows

__all__ = [
    "SCHEMES",
    "Chunk",
    "ChunkScore",
    "Conll2003Reader",
    "ConllevalResult",
    "NerExample",
    "Scheme",
    "chunks_to_tags",
    "conlleval",
    "convert",
    "is_valid",
    "score_rows",
    "tags_to_chunks",
    "to_hf_dataset",
]
