"""The real data sets: which public labelled sets a task can read in place, and how to rebuild them.

:mod:`~experiments.data.real_sets` reads the registry ``real_sets.toml`` (each set's folder, task,
configuration changes and held-out split) and resolves the location-independent label
``shared:<folder>`` a spec names its data by; :mod:`experiments.data.fetch` rebuilds the sets
from their pinned public sources (``real_sources.toml``; ``python -m experiments real-data
fetch``).

May import: :mod:`tasks` (the registry) and :mod:`bilm` (its download cache); nothing else of
:mod:`experiments` (``tests/test_boundaries.py``).
"""
