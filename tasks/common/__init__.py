"""The lowest layer of ``tasks/``: what several tasks share that needs nothing else of ``tasks/``.

Readers' error type and skip statistics (:mod:`~tasks.common.io`), ``key=value`` overrides
(:mod:`~tasks.common.overrides`), the injection sites (:mod:`~tasks.common.sites`), tag schemes
and spans (:mod:`~tasks.common.spans`), the CoNLL-2012 reader (:mod:`~tasks.common.conll2012`),
word-vector files and the embedded GloVe package (:mod:`~tasks.common.vectors`), vocabularies
and id tensors (:mod:`~tasks.common.vocab`), demo unpacking, synthetic text, progress bars and
the peer adapter's contract (:mod:`~tasks.common.peer`).

May import: :mod:`bilm` and modules of this package; nothing else of :mod:`tasks` (the layer
order is ``TASKS_LAYERS`` in ``tests/test_boundaries.py``; docs/architecture.md lists it).
"""
