"""RunSpec: normalisation, canonical JSON, run_id (golden), sweeps."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiments.run.spec import (
    MixSpec,
    RunSpec,
    baseline_of,
    canonical_json,
    derive,
    expand_sweep,
    run_id,
    spec_matches,
)


def golden_spec() -> RunSpec:
    return RunSpec(
        task="snli",
        task_version=3,
        representation="elmo",
        representation_config={"checkpoint": "elmo_original", "fine_tune": False},
        sites=("input", "output"),
        mix=MixSpec(mode="all", lam=0.001, layer_norm=False),
        dropout=0.5,
        state="reset",
        preset="mini",
        overrides=("train.lr=0.0004", "model.hidden_dim=32"),
        seed=7,
        data="demo",
        max_epochs=3,
        limit=64,
    )


def test_run_id_golden() -> None:
    # Golden of the hash function: computed once from this fixed spec and hard-coded. If it
    # changes, every stored result gets a new id; change it only together with a migration note.
    assert run_id(golden_spec()) == "c9c275325b23"
    assert golden_spec().run_id == "c9c275325b23"


def test_canonical_json_is_sorted_compact_and_the_hash_input() -> None:
    spec = golden_spec()
    text = canonical_json(spec)
    assert " " not in text and "\n" not in text
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, separators=(",", ":"))
    assert data["overrides"] == ["model.hidden_dim=32", "train.lr=0.0004"]
    expected = hashlib.blake2b((text + "3").encode()).hexdigest()[:12]
    assert run_id(spec) == expected


def test_equivalent_spellings_share_a_run_id() -> None:
    a = golden_spec()
    b = dataclasses.replace(
        a,
        sites="output,input",
        overrides=["model.hidden_dim=32", "train.lr=0.0004"],
        representation_config={"fine_tune": False, "checkpoint": "elmo_original"},
        mix=MixSpec(lam=0.001),
    )
    assert a == b and hash(a) == hash(b) and run_id(a) == run_id(b)
    assert run_id(derive(a, {"lam": 1})) == run_id(derive(a, {"lam": 1.0}))


@pytest.mark.parametrize(
    "change",
    [
        {"task": "squad"},
        {"task_version": 4},
        {"representation": "elmo_random"},
        {"representation_config": {"checkpoint": "other"}},
        {"sites": ("input",)},
        {"mode": "last"},
        {"lam": 1.0},
        {"layer_norm": True},
        {"dropout": 0.2},
        {"state": "carry"},
        {"preset": "paper"},
        {"overrides": ("train.lr=0.001",)},
        {"seed": 8},
        {"data": "conll"},
        {"max_epochs": 4},
        {"limit": None},
    ],
)
def test_every_field_changes_the_run_id(change: dict[str, object]) -> None:
    assert run_id(derive(golden_spec(), change)) != run_id(golden_spec())


def test_round_trips_through_dict_json_and_pickle() -> None:
    spec = golden_spec()
    assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_last_only_has_no_lambda_and_baselines_are_canonical() -> None:
    assert MixSpec(mode="last", lam=1.0) == MixSpec(mode="last")
    base = baseline_of(golden_spec())
    assert (base.representation, base.sites, base.mix, base.dropout) == ("none", (), MixSpec(), 0.0)
    assert base.seed == 7 and base.overrides == golden_spec().overrides
    assert baseline_of(derive(golden_spec(), {"lam": 1.0})) == base


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sites": ("input", "middle")}, "unknown sites"),
        ({"sites": ()}, "needs at least one site"),
        ({"representation": "none"}, "baseline"),
        ({"dropout": 1.0}, "dropout"),
        ({"state": "stateful"}, "state"),
        ({"preset": ""}, "preset"),
        ({"eval_splits": ("test",)}, "eval_splits"),
        ({"representation_config": {"state": "carry"}}, "state"),
        ({"overrides": ("lr",)}, "key=value"),
        ({"overrides": ("a=1", "a=2")}, "twice"),
        ({"representation_config": {"f": object()}}, "JSON"),
        ({"max_epochs": 0}, "max_epochs"),
        ({"task": ""}, "task"),
    ],
)
def test_invalid_specs_raise(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RunSpec(**{"task": "snli", "task_version": 1, **kwargs})  # type: ignore[arg-type]


def test_invalid_mix_and_unknown_keys_raise() -> None:
    with pytest.raises(ValueError, match="mode"):
        MixSpec(mode="first")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lam"):
        MixSpec(lam=-1)
    with pytest.raises(ValueError, match="valid"):
        RunSpec.from_dict({**golden_spec().to_dict(), "epochs": 3})
    with pytest.raises(ValueError, match="valid"):
        derive(golden_spec(), {"lr": 0.1})
    with pytest.raises(TypeError, match="seed"):
        RunSpec(task="snli", task_version=1, seed=1.5)  # type: ignore[arg-type]


def test_expand_sweep_is_a_deduplicated_cartesian_product() -> None:
    specs = expand_sweep(golden_spec(), lam=[1.0, 0.001], seed=range(3))
    assert len(specs) == 6 and len({s.run_id for s in specs}) == 6
    assert [(s.mix.lam, s.seed) for s in specs[:2]] == [(1.0, 0), (1.0, 1)]  # last axis fastest
    # LastOnly ignores λ: crossing it with two λ gives one LastOnly spec per seed
    crossed = expand_sweep(golden_spec(), mode=["all", "last"], lam=[1.0, 0.001], seed=[0, 1])
    assert len(crossed) == 6
    sites = expand_sweep(golden_spec(), sites=[("input",), "input,output", ("output",)])
    assert [s.sites for s in sites] == [("input",), ("input", "output"), ("output",)]


def test_expand_sweep_rejects_bad_axes() -> None:
    with pytest.raises(ValueError, match="list of values"):
        expand_sweep(golden_spec(), sites="input")
    with pytest.raises(ValueError, match="valid"):
        expand_sweep(golden_spec(), seeds=[1, 2])


def test_spec_matches() -> None:
    spec = golden_spec()
    assert spec_matches(spec, {"task": "snli", "lam": 0.001, "sites": "input,output"})
    assert not spec_matches(spec, {"mode": "last"})
    with pytest.raises(ValueError, match="valid"):
        spec_matches(spec, {"colour": "red"})


@given(
    sites=st.lists(st.sampled_from(["input", "output"]), min_size=1, max_size=4),
    keys=st.lists(st.text("abc.", min_size=1, max_size=5), unique=True, max_size=4),
    seed=st.integers(0, 2**31),
)
def test_run_id_ignores_order_and_survives_serialisation(
    sites: list[str], keys: list[str], seed: int
) -> None:
    overrides = [f"{k}={i}" for i, k in enumerate(keys)]
    a = RunSpec(task="srl", task_version=1, sites=tuple(sites), overrides=overrides, seed=seed)
    b = RunSpec(
        task="srl",
        task_version=1,
        sites=tuple(reversed(sites)),
        overrides=overrides[::-1],
        seed=seed,
    )
    assert run_id(a) == run_id(b) == run_id(RunSpec.from_dict(json.loads(canonical_json(a))))


def test_train_fraction_is_validated_and_absent_from_old_run_ids() -> None:
    """``train_fraction`` None and 1.0 are the same run (and keep the run ids of specs made
    before the field existed); others change the id; out-of-range values are refused."""
    spec = RunSpec(task="squad", task_version=1)
    assert "train_fraction" not in spec.to_dict()
    assert derive(spec, {"train_fraction": 1.0}).run_id == spec.run_id
    tenth = derive(spec, {"train_fraction": 0.1})
    assert tenth.run_id != spec.run_id and RunSpec.from_dict(tenth.to_dict()) == tenth
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="train_fraction"):
            derive(spec, {"train_fraction": bad})
