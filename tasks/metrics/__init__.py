"""The metrics several tasks share, built on the metric contract of :mod:`tasks.core`
(:class:`~tasks.core.MetricSpec`, :class:`~tasks.core.UnitStatistics`,
:func:`~tasks.core.safe_ratio`): one precision / recall / F1 counter (:mod:`~tasks.metrics.prf`)
and accuracy (:mod:`~tasks.metrics.accuracy`).

May import: every layer below it, :mod:`tasks.core` included (the layer order is
``TASKS_LAYERS`` in ``tests/test_boundaries.py``).
"""
