"""Coreference resolution on CoNLL-2012 (Lee et al. 2017 baseline; Peters et al. 2018 §4).

``data`` turns CoNLL-2012 document parts into coreference documents (local ``*_gold_conll`` files
or the Hugging Face ``conll2012_ontonotesv5`` rows), ``metric`` computes MUC, B³, CEAF-e and the
CoNLL F1 as the reference scorer v8.01 does, ``evaluate`` holds the command line and the
response-file writers, ``model`` is Lee et al. (2017)'s span-ranking model, ``task`` the
:class:`tasks.core.TaskSpec` (``TASK``), ``demo`` the DEMO-set generator (not OntoNotes).
"""
