"""Semantic role labelling on CoNLL-2012 (He et al. 2017 baseline; Peters et al. 2018 §4).

``data`` turns CoNLL-2012 sentences into one BIO instance per predicate, ``metric`` scores props
files with srl-eval.pl semantics, ``evaluate`` holds the command line and the props writers,
``config`` / ``model`` / ``task`` the deep alternating-LSTM tagger and its :class:`TaskSpec`, and
``demo`` the bundled DEMO set (real sentences, heuristic labels).
"""
