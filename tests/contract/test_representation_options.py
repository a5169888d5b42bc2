"""Every registered representation declares its configuration's keys (``ReprOption``), and the
declarations cannot drift from the builders: same keys as each builder's signature (less what
the harness sets itself), same defaults; the adaptation keys are ``AdaptConfig``'s."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

import pytest

from experiments.plan.specs import PAPER_PRESET, PUBLISHED_ELMO
from experiments.run.represent import HARNESS_KEYS
from tasks.representations import (
    REPRESENTATION_OPTIONS,
    REPRESENTATIONS,
    ReprOption,
    check_config,
    declared_options,
    representation_flags,
)
from tasks.representations.adapt import ADAPT_KEYS, ADAPT_OPTIONS, AdaptConfig
from tasks.representations.elmo import ELMO_OPTIONS
from tasks.representations.options import SET_BY_HARNESS


def test_the_declarations_are_keyed_as_the_registry() -> None:
    assert list(REPRESENTATION_OPTIONS) == list(REPRESENTATIONS)


@pytest.mark.parametrize("name", list(REPRESENTATIONS))
def test_declared_keys_are_the_builders_parameters(name: str) -> None:
    """Declared keys less the harness's own (``finetune``, the adaptation keys) are exactly the
    builder's parameters less those the harness sets (``state``, ``trainable``); a declared
    default is the signature's; a parameter without a default is declared required."""
    parameters = inspect.signature(REPRESENTATIONS[name]).parameters
    declared = {o.name: o for o in REPRESENTATION_OPTIONS[name]}
    assert len(declared) == len(REPRESENTATION_OPTIONS[name]), "a key declared twice"
    assert set(declared) - HARNESS_KEYS == set(parameters) - set(SET_BY_HARNESS)
    for key, parameter in parameters.items():
        if key in declared:
            default = None if parameter.default is parameter.empty else parameter.default
            assert declared[key].default == default, key
            assert declared[key].required or parameter.default is not parameter.empty, key


def test_harness_keys_are_declared_where_they_live() -> None:
    assert [o.name for o in ADAPT_OPTIONS] == list(ADAPT_KEYS)
    defaults = {f.name: f.default for f in dataclasses.fields(AdaptConfig)}
    assert all(o.default == defaults[ADAPT_KEYS[o.name]] for o in ADAPT_OPTIONS)
    finetuning = [
        name
        for name, opts in REPRESENTATION_OPTIONS.items()
        if any(o.name == "finetune" for o in opts)
    ]
    assert finetuning == ["elmo"]


def test_flags_give_declared_keys_and_the_paper_preset_uses_the_papers_biLM() -> None:
    assert [f.name for f in representation_flags()] == ["--elmo", "--glove", "--cove"]
    (elmo_flag,) = [f for f in representation_flags() if f.parse is not None]
    keys = {o.name for o in ELMO_OPTIONS if o.flag == elmo_flag}
    for values in (["o.json", "w.hdf5"], ["c.safetensors"], ["published:original"]):
        assert set(elmo_flag.parse(values)) <= keys  # type: ignore[misc]
    (published,) = [o for o in ELMO_OPTIONS if o.name == "published"]
    assert dict(published.presets) == {PAPER_PRESET: PUBLISHED_ELMO}
    assert PUBLISHED_ELMO in published.choices


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("elmo", {"directons": "forward"}, "unknown option(s) ['directons']; valid: checkpoint"),
        ("elmo", {"state": "carry"}, "state is set by the run's LSTM state policy"),
        ("elmo", {"directions": "sideways"}, "choose one of both, forward, backward"),
        ("elmo", {"adapt": "lora2"}, "choose one of frozen, finetune, lora"),
        ("elmo", {"lora_rank": "four"}, 'lora_rank="four": expected int'),
        ("elmo", {"lora_rank": True}, "expected int"),
        ("hf", {"pooling": "median"}, "choose one of first, mean, last, max"),
        ("glove", {"adapt": "lora"}, "choose one of frozen"),
        ("hdf5", {"path": None}, "expected path"),
    ],
)
def test_a_bad_key_or_value_is_refused(name: str, config: dict[str, object], message: str) -> None:
    with pytest.raises((TypeError, ValueError)) as caught:
        check_config(name, config)
    assert message in str(caught.value)


def test_valid_configurations_pass() -> None:
    check_config("elmo", {"adapt": "lora", "lora_rank": 4, "lora_alpha": 8, "finetune": 1.0})
    check_config("elmo", {"published": "original", "directions": "forward", "finetune": True})
    check_config("hf", {"layers": [0, 3], "lora_targets": ["query"], "adapt_lr": 1})
    check_config("glove", {"path": "g.txt", "cache_dir": False, "lowercase": None})
    check_config("hdf5", {"path": "f.hdf5", "adapt": "frozen"})


def _plugin(folder: Path, module: str, body: str) -> str:
    """A throwaway ``module:Factory`` importable from ``folder``; returns its name."""
    (folder / f"{module}.py").write_text(body, encoding="utf-8")
    return f"{module}:Factory"


DECLARED = """
from tasks.representations import ReprOption

class Factory:
    OPTIONS = (
        ReprOption("dim", "vector width", types=(int,), default=8),
        ReprOption("kind", "how", choices=("hash", "char"), default="hash"),
    )

    def __init__(self, dim=8, kind="hash"):
        self.dim = dim
"""


def test_a_plugin_declares_its_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    name = _plugin(tmp_path, "throwaway_declared", DECLARED)
    try:
        options = declared_options(name)
        assert options is not None
        assert [o.name for o in options] == ["dim", "kind", *ADAPT_KEYS]
        check_config(name, {"dim": 16, "kind": "char", "adapt": "finetune"})
        with pytest.raises(ValueError, match='dim="wide": expected int'):
            check_config(name, {"dim": "wide"})
        with pytest.raises(ValueError, match="choose one of hash, char"):
            check_config(name, {"kind": "word"})
        with pytest.raises(TypeError, match=r"unknown option\(s\) \['dimm'\]; valid: dim, kind"):
            check_config(name, {"dimm": 16})
    finally:
        sys.modules.pop(name.partition(":")[0], None)


def test_a_plugin_without_options_falls_back_to_its_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    signature = "class Factory:\n    def __init__(self, dim, seed=0):\n        pass\n"
    plain = _plugin(tmp_path, "throwaway_signature", signature)
    open_ended = _plugin(
        tmp_path, "throwaway_kwargs", "def Factory(**config):\n    return config\n"
    )
    try:
        options = declared_options(plain)
        assert options is not None
        assert [(o.name, o.required, o.types) for o in options[:2]] == [
            ("dim", True, ()),
            ("seed", False, ()),
        ]
        check_config(plain, {"dim": "anything goes", "lora_rank": 2})
        with pytest.raises(TypeError, match="valid: dim, seed, adapt"):
            check_config(plain, {"dims": 1})
        assert declared_options(open_ended) is None
        check_config(open_ended, {"whatever": 1})
        with pytest.raises(ValueError, match="choose one of frozen"):
            check_config(open_ended, {"adapt": "everything"})
    finally:
        for name in (plain, open_ended):
            sys.modules.pop(name.partition(":")[0], None)


def test_options_are_frozen_values() -> None:
    option = ReprOption("k", "help")
    with pytest.raises(dataclasses.FrozenInstanceError):
        option.name = "other"  # type: ignore[misc]
