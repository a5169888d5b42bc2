"""ELMo Bench harness: six downstream tasks of Peters et al. (2018).

Each task lives in its own package (``tasks/<name>/``) with ``data.py`` (reader for the official
format), ``metric.py`` (official-compatible scorer), ``evaluate.py`` (command line that reads the
same files as the official tool) and, later, ``model.py`` and ``config.py``.
"""
