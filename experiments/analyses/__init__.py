"""Analyses of a frozen representation, beside the task runs (paper §5.3).

:mod:`~experiments.analyses.probes`: per-layer POS and word-sense probes (Tables 5 and 6, on the
DEMO sets in ``demo_data/`` or the user's data); :mod:`~experiments.analyses.neighbours`: nearest
neighbours of a word, GloVe against the biLM in context (Table 4).

May import: :mod:`bilm` and :mod:`tasks`; nothing of :mod:`experiments` outside this folder
(``tests/test_boundaries.py``).
"""
