"""Where a representation is injected into a task model (Peters et al. 2018, §3.3 and Table 3).

A module of its own so that the task contract (:mod:`tasks.core`) and the injector
(:mod:`tasks.features.inject`) both import it without importing each other.
"""

from __future__ import annotations

from typing import Literal, get_args

#: ``input``: concatenated to the task's token vectors before its lowest RNN; ``output``:
#: concatenated to the task RNN's output.
Site = Literal["input", "output"]
SITES: tuple[str, ...] = get_args(Site)
