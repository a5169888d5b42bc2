"""What turns a representation's layers into a task model's features: the injector (one scalar
mix per site, :mod:`~tasks.features.inject`) and the frozen-feature cache
(:mod:`~tasks.features.feature_cache`).

May import: :mod:`bilm`, :mod:`tasks.common`, :mod:`tasks.nn`, :mod:`tasks.representations` and
modules of this package (the layer order is ``TASKS_LAYERS`` in ``tests/test_boundaries.py``).
"""
