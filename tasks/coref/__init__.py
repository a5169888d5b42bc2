"""Coreference resolution on CoNLL-2012 (Lee et al. 2017 baseline; Peters et al. 2018 §4).

``data`` turns CoNLL-2012 document parts into coreference documents, ``metric`` computes MUC, B³,
CEAF-e and the CoNLL F1 as the reference scorer v8.01 does, ``evaluate`` holds the command line and
the response-file writer.
"""
