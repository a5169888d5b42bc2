"""Regenerate the project's own biLM goldens: ``python scripts/make_goldens.py``.

A tiny biLM initialised with :func:`bilm.init_weights` from a fixed seed runs fixed sentences
under each state policy; the outputs go to ``tests/goldens/bilm_tiny.json``.
``tests/bilm/test_goldens.py`` recomputes them: any change to initialisation, char ids,
the CNN, the LSTM or the state logic shows up as a diff. Regenerate only for an intended
change, and say why in the commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from bilm import BiLM, BiLMOptions, batch_to_ids, init_weights

OUT = Path(__file__).resolve().parents[1] / "tests" / "goldens" / "bilm_tiny.json"
SEED = 20180215  # arbitrary, fixed
OPTIONS: dict[str, Any] = {
    "lstm": {
        "dim": 20,
        "projection_dim": 6,
        "n_layers": 2,
        "cell_clip": 3,
        "proj_clip": 3,
        "use_skip_connections": True,
    },
    "char_cnn": {
        "activation": "relu",
        "embedding": {"dim": 4},
        "filters": [[1, 4], [2, 4], [3, 8]],
        "n_highway": 1,
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}
SENTENCES = [
    ["It", "is", "a", "truth", "universally", "acknowledged", "."],
    ["Émile", "naïve", "🙂", "x" * 60],
    [],
]


def compute() -> dict[str, Any]:
    """Outputs of the golden model for every policy (carry: two calls in a row)."""
    options = BiLMOptions.from_dict(OPTIONS)
    result: dict[str, Any] = {"seed": SEED, "options": OPTIONS, "sentences": SENTENCES}
    for policy, calls in (("reset", 1), ("warm", 1), ("carry", 2)):
        model = init_weights(BiLM(options, state=policy), seed=SEED).eval()
        with torch.no_grad():
            for call in range(calls):
                out = model(batch_to_ids(SENTENCES)).layers  # (3, 3, 7, 12)
                result[f"{policy}_{call}"] = [
                    [round(v, 7) for v in row] for row in out.reshape(-1, out.shape[-1]).tolist()
                ]
    return result


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(compute(), indent=0) + "\n")
    print(f"wrote {OUT}")
