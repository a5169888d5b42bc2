"""The report side: tables, figures and pages from stored runs, training nothing.

:mod:`~experiments.report.render` turns a :class:`~experiments.report.render.TableSpec` into
Markdown, LaTeX and CSV with the paper's numbers (``paper.toml``) beside ours;
:mod:`~experiments.report.reproductions` says which runs fill each named table (Table 1, the
ablations, real sets; ``python -m experiments reproduce NAME``); :mod:`~experiments.report.plots`
draws the figures; :mod:`~experiments.report.significance` is the seed-aware test every
comparison shows; :mod:`~experiments.report.page` writes the one-page HTML report;
:mod:`~experiments.report.committed` re-renders every committed table from its committed records
and compares them byte for byte.

May import: :mod:`experiments.run` (specs, identities, the store) and :mod:`experiments.data`;
never :mod:`experiments.peer`, :mod:`experiments.analyses` or :mod:`experiments.cli`
(``tests/test_boundaries.py``).
"""
