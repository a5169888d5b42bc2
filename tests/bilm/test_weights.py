"""Official HDF5 layout in and out, own checkpoints, and clear errors on mismatched files."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from bilm import (
    BiLMOptions,
    OptionsError,
    WeightsError,
    batch_to_ids,
    export_official,
    load_checkpoint,
    load_official,
    save_checkpoint,
)
from tests.bilm.helpers import SENTENCES, tiny_bilm
from tests.conftest import shared_path


def outputs(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model(batch_to_ids(SENTENCES)).layers


@pytest.mark.parametrize(
    "kwargs", [{}, {"n_highway": 0}, {"skip": False}, {"filters": ((1, 4), (2, 4))}]
)
def test_export_then_load_round_trip(tmp_path: Path, kwargs: dict[str, object]) -> None:
    model = tiny_bilm(seed=3, **kwargs)
    options, weights = export_official(model, tmp_path)
    assert json.loads(options.read_text())["char_cnn"]["n_characters"] == 262
    with h5py.File(weights, "r") as f:
        assert f["char_embed"].shape == (261, 4)  # no padding row, as the official files
        assert f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"].shape == (16, 96)
    again = load_official(options, weights)
    for (name, a), (_, b) in zip(
        model.state_dict().items(), again.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(a, b, atol=0, rtol=0, msg=name)
    torch.testing.assert_close(outputs(again), outputs(model), atol=0, rtol=0)


@pytest.mark.shared
def test_official_fixture_export_is_byte_for_byte_the_same_arrays(tmp_path: Path) -> None:
    src = shared_path("fixtures", "elmo", "lm_weights.hdf5")
    model = load_official(shared_path("fixtures", "elmo", "options.json"), src)
    _, out = export_official(model, tmp_path)
    with h5py.File(src, "r") as a, h5py.File(out, "r") as b:
        names: list[str] = []
        a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for name in names:
            # The forget-bias +1/-1 round trip may move the last bit of B.
            np.testing.assert_allclose(b[name][...], a[name][...], atol=1e-7, rtol=0)


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    model = tiny_bilm(seed=5)
    path = save_checkpoint(model, tmp_path / "m.safetensors", extra={"step": "7"})
    assert not (tmp_path / "m.safetensors.tmp").exists()
    again = load_checkpoint(path, state="carry")
    assert again.state == "carry" and again.options == model.options
    torch.testing.assert_close(outputs(again), outputs(model), atol=0, rtol=0)


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("lstm", "n_layers", 1, "options lstm.n_layers=1 but {w} holds 2 LSTM layers"),
        ("lstm", "n_layers", 3, "options lstm.n_layers=3 but {w} holds 2 LSTM layers"),
        ("char_cnn", "n_highway", 0, "options char_cnn.n_highway=0 but {w} holds 1 highway"),
        ("char_cnn", "n_highway", 2, "options char_cnn.n_highway=2 but {w} holds 1 highway"),
        ("char_cnn", "filters", [[1, 4], [2, 6]], "has 2 filter sizes but {w} holds 3 conv"),
        ("char_cnn", "filters", [[1, 4], [2, 6], [3, 7]], "filters[2]=[3, 7] but {w} holds [3, 6]"),
        ("char_cnn", "embedding", {"dim": 8}, "embedding.dim=8 but {w} holds character embed"),
        ("lstm", "dim", 32, "options lstm.dim=32 but {w} holds LSTM cells of 24"),
        (
            "lstm",
            "projection_dim",
            4,
            "options lstm.projection_dim=4 but {w} holds projections of 8",
        ),
    ],
)
def test_options_that_do_not_match_the_weights_name_the_field_and_both_files(
    tmp_path: Path, section: str, key: str, value: object, expected: str
) -> None:
    """Fewer layers in the options used to drop trained layers silently."""
    _, weights = export_official(tiny_bilm(), tmp_path)
    other = BiLMOptions.from_json(tmp_path / "options.json").to_dict()
    other[section][key] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(other))
    with pytest.raises(WeightsError) as caught:
        load_official(bad, weights)
    message = str(caught.value)
    assert message.startswith(f"{bad}: ") and expected.format(w=weights) in message


def test_datasets_the_options_do_not_use_are_an_error(tmp_path: Path) -> None:
    options, weights = export_official(tiny_bilm(), tmp_path)
    with h5py.File(weights, "a") as f:
        f["CNN_high_0/extra"] = np.zeros(3, dtype=np.float32)
    with pytest.raises(WeightsError) as caught:
        load_official(options, weights)
    assert str(caught.value) == (
        f"{options}: {weights} holds 1 dataset(s) these options do not use (CNN_high_0/extra)"
    )


def test_a_shape_the_layout_does_not_explain_is_still_named(tmp_path: Path) -> None:
    options, weights = export_official(tiny_bilm(), tmp_path)
    with h5py.File(weights, "a") as f:
        del f["CNN_proj/b_proj"]
        f["CNN_proj/b_proj"] = np.zeros(5, dtype=np.float32)
    with pytest.raises(WeightsError, match=r"'CNN_proj/b_proj' has shape \(5,\), expected \(8,\)"):
        load_official(options, weights)


def test_missing_dataset_is_named(tmp_path: Path) -> None:
    options, weights = export_official(tiny_bilm(), tmp_path)
    with h5py.File(weights, "a") as f:
        del f["CNN_high_0/W_carry"]
    with pytest.raises(WeightsError, match="'CNN_high_0/W_carry' is missing"):
        load_official(options, weights)


def test_truncated_or_garbage_hdf5(tmp_path: Path) -> None:
    options, weights = export_official(tiny_bilm(), tmp_path)
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="weights.hdf5"):
        load_official(options, weights)
    weights.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(WeightsError, match="not a readable HDF5"):
        load_official(options, weights)


def test_bad_options_files(tmp_path: Path) -> None:
    path = tmp_path / "options.json"
    path.write_text('{"lstm": {"dim": 4}, ')
    with pytest.raises(OptionsError, match=r"options.json:1: not valid JSON"):
        BiLMOptions.from_json(path)
    path.write_text('{"lstm": {"dim": 4}}')
    with pytest.raises(OptionsError, match="missing key 'char_cnn'"):
        BiLMOptions.from_json(path)
    d = tiny_bilm().options.to_dict()
    d["char_cnn"]["n_characters"] = 300
    with pytest.raises(OptionsError, match="n_characters must be 261 or 262"):
        BiLMOptions.from_dict(d)
    # 261 (training files) is accepted: the HDF5 has 261 rows either way.
    d["char_cnn"]["n_characters"] = 261
    assert BiLMOptions.from_dict(d).char_cnn.n_characters == 261


def test_checkpoint_mismatch_and_garbage(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "x.safetensors"
    save_file(
        {"a": torch.zeros(2)},
        str(path),
        metadata={"options": json.dumps(tiny_bilm().options.to_dict())},
    )
    with pytest.raises(WeightsError, match="do not match the options"):
        load_checkpoint(path)
    path.write_bytes(b"garbage")
    with pytest.raises(WeightsError, match="not a readable safetensors"):
        load_checkpoint(path)
    with pytest.raises(WeightsError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "absent.safetensors")
