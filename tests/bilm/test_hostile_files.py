"""Hostile or broken model files are refused before any tensor of the model is allocated.

The gate (:mod:`bilm.checks`): options within the limits of :mod:`bilm.options`, a model that
fits this machine's memory, every dataset as the options imply (from the file's header), every
weight finite (as it is read). Each test replaces the biLM's constructor with one that fails
where the refusal must come before the model is built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import bilm.checks as checks
import bilm.weights as weights_module
from bilm import (
    BiLM,
    BiLMOptions,
    OptionsError,
    WeightsError,
    export_official,
    load_checkpoint,
    load_official,
    save_checkpoint,
)
from bilm.__main__ import main
from bilm.checks import ModelTooLargeError
from tests.bilm.helpers import tiny_bilm, tiny_options

W_CARRY = "CNN_high_0/W_carry"
W_0 = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"


@pytest.fixture
def no_build(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Make building a biLM in :mod:`bilm.weights` fail the test; returns the calls."""
    calls: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> BiLM:
        calls.append(args)
        raise AssertionError("a biLM was built before the gate refused the file")

    monkeypatch.setattr(weights_module, "BiLM", refuse)
    return calls


def _export(tmp_path: Path, **kwargs: Any) -> tuple[Path, Path]:
    return export_official(tiny_bilm(seed=1, **kwargs), tmp_path)


def _edit_options(path: Path, section: str, key: str, value: Any) -> None:
    data = json.loads(path.read_text())
    data[section][key] = value
    path.write_text(json.dumps(data))


def _edit_dataset(path: Path, name: str, change: Any) -> None:
    with h5py.File(path, "a") as f:
        array = change(f[name][...])
        del f[name]
        f[name] = array


# ------------------------------------------------------------------------------ option limits
@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("lstm", "n_layers", 1_000_000, "lstm.n_layers=1000000 exceeds the limit 20"),
        ("lstm", "dim", 1e7, "lstm.dim=10000000 exceeds the limit 40960"),
        ("lstm", "projection_dim", 6000, "lstm.projection_dim=6000 exceeds the limit 5120"),
        ("char_cnn", "n_highway", 21, "char_cnn.n_highway=21 exceeds the limit 20"),
        ("char_cnn", "embedding", {"dim": 161}, "char_cnn.embedding.dim=161 exceeds the limit 160"),
        (
            "char_cnn",
            "max_characters_per_token",
            501,
            "char_cnn.max_characters_per_token=501 exceeds the limit 500",
        ),
        ("char_cnn", "filters", [[1, 1]] * 71, "len(char_cnn.filters)=71 exceeds the limit 70"),
        ("char_cnn", "filters", [[1, 4], [71, 2]], "filters[1] width=71 exceeds the limit 70"),
        ("char_cnn", "filters", [[1, 10_241]], "filters[0] count=10241 exceeds the limit 10240"),
        (
            "char_cnn",
            "filters",
            [[1, 10_240], [2, 10_240], [3, 1]],
            "the sum of char_cnn.filters counts=20481 exceeds the limit 20480",
        ),
    ],
)
def test_sizes_beyond_their_limit_are_refused_before_any_model_is_built(
    tmp_path: Path, no_build: list[Any], section: str, key: str, value: Any, expected: str
) -> None:
    options, weights = _export(tmp_path)
    _edit_options(options, section, key, value)
    with pytest.raises(OptionsError) as caught:
        load_official(options, weights)
    message = str(caught.value)
    assert message.startswith(f"{options}: ") and expected in message
    assert "bilm.options.MAX_" in message and "\n" not in message
    assert no_build == []


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("dim", "Infinity", "bad value"),  # int(inf): OverflowError before, now one line
        ("cell_clip", "NaN", "lstm.cell_clip must be a finite number > 0"),
        ("proj_clip", -3, "lstm.proj_clip must be a finite number > 0"),
    ],
)
def test_non_finite_or_negative_numbers_in_the_options(
    tmp_path: Path, no_build: list[Any], key: str, value: Any, expected: str
) -> None:
    options, weights = _export(tmp_path)
    text = json.loads(options.read_text())
    text["lstm"][key] = "__VALUE__"
    options.write_text(json.dumps(text).replace('"__VALUE__"', str(value)))
    with pytest.raises(OptionsError, match=expected):
        load_official(options, weights)
    assert no_build == []


def test_an_options_file_larger_than_the_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options, weights = _export(tmp_path)
    monkeypatch.setattr("bilm.options.MAX_OPTIONS_FILE_BYTES", 64)
    with pytest.raises(OptionsError, match=r"bytes, more than the 64 an options file may have"):
        load_official(options, weights)


def test_huge_n_layers_in_a_checkpoint_is_refused_before_any_model_is_built(
    tmp_path: Path, no_build: list[Any]
) -> None:
    data = tiny_options().to_dict()
    data["lstm"]["n_layers"] = 1_000_000
    path = tmp_path / "x.safetensors"
    save_file({"a": torch.zeros(2)}, str(path), metadata={"options": json.dumps(data)})
    with pytest.raises(OptionsError, match="lstm.n_layers=1000000 exceeds the limit 20"):
        load_checkpoint(path)
    assert no_build == []


# ------------------------------------------------------------------------------------ memory
def test_parameter_shapes_are_those_of_a_built_model() -> None:
    """The memory estimate and the checkpoint check compute the shapes without building; they
    must stay those of the real module."""
    for kwargs in (
        {},
        {"n_highway": 0},
        {"n_layers": 1},
        {"filters": ((1, 4), (2, 4))},  # F = P: no char-CNN projection
        {"dim": 8},  # P = C: no LSTM projection
    ):
        model = tiny_bilm(**kwargs)
        built = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        assert checks.parameter_shapes(model.options) == built, kwargs
        assert checks.parameter_count(model.options) == sum(p.numel() for p in model.parameters())
    # the published model: the paper's 93.6 M parameters
    assert checks.parameter_count(BiLMOptions()) == 93_600_864


def test_a_model_larger_than_the_memory_is_refused_with_the_figure_and_the_option(
    tmp_path: Path, no_build: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    options, weights = _export(tmp_path)
    _edit_options(options, "lstm", "dim", 40_960)  # within the limit
    _edit_options(options, "lstm", "projection_dim", 5_120)
    monkeypatch.setattr(checks, "available_memory", lambda: 8 << 30)  # 8 GiB
    with pytest.raises(ModelTooLargeError) as caught:
        load_official(options, weights)
    message = str(caught.value)
    needed = checks.estimated_load_bytes(BiLMOptions.from_json(options))
    assert needed > 0.75 * (8 << 30)
    assert message.startswith(f"{options}: the model needs about {needed / 2**30:.1f} GiB")
    assert f"{checks.parameter_count(BiLMOptions.from_json(options)):,} float32 parameters" in (
        message
    )
    assert "8.0 GiB available" in message
    assert "lstm.n_layers=2, lstm.dim=40960, lstm.projection_dim=5120: lower them" in message
    assert isinstance(caught.value, OptionsError) and "\n" not in message
    assert no_build == []


def test_the_memory_check_uses_what_the_machine_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    opts = tiny_options()
    needed = checks.estimated_load_bytes(opts)
    monkeypatch.setattr(checks, "available_memory", lambda: needed)  # under the 75 % margin
    with pytest.raises(ModelTooLargeError):
        checks.check_options(opts)
    monkeypatch.setattr(checks, "available_memory", lambda: 2 * needed)
    checks.check_options(opts)
    monkeypatch.setattr(checks, "available_memory", lambda: None)  # unknown: bounds only
    checks.check_options(opts)


def test_available_memory_reads_meminfo_and_the_cgroup_limit(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  2048 kB\nMemFree: 100 kB\nMemAvailable:   1024 kB\n")
    assert checks._meminfo_available(meminfo) == 1024 * 1024
    assert checks._meminfo_available(tmp_path / "absent") is None
    (tmp_path / "memory.max").write_text("1000\n")
    (tmp_path / "memory.current").write_text("400\n")
    assert checks._cgroup_headroom(tmp_path) == 600
    (tmp_path / "memory.max").write_text("max\n")
    assert checks._cgroup_headroom(tmp_path) is None
    assert checks._cgroup_headroom(tmp_path / "absent") is None
    found = checks.available_memory()
    assert found is None or found > 0


def test_build_bilm_passes_the_gate_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "available_memory", lambda: 1024)
    with pytest.raises(ModelTooLargeError, match="^options: the model needs about"):
        weights_module.build_bilm(tiny_options())
    monkeypatch.setattr(checks, "available_memory", lambda: None)
    assert isinstance(weights_module.build_bilm(tiny_options(), state="warm"), BiLM)


# ------------------------------------------------------------------------- dataset headers
def test_a_dataset_of_another_shape_is_named_with_both_shapes_before_building(
    tmp_path: Path, no_build: list[Any]
) -> None:
    options, weights = _export(tmp_path)
    _edit_dataset(weights, W_CARRY, lambda a: a[:, :15])
    with pytest.raises(WeightsError) as caught:
        load_official(options, weights)
    assert str(caught.value) == (
        f"{weights}: dataset '{W_CARRY}' has shape (16, 15), expected (16, 16) from the options"
    )
    assert no_build == []


def test_a_dataset_that_is_not_floating_point_is_named(tmp_path: Path, no_build: list[Any]) -> None:
    options, weights = _export(tmp_path)
    _edit_dataset(weights, "CNN/b_cnn_0", lambda a: a.astype(np.int32))
    with pytest.raises(WeightsError, match=r"'CNN/b_cnn_0' has dtype int32, expected floating"):
        load_official(options, weights)
    assert no_build == []


def test_a_dataset_stored_outside_the_file_is_refused(tmp_path: Path, no_build: list[Any]) -> None:
    options, weights = _export(tmp_path)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(np.zeros(4, dtype=np.float32).tobytes())
    with h5py.File(weights, "a") as f:
        del f["CNN/b_cnn_0"]
        f.create_dataset("CNN/b_cnn_0", (4,), np.float32, external=[(str(outside), 0, 16)])
    with pytest.raises(WeightsError, match="'CNN/b_cnn_0' keeps its data outside the file"):
        load_official(options, weights)
    assert no_build == []


def test_a_file_of_many_datasets_is_refused_without_listing_them_all(
    tmp_path: Path, no_build: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    options, weights = _export(tmp_path)
    monkeypatch.setattr(weights_module, "EXTRA_DATASETS", 3)
    with h5py.File(weights, "a") as f:
        for i in range(10):
            f[f"junk/{i}"] = np.zeros(1, dtype=np.float32)
    expected = len(checks.official_layout(tiny_options()))
    with pytest.raises(WeightsError, match=f"more than {expected + 3} datasets; the options"):
        load_official(options, weights)
    assert no_build == []


def test_a_checkpoint_tensor_of_another_shape_is_named_before_building(
    tmp_path: Path, no_build: list[Any]
) -> None:
    model = tiny_bilm()
    tensors = {k: v.clone() for k, v in model.state_dict().items()}
    tensors["layers.1.0.bias"] = torch.zeros(95)
    path = tmp_path / "x.safetensors"
    save_file(tensors, str(path), metadata={"options": json.dumps(model.options.to_dict())})
    with pytest.raises(WeightsError) as caught:
        load_checkpoint(path)
    assert str(caught.value) == (
        f"{path}: tensors do not match the options (layers.1.0.bias: expected (96,), found (95,))"
    )
    assert no_build == []


# --------------------------------------------------------------------------- finite weights
def test_a_nan_weight_is_named_with_its_dataset_and_count(tmp_path: Path) -> None:
    options, weights = _export(tmp_path)

    def poison(a: np.ndarray) -> np.ndarray:
        a[3, 5] = np.nan
        return a

    _edit_dataset(weights, W_CARRY, poison)
    with pytest.raises(WeightsError) as caught:
        load_official(options, weights)
    assert str(caught.value) == (
        f"{weights}: dataset '{W_CARRY}' holds 1 non-finite value(s) (1 NaN, 0 inf) of 256"
    )


def test_inf_weights_are_named_with_their_dataset_and_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options, weights = _export(tmp_path)

    def poison(a: np.ndarray) -> np.ndarray:
        a[0, 0], a[-1, -1], a[7, 50] = np.inf, -np.inf, np.nan
        return a

    _edit_dataset(weights, W_0, poison)
    monkeypatch.setattr(checks, "CHECK_CHUNK", 7)  # the count spans chunks
    with pytest.raises(WeightsError) as caught:
        load_official(options, weights)
    assert str(caught.value) == (
        f"{weights}: dataset '{W_0}' holds 3 non-finite value(s) (1 NaN, 2 inf) of 1536"
    )


def test_a_float64_value_beyond_float32_is_an_inf_weight(tmp_path: Path) -> None:
    options, weights = _export(tmp_path)
    _edit_dataset(weights, "CNN_proj/b_proj", lambda a: np.full(a.shape, 1e300, dtype=np.float64))
    with pytest.raises(WeightsError, match=r"'CNN_proj/b_proj' holds 8 non-finite .* 8 inf"):
        load_official(options, weights)


def test_a_nan_tensor_in_a_checkpoint_is_named(tmp_path: Path) -> None:
    model = tiny_bilm()
    with torch.no_grad():
        model.lstms[0][1].w_state[2, 3] = float("nan")
    path = save_checkpoint(model, tmp_path / "x.safetensors", dtype=torch.float16)
    with pytest.raises(WeightsError) as caught:
        load_checkpoint(path)
    assert str(caught.value) == (
        f"{path}: dataset 'layers.0.1.w_state' holds 1 non-finite value(s) (1 NaN, 0 inf) of 768"
    )
    with pytest.raises(WeightsError, match="layers.0.1.w_state"):
        weights_module.load_checkpoint_tensors(path)


# -------------------------------------------------------------------------------- the CLI
def _embed(tmp_path: Path, options: Path, weights: Path) -> list[str]:
    text = tmp_path / "in.txt"
    text.write_text("the cat sat\n")
    return [
        "embed",
        "--options",
        str(options),
        "--weights",
        str(weights),
        "--input",
        str(text),
        "--output",
        str(tmp_path / "o.hdf5"),
        "--device",
        "cpu",
        "--quiet",
    ]


def test_embed_reports_options_out_of_bounds_in_one_line_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_build: list[Any]
) -> None:
    options, weights = _export(tmp_path)
    _edit_options(options, "lstm", "n_layers", 1_000_000)
    assert main(_embed(tmp_path, options, weights)) == 1
    err = capsys.readouterr().err
    assert err == (
        f"bilm embed: error: {options}: lstm.n_layers=1000000 exceeds the limit 20 "
        "(bilm.options.MAX_LSTM_LAYERS)\n"
    )
    assert not (tmp_path / "o.hdf5").exists() and no_build == []


def test_embed_reports_a_nan_weight_in_one_line_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options, weights = _export(tmp_path)
    _edit_dataset(weights, W_CARRY, lambda a: np.where(a > 0, np.nan, a))
    assert main(_embed(tmp_path, options, weights)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bilm embed: error: ")
    assert f"dataset '{W_CARRY}' holds" in err and "NaN" in err
    assert not (tmp_path / "o.hdf5").exists()


# ------------------------------------------------------------------------ valid files still load
def test_a_valid_export_loads_bit_identically_through_the_gate(tmp_path: Path) -> None:
    model = tiny_bilm(seed=4, n_layers=1)
    options, weights = export_official(model, tmp_path)
    for again in (
        load_official(options, weights),
        load_checkpoint(save_checkpoint(model, tmp_path / "m.safetensors")),
    ):
        for (name, a), (_, b) in zip(
            model.state_dict().items(), again.state_dict().items(), strict=True
        ):
            assert torch.equal(a, b), name


def test_a_single_layer_file_without_the_multi_cell_group_still_loads(tmp_path: Path) -> None:
    """bilm-tf writes a one-layer model's cells under RNN_d/RNN/LSTMCell."""
    model = tiny_bilm(seed=2, n_layers=1)
    options, weights = export_official(model, tmp_path)
    with h5py.File(weights, "a") as f:
        for d in (0, 1):
            f.move(f"RNN_{d}/RNN/MultiRNNCell/Cell0/LSTMCell", f"RNN_{d}/RNN/LSTMCell")
            del f[f"RNN_{d}/RNN/MultiRNNCell"]
    again = load_official(options, weights)
    for (name, a), (_, b) in zip(
        model.state_dict().items(), again.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_pretraining_builds_through_the_gate_and_refuses_a_nan_checkpoint(
    tmp_path: Path, no_build: list[Any]
) -> None:
    from dataclasses import replace

    from bilm.options import OptionsError
    from bilm.pretrain import (
        CHECKPOINT_FORMAT,
        PretrainConfig,
        build_model,
        load_training_checkpoint,
    )

    config = PretrainConfig(model=tiny_options())
    huge = replace(config.model, lstm=replace(config.model.lstm, n_layers=1_000_000))
    with pytest.raises(OptionsError, match="lstm.n_layers=1000000 exceeds the limit"):
        build_model(replace(config, model=huge), 10)
    assert no_build == []  # refused before BiLM(...) was called
    weight = torch.zeros(3, 4)
    weight[1, 2] = float("nan")
    path = tmp_path / "checkpoint.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "model": {"bilm.w": weight}}, path)
    with pytest.raises(WeightsError, match=r"dataset 'bilm.w' holds 1 non-finite value\(s\)"):
        load_training_checkpoint(path)
    torch.save({"format": CHECKPOINT_FORMAT, "model": {"bilm.w": torch.zeros(3, 4)}}, path)
    assert load_training_checkpoint(path)["model"]["bilm.w"].shape == (3, 4)
