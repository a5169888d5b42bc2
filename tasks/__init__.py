"""ELMo Bench harness: six downstream tasks of Peters et al. (2018).

Each task lives in its own package (``tasks/<name>/``) with ``data.py`` (reader for the official
format), ``metric.py`` (official-compatible scorer), ``evaluate.py`` (command line that reads the
same files as the official tool) and, once trainable, ``config.py`` (presets with a
:class:`tasks.core.TrainConfig`), ``model.py`` and ``task.py`` (its :class:`tasks.core.TaskSpec`,
listed in ``tasks/registry.py``). ``tasks/core.py`` is the protocol; ``tasks/representations/``
holds the representations (ELMo, GloVe, CoVe, ...); what several tasks share sits in layers, each
importing only those below it: ``common/`` (readers, spans, vectors, vocabularies, ...) < ``nn/``
(layers, CRF) < ``representations/`` < ``features/`` (injection, feature cache) < ``core.py`` <
``metrics/`` (P/R/F1, accuracy) < the task packages < ``registry.py`` (``TASKS_LAYERS`` in
``tests/test_boundaries.py``). This ``__init__`` imports nothing.
"""
