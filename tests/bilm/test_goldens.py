"""The project's own goldens (made by scripts/make_goldens.py) still reproduce."""

from __future__ import annotations

import json

import torch

from tests.conftest import REPO


def test_goldens_reproduce() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_goldens", REPO / "scripts/make_goldens.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stored = json.loads((REPO / "tests/goldens/bilm_tiny.json").read_text())
    fresh = module.compute()
    assert stored["options"] == fresh["options"] and stored["sentences"] == fresh["sentences"]
    for key in ("reset_0", "warm_0", "carry_0", "carry_1"):
        a, b = torch.tensor(stored[key]), torch.tensor(fresh[key])
        torch.testing.assert_close(b, a, atol=2e-6, rtol=0, msg=key)
    # the policies really differ (otherwise the goldens would not guard them)
    assert (torch.tensor(stored["carry_1"]) - torch.tensor(stored["carry_0"])).abs().max() > 1e-3
    assert (torch.tensor(stored["warm_0"]) - torch.tensor(stored["reset_0"])).abs().max() > 1e-3
