"""Weights in and out: the official ELMo HDF5 layout, the project's checkpoint, initialisation.

Official layout (written by bilm-tf ``bilm/training.py`` ``dump_weights``)::

    char_embed                                   (261, E)        no padding row
    CNN/W_cnn_{i}, CNN/b_cnn_{i}                 (1, w, E, n), (n,)
    CNN_high_{k}/W_carry|W_transform, b_*        (F, F), (F,)
    CNN_proj/W_proj, b_proj                      (F, P), (P,)    only when F != P
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0  (P + P, 4C)  gates i, j, f, o
    .../LSTMCell/B                               (4C,)           without TF's forget bias 1.0
    .../LSTMCell/W_P_0                           (C, P)          only when P < C

Our checkpoint is a ``safetensors`` file (no pickle) whose metadata holds ``options.json``.

Every loader here passes the gate of :mod:`bilm.checks` before it builds the model: options
within bounds, a model that fits this machine's memory, every dataset's name, shape and dtype
as the options imply (from the file's header); then each weight is refused if not finite as it
is read.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from bilm.bilm import BiLM, StatePolicy
from bilm.checks import (
    WeightsError,
    check_checkpoint_tensors,
    check_finite,
    check_official_datasets,
    check_options,
    official_layout,
)
from bilm.checks import lstm_prefixes as _lstm_prefixes
from bilm.files import atomic_path
from bilm.options import BiLMOptions, OptionsError

#: TF LSTMCell gate block order is [i, j, f, o]; ours is [i, f, o, j] (sigmoid gates first).
TF_BLOCK_FOR_OURS = (0, 2, 3, 1)
FORGET_BIAS = 1.0  # TF LSTMCell forget_bias, added at run time, not stored
_OURS_FORGET = 1  # index of the forget block in our order


#: Datasets an official file may hold beyond those its options describe before the loader
#: stops listing them: a few stray ones are named in the error, a file of millions is refused
#: without listing them all.
EXTRA_DATASETS = 1000


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - h5py is a core dependency
        raise ImportError("reading official ELMo weights needs h5py: pip install h5py") from exc
    return h5py


def build_bilm(
    options: BiLMOptions,
    state: StatePolicy = "reset",
    dropout: float = 0.0,
    source: str = "options",
) -> BiLM:
    """A biLM with uninitialised weights, built only after the gate
    (:func:`bilm.checks.check_options`: bounds, then memory).

    For options read from a file by a caller that fills the weights itself (e.g. with
    :func:`init_weights`); the loaders of this module check the file too.

    Args:
        options: the architecture.
        state: LSTM state policy (see :mod:`bilm.bilm`).
        dropout: see :class:`~bilm.bilm.BiLM`.
        source: where the options came from, named in errors.

    Raises:
        OptionsError: a size out of bounds, or a model larger than this machine can load
            (:class:`~bilm.checks.ModelTooLargeError`).
    """
    check_options(options, source)
    return BiLM(options, state=state, dropout=dropout)


def _open_hdf5(path: Path) -> Any:
    """An open HDF5 file (read-only), or :class:`WeightsError`."""
    try:
        return _h5py().File(path, "r")
    except (OSError, ValueError) as exc:
        raise WeightsError(f"{path}: not a readable HDF5 file ({exc})") from None


def _datasets(handle: Any, path: Path, expected: int) -> dict[str, tuple[tuple[int, ...], Any]]:
    """Every dataset of an open HDF5 file, from its header: name → (shape, dtype).

    Args:
        handle: the open file.
        path: the file, named in errors.
        expected: how many datasets the options describe.

    Raises:
        WeightsError: the header is unreadable, holds more than ``expected`` +
            :data:`EXTRA_DATASETS` datasets, or a dataset stores its data outside the file
            (external or virtual storage: another file would be read).
    """
    h5py = _h5py()
    limit = expected + EXTRA_DATASETS
    found: dict[str, tuple[tuple[int, ...], Any]] = {}

    def visit(name: str, item: Any) -> bool | None:
        if isinstance(item, h5py.Dataset):
            if item.is_virtual or item.external:
                raise WeightsError(
                    f"{path}: dataset {name!r} keeps its data outside the file (external or "
                    "virtual storage); weight files hold their own data"
                )
            found[name] = (tuple(item.shape), item.dtype)
            if len(found) > limit:
                return True  # stops the visit
        return None

    try:
        handle.visititems(visit)
    except (OSError, RuntimeError, KeyError) as exc:
        raise WeightsError(f"{path}: cannot list the datasets ({exc})") from None
    if len(found) > limit:
        raise WeightsError(
            f"{path}: holds more than {limit} datasets; the options describe {expected}"
        )
    return found


class _Reader:
    def __init__(self, handle: Any, path: Path) -> None:
        self.handle, self.path = handle, path

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """The dataset as float32, refused if missing, of another shape or not finite."""
        if name not in self.handle:
            raise WeightsError(f"{self.path}: dataset {name!r} is missing (expected shape {shape})")
        data = self.handle[name]
        if tuple(data.shape) != shape:
            raise WeightsError(
                f"{self.path}: dataset {name!r} has shape {tuple(data.shape)}, "
                f"expected {shape} from the options"
            )
        try:
            with np.errstate(over="ignore"):  # a float64 beyond float32: inf, named below
                array = np.asarray(data[...], dtype=np.float32)
        except (OSError, ValueError, TypeError) as exc:
            raise WeightsError(f"{self.path}: cannot read dataset {name!r} ({exc})") from None
        check_finite(array, name, self.path)
        return array

    def first(self, names: list[str], suffix: str) -> str:
        for name in names:
            if f"{name}/{suffix}" in self.handle:
                return name
        return names[0]


def _copy(param: Tensor, array: np.ndarray) -> None:
    with torch.no_grad():
        param.copy_(torch.from_numpy(array))


def _check_official(opts: BiLMOptions, handle: Any, path: Path, source: str) -> None:
    """The file's datasets against the options, from its header (nothing read yet)."""
    datasets = _datasets(handle, path, len(official_layout(opts)))
    check_official_datasets(opts, datasets, path, source)


def _fill_official(bilm: BiLM, handle: Any, path: Path) -> None:
    """Copy a checked official file into ``bilm``, dataset by dataset, each checked finite."""
    opts = bilm.options
    cnn, lstm = opts.char_cnn, opts.lstm
    E, F, P, C = cnn.embedding_dim, cnn.n_filters, lstm.projection_dim, lstm.dim
    r = _Reader(handle, path)
    cc = bilm.char_cnn
    with torch.no_grad():
        cc.char_embedding.weight[0].zero_()
    _copy(cc.char_embedding.weight[1:], r.get("char_embed", (261, E)))
    for i, (w, n) in enumerate(cnn.filters):
        kernel = r.get(f"CNN/W_cnn_{i}", (1, w, E, n))[0]  # (w, E, n)
        _copy(cc.conv_weight[i], np.ascontiguousarray(kernel.transpose(2, 1, 0)))  # (n, E, w)
        _copy(cc.conv_bias[i], r.get(f"CNN/b_cnn_{i}", (n,)))
    for k in range(cnn.n_highway):
        g = f"CNN_high_{k}"
        _copy(cc.highway.weight[k][:, :F], r.get(f"{g}/W_transform", (F, F)))
        _copy(cc.highway.weight[k][:, F:], r.get(f"{g}/W_carry", (F, F)))
        _copy(cc.highway.bias[k][:F], r.get(f"{g}/b_transform", (F,)))
        _copy(cc.highway.bias[k][F:], r.get(f"{g}/b_carry", (F,)))
    if cc.proj_weight is not None and cc.proj_bias is not None:
        _copy(cc.proj_weight, r.get("CNN_proj/W_proj", (F, P)))
        _copy(cc.proj_bias, r.get("CNN_proj/b_proj", (P,)))
    hidden = bilm.lstms[0][0].hidden_dim
    for layer_index, layer in enumerate(bilm.lstms):
        for d, cell in enumerate(layer):
            prefix = r.first(_lstm_prefixes(d, layer_index, lstm.n_layers), "W_0")
            kernel = r.get(f"{prefix}/W_0", (P + hidden, 4 * C))
            bias = r.get(f"{prefix}/B", (4 * C,)).copy()
            bias[2 * C : 3 * C] += FORGET_BIAS  # TF block 2 = forget gate
            for ours, tf in enumerate(TF_BLOCK_FOR_OURS):
                cols = slice(tf * C, (tf + 1) * C)
                dst = slice(ours * C, (ours + 1) * C)
                _copy(cell.w_input[:, dst], kernel[:P, cols])
                _copy(cell.w_state[:, dst], kernel[P:, cols])
                _copy(cell.bias[dst], bias[cols])
            del kernel
            if cell.w_proj is not None:
                _copy(cell.w_proj, r.get(f"{prefix}/W_P_0", (C, P)))


def load_official_weights(
    bilm: BiLM, weights: str | os.PathLike[str], options_source: str | None = None
) -> BiLM:
    """Copy an official ELMo HDF5 file into ``bilm`` (whose options must match the file).

    The file must hold exactly what the options describe: fewer or more LSTM layers, highway
    layers or convolutions, other widths, or datasets the options do not use are an error,
    never layers silently dropped. All of that is checked from the file's header before any
    weight is copied; a weight that is not finite is refused as it is read (``bilm`` then holds
    part of the file: discard it).

    Args:
        bilm: the model, built from the options.
        weights: path of the ``.hdf5`` weight file.
        options_source: where the options came from (their file), named in errors.

    Raises:
        WeightsError: the options and the file disagree (the field and both values named, and
            both files), a dataset is missing, has another shape (both shapes named), is not
            floating point or is not used by the options, a weight holds NaN or infinity (the
            dataset and the count named), or the file is unreadable (truncated, not HDF5).
    """
    path = Path(weights)
    source = options_source or "the model's options"
    with _open_hdf5(path) as handle:
        _check_official(bilm.options, handle, path, source)
        _fill_official(bilm, handle, path)
    bilm.reset_states()
    return bilm


def load_official(
    options: str | os.PathLike[str],
    weights: str | os.PathLike[str],
    state: StatePolicy = "reset",
) -> BiLM:
    """Build a :class:`BiLM` from an official ``options.json`` + HDF5 weight file.

    Nothing is built before the gate (:mod:`bilm.checks`) passed: the options within bounds,
    the model within this machine's memory, the file's every dataset as the options imply.

    Args:
        options: path of ``options.json``.
        weights: path of the ``.hdf5`` weight file.
        state: LSTM state policy (see :mod:`bilm.bilm`).

    Returns:
        The biLM in eval mode.

    Raises:
        OptionsError: the options are unreadable or out of bounds, or describe a model larger
            than this machine can load (:class:`~bilm.checks.ModelTooLargeError`).
        WeightsError: the file does not match the options, holds a non-finite weight, or is
            unreadable (:func:`load_official_weights`).
    """
    opts = BiLMOptions.from_json(options)
    source = str(options)
    check_options(opts, source)
    path = Path(weights)
    with _open_hdf5(path) as handle:
        _check_official(opts, handle, path, source)
        bilm = BiLM(opts, state=state)
        _fill_official(bilm, handle, path)
    bilm.reset_states()
    return bilm.eval()


def _official_arrays(bilm: BiLM) -> Iterator[tuple[str, np.ndarray]]:
    opts = bilm.options
    cnn, lstm = opts.char_cnn, opts.lstm
    F, C = cnn.n_filters, lstm.dim
    cc = bilm.char_cnn

    def arr(t: Tensor) -> np.ndarray:
        return t.detach().float().cpu().numpy()

    yield "char_embed", arr(cc.char_embedding.weight[1:])
    for i in range(len(cnn.filters)):
        yield f"CNN/W_cnn_{i}", arr(cc.conv_weight[i]).transpose(2, 1, 0)[None]
        yield f"CNN/b_cnn_{i}", arr(cc.conv_bias[i])
    for k in range(cnn.n_highway):
        w, b = arr(cc.highway.weight[k]), arr(cc.highway.bias[k])
        yield f"CNN_high_{k}/W_transform", w[:, :F]
        yield f"CNN_high_{k}/W_carry", w[:, F:]
        yield f"CNN_high_{k}/b_transform", b[:F]
        yield f"CNN_high_{k}/b_carry", b[F:]
    if cc.proj_weight is not None and cc.proj_bias is not None:
        yield "CNN_proj/W_proj", arr(cc.proj_weight)
        yield "CNN_proj/b_proj", arr(cc.proj_bias)
    for layer_index, layer in enumerate(bilm.lstms):
        for d, cell in enumerate(layer):
            prefix = _lstm_prefixes(d, layer_index, 2)[0]
            w = np.concatenate([arr(cell.w_input), arr(cell.w_state)], axis=0)
            b = arr(cell.bias).copy()
            tf_w, tf_b = np.empty_like(w), np.empty_like(b)
            for ours, tf in enumerate(TF_BLOCK_FOR_OURS):
                tf_w[:, tf * C : (tf + 1) * C] = w[:, ours * C : (ours + 1) * C]
                tf_b[tf * C : (tf + 1) * C] = b[ours * C : (ours + 1) * C]
            tf_b[2 * C : 3 * C] -= FORGET_BIAS
            yield f"{prefix}/W_0", tf_w
            yield f"{prefix}/B", tf_b
            if cell.w_proj is not None:
                yield f"{prefix}/W_P_0", arr(cell.w_proj)


def export_official(bilm: BiLM, out_dir: str | Path, n_characters: int = 262) -> tuple[Path, Path]:
    """Write ``options.json`` + ``weights.hdf5`` in the official layout.

    Args:
        bilm: the model.
        out_dir: directory to create/fill.
        n_characters: written to ``options.json``; 262 for inference (the file always stores 261
            char rows), 261 if the file is meant for bilm-tf training code.

    Returns:
        ``(options_path, weights_path)``. Each file is written atomically (:mod:`bilm.files`).
    """
    h5py = _h5py()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options_path, weights_path = out / "options.json", out / "weights.hdf5"
    with atomic_path(weights_path) as tmp, h5py.File(tmp, "w") as handle:
        for name, array in _official_arrays(bilm):
            handle.create_dataset(name, data=np.ascontiguousarray(array, dtype=np.float32))
    bilm.options.to_json(options_path, n_characters=n_characters)
    return options_path, weights_path


# ---------------------------------------------------------------------- own checkpoint
#: Tensors under this prefix in a checkpoint belong to the LM softmax (pretraining), not the biLM.
HEAD_PREFIX = "lm_head."


def save_checkpoint(
    bilm: BiLM,
    path: str | os.PathLike[str],
    extra: Mapping[str, str] | None = None,
    extra_tensors: Mapping[str, Tensor] | None = None,
    dtype: torch.dtype = torch.float32,
) -> Path:
    """Save weights + options as one ``safetensors`` file, atomically (:mod:`bilm.files`).

    Args:
        bilm: the model.
        path: destination file (``.safetensors``).
        extra: extra string metadata (e.g. training step, corpus, vocabulary).
        extra_tensors: more tensors, named under :data:`HEAD_PREFIX` (e.g. the LM softmax).
        dtype: storage dtype of floating-point tensors (float16 halves the file; loading
            always gives float32).
    """
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"format": "elmo-bench-bilm/1", "options": json.dumps(bilm.options.to_dict())}
    metadata.update(extra or {})
    tensors = dict(bilm.state_dict())
    for name, value in (extra_tensors or {}).items():
        if not name.startswith(HEAD_PREFIX):
            raise ValueError(f"extra tensor {name!r} must be named {HEAD_PREFIX}*")
        tensors[name] = value
    tensors = {
        k: (v.detach().to(dtype) if v.is_floating_point() else v.detach()).contiguous().cpu()
        for k, v in tensors.items()
    }
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
    return path


def _safe_open(path: str | Path) -> Any:
    """A checkpoint opened with ``safetensors`` (which checks its header against its size), or
    :class:`WeightsError`."""
    from safetensors import safe_open

    try:
        return safe_open(str(path), framework="pt")
    except FileNotFoundError:
        raise WeightsError(f"{path}: no such checkpoint") from None
    except Exception as exc:  # safetensors raises its own error types
        raise WeightsError(f"{path}: not a readable safetensors checkpoint ({exc})") from None


def _read_tensor(handle: Any, name: str, path: str | Path) -> Tensor:
    """One tensor of an open checkpoint as float (when floating point), checked finite."""
    try:
        tensor = handle.get_tensor(name)
    except Exception as exc:  # safetensors raises its own error types
        raise WeightsError(f"{path}: cannot read tensor {name!r} ({exc})") from None
    if tensor.is_floating_point():
        tensor = tensor.float()
        check_finite(tensor.numpy(), name, path)
    return tensor


def load_checkpoint_tensors(path: str | Path) -> dict[str, Tensor]:
    """All tensors of a checkpoint as float32 (biLM and, if present, :data:`HEAD_PREFIX`).

    Raises:
        WeightsError: the file is missing or unreadable, or a tensor holds NaN or infinity.
    """
    with _safe_open(path) as handle:
        return {name: _read_tensor(handle, name, path) for name in handle.keys()}


def read_checkpoint_metadata(path: str | Path) -> dict[str, str]:
    """The metadata of a checkpoint written by :func:`save_checkpoint`."""
    with _safe_open(path) as handle:
        return dict(handle.metadata() or {})


def load_checkpoint(path: str | Path, state: StatePolicy = "reset") -> BiLM:
    """Load a checkpoint written by :func:`save_checkpoint` (eval mode).

    Nothing is built before the gate (:mod:`bilm.checks`) passed: the options of the metadata
    within bounds and within this machine's memory, every biLM tensor's name, shape and dtype
    (from the safetensors header) as they imply. Each tensor is then read, checked finite and
    copied on its own; the softmax of a language model (:data:`HEAD_PREFIX`) is not read.

    Raises:
        WeightsError: the file is missing or unreadable, has no options, its tensors do not
            match them, or a tensor holds NaN or infinity (its name and the count named).
        OptionsError: the options are out of bounds or too large for this machine.
    """
    metadata = read_checkpoint_metadata(path)
    if "options" not in metadata:
        raise WeightsError(f"{path}: checkpoint has no 'options' metadata (not an elmo-bench bilm)")
    source = f"{path} (metadata)"
    try:
        data = json.loads(metadata["options"])
    except json.JSONDecodeError as exc:
        raise OptionsError(f"{source}: options are not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise OptionsError(f"{source}: options are not a JSON object")
    options = BiLMOptions.from_dict(data, source=source)
    check_options(options, source)
    with _safe_open(path) as handle:
        header: dict[str, tuple[tuple[int, ...], str]] = {}
        for name in handle.keys():
            if not name.startswith(HEAD_PREFIX):
                part = handle.get_slice(name)
                header[name] = (tuple(part.get_shape()), str(part.get_dtype()))
        check_checkpoint_tensors(options, header, path)
        bilm = BiLM(options, state=state)
        params = bilm.state_dict()
        with torch.no_grad():
            for name in header:
                params[name].copy_(_read_tensor(handle, name, path))
    bilm.reset_states()
    return bilm.eval()


# ---------------------------------------------------------------------- initialisation
def init_weights(bilm: BiLM, seed: int | None = None) -> BiLM:
    """Initialise as bilm-tf ``bilm/training.py`` does.

    char_embed U(−1, 1); conv W U(−0.05, 0.05) for relu, N(0, 1/(w·E)) for tanh; highway W
    N(0, 1/F), b_carry −2, b_transform 0; projection N(0, 1/F); LSTM kernels Glorot-uniform over
    TF's fused ``(P + P, 4C)`` kernel, bias 0 (+1 forget bias folded in), projection Glorot.
    """
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    opts = bilm.options
    cnn, F = opts.char_cnn, opts.char_cnn.n_filters
    cc = bilm.char_cnn

    def uniform(t: Tensor, bound: float) -> None:
        t.copy_(torch.rand(t.shape, generator=gen) * (2 * bound) - bound)

    def normal(t: Tensor, std: float) -> None:
        t.copy_(torch.randn(t.shape, generator=gen) * std)

    with torch.no_grad():
        uniform(cc.char_embedding.weight, 1.0)
        cc.char_embedding.weight[0].zero_()
        for (w, _), weight, bias in zip(cnn.filters, cc.conv_weight, cc.conv_bias, strict=True):
            if cnn.activation == "relu":
                uniform(weight, 0.05)
            else:
                normal(weight, math.sqrt(1.0 / (w * cnn.embedding_dim)))
            bias.zero_()
        for weight, bias in zip(cc.highway.weight, cc.highway.bias, strict=True):
            normal(weight, math.sqrt(1.0 / F))
            bias[:F].zero_()
            bias[F:].fill_(-2.0)
        if cc.proj_weight is not None and cc.proj_bias is not None:
            normal(cc.proj_weight, math.sqrt(1.0 / F))
            cc.proj_bias.zero_()
        for layer in bilm.lstms:
            for cell in layer:
                fan_in = cell.input_dim + cell.hidden_dim
                bound = math.sqrt(6.0 / (fan_in + 4 * cell.cell_dim))
                uniform(cell.w_input, bound)
                uniform(cell.w_state, bound)
                cell.bias.zero_()
                C = cell.cell_dim
                cell.bias[_OURS_FORGET * C : (_OURS_FORGET + 1) * C] = FORGET_BIAS
                if cell.w_proj is not None:
                    uniform(cell.w_proj, math.sqrt(6.0 / (C + cell.hidden_dim)))
    bilm.reset_states()
    return bilm
