"""A deliberately straightforward reference implementation of the biLM forward pass.

Written independently of :mod:`bilm` (it shares only the character-id scheme, ``bilm.chars``) to
check the optimised :class:`bilm.BiLM` against. It follows the original TensorFlow code literally
(github.com/allenai/bilm-tf @ 7cffee2b, its last commit: ``bilm/training.py`` ``dump_weights``
writes the HDF5 layout read here, ``bilm/model.py`` ``_build_word_char_embeddings`` and
``_build_lstms`` compute the char CNN and the LSTMs; Peters et al. 2018 §3.4 describes the model):

* reads ``options.json`` as a plain dict and the official HDF5 layout with h5py, keeping TF's
  conventions (``x @ W``, LSTM gate blocks in TF order i, j, f, o, forget bias 1.0 added at run
  time, highway ``g·relu(x W_transform + b_transform) + (1 − g)·x`` with ``g = σ(x W_carry +
  b_carry)``, convolution then max-pool then activation);
* adds ``<S>``/``</S>`` around every sentence, runs the char CNN on *every* position of the padded
  batch (no dedup), runs each LSTM as a plain loop over every time step of the padded batch for
  all rows at once (no sorting, no preallocated buffers), and handles per-row lengths by masking:
  a row's state is only updated at its real positions, so the backward LSTM of a short row starts
  from zero state at its own ``</S>``;
* reset-state semantics: every sentence starts from zero state;
* removes the boundary positions and returns exactly zero at padded positions.

All arithmetic is numpy in float64 by default, so differences to the float32 library are the
library's rounding error (plus the reference's, ~1e-16).

Command line (used by ``bench_bilm.py`` to keep the reference out of the measured process)::

    python benchmarks/reference_bilm.py OPTIONS WEIGHTS SENTENCES_JSON OUT_NPZ [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from bilm.chars import word_to_char_ids

FORGET_BIAS = 1.0


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # = 1 / (1 + exp(-x)), without overflow warnings


def _read(handle: Any, name: str, dtype: np.dtype) -> np.ndarray:
    return np.asarray(handle[name][...], dtype=dtype)


def _lstm_group(handle: Any, direction: int, layer: int) -> str:
    stacked = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
    if f"{stacked}/W_0" in handle:
        return stacked
    return f"RNN_{direction}/RNN/LSTMCell"  # single-layer bilm-tf model: no MultiRNNCell


def load_reference_weights(
    options_path: str | Path, weights_path: str | Path, dtype: Any = np.float64
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read ``options.json`` (as a dict) and every weight the forward pass needs."""
    options = json.loads(Path(options_path).read_text(encoding="utf-8"))
    lstm, cnn = options["lstm"], options["char_cnn"]
    dim = int(lstm["dim"])
    proj = int(lstm.get("projection_dim", dim))
    n_filters = sum(n for _, n in cnn["filters"])
    w: dict[str, Any] = {}
    with h5py.File(weights_path, "r") as f:
        char_embed = _read(f, "char_embed", dtype)
        # Row 0 = the padding id (all-zero tokens); the file stores rows 1..261 only.
        w["char_embed"] = np.concatenate([np.zeros_like(char_embed[:1]), char_embed])
        w["conv"] = [
            (_read(f, f"CNN/W_cnn_{i}", dtype)[0], _read(f, f"CNN/b_cnn_{i}", dtype))
            for i in range(len(cnn["filters"]))
        ]  # kernel (width, E, n)
        w["highway"] = [
            {
                name: _read(f, f"CNN_high_{k}/{name}", dtype)
                for name in ("W_carry", "b_carry", "W_transform", "b_transform")
            }
            for k in range(int(cnn.get("n_highway") or 0))
        ]
        w["proj"] = None
        if n_filters != proj:
            w["proj"] = (_read(f, "CNN_proj/W_proj", dtype), _read(f, "CNN_proj/b_proj", dtype))
        w["lstm"] = []
        for layer in range(int(lstm.get("n_layers", 1))):
            cells = []
            for direction in range(2):
                group = _lstm_group(f, direction, layer)
                cell = {"W": _read(f, f"{group}/W_0", dtype), "B": _read(f, f"{group}/B", dtype)}
                cell["W_P"] = _read(f, f"{group}/W_P_0", dtype) if proj < dim else None
                cells.append(cell)
            w["lstm"].append(cells)
    return options, w


def char_cnn(ids: np.ndarray, options: dict[str, Any], w: dict[str, Any]) -> np.ndarray:
    """Token embeddings of ``ids (N, max_chars)`` (shifted char ids, 0 = padding) → ``(N, P)``."""
    cnn = options["char_cnn"]
    chars = w["char_embed"][ids]  # (N, max_chars, E)
    max_chars = chars.shape[1]
    pooled = []
    for kernel, bias in w["conv"]:
        width = kernel.shape[0]
        positions = max_chars - width + 1
        conv = bias[None, None, :]
        for k in range(width):  # valid convolution: sum over the kernel's taps
            conv = conv + chars[:, k : k + positions, :] @ kernel[k]  # (N, positions, n)
        pooled.append(conv.max(axis=1))  # max over positions, then the activation
    x = np.concatenate(pooled, axis=1)  # (N, F)
    x = np.maximum(x, 0.0) if cnn.get("activation", "relu") == "relu" else np.tanh(x)
    for hw in w["highway"]:
        gate = _sigmoid(x @ hw["W_carry"] + hw["b_carry"])
        transform = np.maximum(x @ hw["W_transform"] + hw["b_transform"], 0.0)
        x = gate * transform + (1.0 - gate) * x
    if w["proj"] is not None:
        x = x @ w["proj"][0] + w["proj"][1]
    return x


def lstm_direction(
    inputs: np.ndarray,
    mask: np.ndarray,
    cell: dict[str, Any],
    options: dict[str, Any],
    reverse: bool,
) -> np.ndarray:
    """One LSTM layer, one direction, over ``inputs (B, S, P)`` with ``mask (B, S)``.

    Every row starts from zero state; at each step all rows are computed and only the rows whose
    position is real take the new state. Outputs are zero at padded positions.
    """
    lstm = options["lstm"]
    cell_clip = lstm.get("cell_clip") or None
    proj_clip = lstm.get("proj_clip") or None
    batch, steps, _ = inputs.shape
    C = cell["W"].shape[1] // 4
    hidden = cell["W_P"].shape[1] if cell["W_P"] is not None else C
    h = np.zeros((batch, hidden), dtype=inputs.dtype)
    c = np.zeros((batch, C), dtype=inputs.dtype)
    outputs = np.zeros((batch, steps, hidden), dtype=inputs.dtype)
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        z = np.concatenate([inputs[:, t], h], axis=1) @ cell["W"] + cell["B"]  # (B, 4C)
        i, j, f, o = (z[:, k * C : (k + 1) * C] for k in range(4))  # TF order i, j, f, o
        new_c = _sigmoid(f + FORGET_BIAS) * c + _sigmoid(i) * np.tanh(j)
        if cell_clip:
            new_c = np.clip(new_c, -cell_clip, cell_clip)
        new_h = _sigmoid(o) * np.tanh(new_c)
        if cell["W_P"] is not None:
            new_h = new_h @ cell["W_P"]
            if proj_clip:
                new_h = np.clip(new_h, -proj_clip, proj_clip)
        active = mask[:, t][:, None]
        c = np.where(active, new_c, c)
        h = np.where(active, new_h, h)
        outputs[:, t] = np.where(active, new_h, 0.0)
    return outputs


def reference_forward(
    options: dict[str, Any], w: dict[str, Any], sentences: Sequence[Sequence[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """The biLM on ``sentences`` with already loaded weights; see :func:`reference_layers`."""
    max_chars = int(options["char_cnn"].get("max_characters_per_token", 50))
    proj = w["lstm"][0][0]["W"].shape[0] // 2
    lengths = [len(s) for s in sentences]
    batch, time = len(sentences), max(lengths, default=0)
    n_layers = len(w["lstm"])
    dtype = w["char_embed"].dtype
    if batch == 0:
        return np.zeros((n_layers + 1, 0, time, 2 * proj), dtype), np.zeros((0, time), bool)

    # Character ids with sentence markers, right-padded with all-zero (non-existent) tokens.
    steps = time + 2
    ids = np.zeros((batch, steps, max_chars), dtype=np.int64)
    for b, sentence in enumerate(sentences):
        for t, token in enumerate(["<S>", *sentence, "</S>"]):
            ids[b, t] = word_to_char_ids(token, max_chars)
    full_mask = (ids > 0).any(axis=2)  # (B, S)

    x = char_cnn(ids.reshape(batch * steps, max_chars), options, w).reshape(batch, steps, -1)
    x = x * full_mask[:, :, None]
    layers = [np.concatenate([x, x], axis=2)]
    inputs = [x, x]
    skip = bool(options["lstm"].get("use_skip_connections", False))
    for layer_index, cells in enumerate(w["lstm"]):
        outputs = []
        for direction, cell in enumerate(cells):
            out = lstm_direction(inputs[direction], full_mask, cell, options, direction == 1)
            if layer_index > 0 and skip:
                out = out + inputs[direction]  # residual from the second layer on
            outputs.append(out * full_mask[:, :, None])
        layers.append(np.concatenate(outputs, axis=2))  # [forward; backward]
        inputs = outputs

    # Remove <S> and </S>: real token k of row b sits at position k + 1.
    result = np.zeros((n_layers + 1, batch, time, 2 * proj), dtype)
    mask = np.zeros((batch, time), dtype=bool)
    for b, n in enumerate(lengths):
        for layer_index, full in enumerate(layers):
            result[layer_index, b, :n] = full[b, 1 : n + 1]
        mask[b, :n] = True
    return result, mask


def reference_layers(
    options_path: str | Path,
    weights_path: str | Path,
    sentences: Sequence[Sequence[str]],
    dtype: Any = np.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the reference biLM (zero initial state per sentence).

    Args:
        options_path: official ``options.json``.
        weights_path: official HDF5 weight file.
        sentences: tokenised sentences (lists of strings; may be empty).
        dtype: arithmetic precision (float64 by default).

    Returns:
        ``layers (L + 1, B, T, 2P)`` (token layer ``[x; x]``, then each biLSTM layer
        ``[forward; backward]``; boundaries removed; 0 at padding) and ``mask (B, T)`` bool.
    """
    options, w = load_reference_weights(options_path, weights_path, dtype)
    return reference_forward(options, w, sentences)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("options")
    parser.add_argument("weights")
    parser.add_argument("sentences", help="JSON list of token lists")
    parser.add_argument("out", help="output .npz with arrays layers, mask")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    args = parser.parse_args(argv)
    sentences = json.loads(Path(args.sentences).read_text(encoding="utf-8"))
    layers, mask = reference_layers(args.options, args.weights, sentences, np.dtype(args.dtype))
    np.savez(args.out, layers=layers, mask=mask)


if __name__ == "__main__":
    main()
