"""The gate a biLM passes before any of its tensors exists.

A weight file is data from elsewhere; as ``safetensors`` refuses a header that does not match its
data before reading the data, the loaders of :mod:`bilm.weights` refuse, in this order:

1. options out of bounds: every size against its limit (``MAX_*`` of :mod:`bilm.options`,
   checked by :meth:`~bilm.options.BiLMOptions.validate` whenever options are read);
2. a model this machine cannot hold: :func:`check_options` computes the parameters and the
   memory a load takes from the options alone (:func:`parameter_shapes`,
   :func:`estimated_load_bytes`) and compares them with the memory available
   (:func:`available_memory`, with a margin: :data:`MEMORY_FRACTION`);
3. a weight file that is not what the options describe: every dataset's name, shape and dtype
   (:func:`check_official_datasets`, :func:`check_checkpoint_tensors`), from the file's header
   and metadata, without reading its data;
4. a weight that is not finite: each dataset as it is read (:func:`check_finite`), with no
   second copy of it.

Only then is the model built and filled. Nothing here runs at import; the checks allocate
nothing proportional to the options.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from pathlib import Path

import numpy as np

from bilm.options import BiLMOptions, OptionsError

__all__ = [
    "CHECK_CHUNK",
    "FLOAT32_BYTES",
    "MEMORY_FRACTION",
    "ModelTooLargeError",
    "WeightsError",
    "available_memory",
    "check_checkpoint_tensors",
    "check_finite",
    "check_official_datasets",
    "check_options",
    "estimated_load_bytes",
    "layout_mismatch",
    "lstm_prefixes",
    "official_layout",
    "parameter_count",
    "parameter_shapes",
]

#: Bytes of one parameter as the biLM holds it (float32, whatever the file stores).
FLOAT32_BYTES = 4
#: Share of the available memory (:func:`available_memory`) that loading a model may take. The
#: rest is for what the model is loaded for: batches, activations, the output being written,
#: and the other processes' growth between the check and the load.
MEMORY_FRACTION = 0.75
#: Values checked at a time when a weight is not finite (:func:`check_finite`): bounds the
#: temporary boolean masks to 1 MiB whatever the size of the weight.
CHECK_CHUNK = 1 << 20
#: HDF5 dtypes accepted for a weight (the official files store float32; the loader converts
#: any of these to float32).
_FLOAT_ITEMSIZES = (2, 4, 8)
#: safetensors dtypes accepted for a weight (:func:`bilm.weights.save_checkpoint` writes
#: float32, float16 or bfloat16).
_CHECKPOINT_DTYPES = frozenset({"F16", "BF16", "F32", "F64"})


class WeightsError(ValueError):
    """A weight file does not match the options, holds a non-finite weight, or cannot be read."""


class ModelTooLargeError(OptionsError):
    """The options describe a model larger than this machine can load (:func:`check_options`)."""


# ------------------------------------------------------------------ the model, from its options
def parameter_shapes(options: BiLMOptions) -> dict[str, tuple[int, ...]]:
    """The shapes of :class:`~bilm.bilm.BiLM`'s ``state_dict`` for ``options``, computed without
    building anything (``tests/bilm/test_hostile_files.py`` checks them against a built model).

    Args:
        options: the architecture.

    Returns:
        Parameter name → shape, the names of ``BiLM(options).state_dict()``.
    """
    cnn, lstm = options.char_cnn, options.lstm
    E, F, P, C = cnn.embedding_dim, cnn.n_filters, lstm.projection_dim, lstm.dim
    shapes: dict[str, tuple[int, ...]] = {"char_cnn.char_embedding.weight": (262, E)}
    for i, (width, count) in enumerate(cnn.filters):
        shapes[f"char_cnn.conv_weight.{i}"] = (count, E, width)
        shapes[f"char_cnn.conv_bias.{i}"] = (count,)
    for k in range(cnn.n_highway):
        shapes[f"char_cnn.highway.weight.{k}"] = (F, 2 * F)
        shapes[f"char_cnn.highway.bias.{k}"] = (2 * F,)
    if F != P:  # bilm-tf builds a projection only when the widths differ
        shapes["char_cnn.proj_weight"] = (F, P)
        shapes["char_cnn.proj_bias"] = (P,)
    for layer in range(lstm.n_layers):
        for direction in range(2):
            prefix = f"layers.{layer}.{direction}"
            shapes[f"{prefix}.w_input"] = (P, 4 * C)
            shapes[f"{prefix}.w_state"] = (P, 4 * C)  # hidden width = P (P <= C)
            shapes[f"{prefix}.bias"] = (4 * C,)
            if P < C:
                shapes[f"{prefix}.w_proj"] = (C, P)
    return shapes


def parameter_count(options: BiLMOptions) -> int:
    """Number of parameters of the biLM ``options`` describe (computed, nothing built)."""
    return sum(math.prod(shape) for shape in parameter_shapes(options).values())


def estimated_load_bytes(options: BiLMOptions) -> int:
    """Memory a load takes: the float32 parameters plus one read buffer as large as the
    largest of them (the loaders read one dataset at a time and copy it into the model).

    Args:
        options: the architecture.

    Returns:
        Bytes.
    """
    sizes = [math.prod(shape) for shape in parameter_shapes(options).values()]
    return FLOAT32_BYTES * (sum(sizes) + max(sizes))


def _largest_part(options: BiLMOptions) -> tuple[str, float]:
    """The options that size the largest group of parameters, and its share of all of them."""
    cnn, lstm = options.char_cnn, options.lstm
    E, F, P, C = cnn.embedding_dim, cnn.n_filters, lstm.projection_dim, lstm.dim
    parts = {
        f"lstm.n_layers={lstm.n_layers}, lstm.dim={C}, lstm.projection_dim={P}": (
            2 * lstm.n_layers * (2 * P * 4 * C + 4 * C + (C * P if P < C else 0))
        ),
        f"char_cnn.n_highway={cnn.n_highway} over the {F} filters of char_cnn.filters": (
            cnn.n_highway * (2 * F * F + 2 * F)
        ),
        "char_cnn.filters (their widths and counts)": sum(n * E * w + n for w, n in cnn.filters),
        f"the {F} filters of char_cnn.filters times lstm.projection_dim={P}": (
            (F * P + P) if F != P else 0
        ),
        f"char_cnn.embedding.dim={E}": 262 * E,
    }
    name = max(parts, key=lambda key: parts[key])
    return name, parts[name] / max(1, sum(parts.values()))


def _size(n: float) -> str:
    """Bytes for people: ``"1.5 GiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------------------- the machine
def _meminfo_available(path: Path = Path("/proc/meminfo")) -> int | None:
    """``MemAvailable`` of Linux's ``/proc/meminfo`` in bytes (memory that can be given to a
    process without swapping, page cache included), or ``None`` where unreadable."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the file counts kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Memory left under this process's cgroup limit (a container's), or ``None`` when there
    is no limit or it cannot be read (cgroup v2 ``memory.max``, else v1 ``limit_in_bytes``)."""
    for limit_file, usage_file in (
        (root / "memory.max", root / "memory.current"),
        (root / "memory" / "memory.limit_in_bytes", root / "memory" / "memory.usage_in_bytes"),
    ):
        try:
            limit_text = limit_file.read_text().strip()
            if limit_text == "max":
                return None
            limit, usage = int(limit_text), int(usage_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if limit >= 1 << 60:  # cgroup v1 writes "no limit" as a huge number
            return None
        return max(0, limit - usage)
    return None


def available_memory() -> int | None:
    """Bytes of memory this process can still take: the smaller of the machine's available
    memory (``/proc/meminfo``; ``sysconf`` elsewhere) and what its cgroup limit leaves.

    Returns:
        Bytes, or ``None`` where neither can be read (then only the limits of
        :mod:`bilm.options` bound a model).
    """
    found = [_meminfo_available(), _cgroup_headroom()]
    if found[0] is None:
        try:
            found[0] = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    known = [n for n in found if n is not None]
    return min(known) if known else None


def check_options(options: BiLMOptions, source: str = "options") -> None:
    """The gate before a biLM is built from options read from a file: the bounds of
    :mod:`bilm.options`, then the memory the model takes against what this machine has.

    Args:
        options: the architecture.
        source: where the options came from, named in errors (usually their file).

    Raises:
        OptionsError: a size out of bounds (field, value and limit named).
        ModelTooLargeError: the model needs more than :data:`MEMORY_FRACTION` of the available
            memory; the message gives both figures and the options that size most of it.
    """
    options.validate(source)
    available = available_memory()
    if available is None:
        return
    needed = estimated_load_bytes(options)
    if needed > MEMORY_FRACTION * available:
        part, share = _largest_part(options)
        raise ModelTooLargeError(
            f"{source}: the model needs about {_size(needed)} to load "
            f"({parameter_count(options):,} float32 parameters) but this machine has "
            f"{_size(available)} available, of which a load may take "
            f"{MEMORY_FRACTION:.0%}; {share:.0%} of the parameters come from {part}: lower them"
        )


# -------------------------------------------------------------------------------- the files
def lstm_prefixes(direction: int, layer: int, n_layers: int) -> list[str]:
    """The HDF5 groups that may hold one LSTM cell, preferred first: a single-layer bilm-tf
    model has no ``MultiRNNCell`` wrapper."""
    base = f"RNN_{direction}/RNN"
    names = [f"{base}/MultiRNNCell/Cell{layer}/LSTMCell"]
    if n_layers == 1:
        names.append(f"{base}/LSTMCell")
    return names


def official_layout(
    options: BiLMOptions, names: Collection[str] = ()
) -> dict[str, tuple[int, ...]]:
    """The datasets an official weight file holds for ``options`` (bilm-tf ``dump_weights``).

    Args:
        options: the architecture.
        names: the file's dataset names: where a cell may sit in either of two groups
            (:func:`lstm_prefixes`), the one the file uses.

    Returns:
        Dataset name → shape, in the order the loader reads them.
    """
    cnn, lstm = options.char_cnn, options.lstm
    E, F, P, C = cnn.embedding_dim, cnn.n_filters, lstm.projection_dim, lstm.dim
    layout: dict[str, tuple[int, ...]] = {"char_embed": (261, E)}  # no padding row
    for i, (width, count) in enumerate(cnn.filters):
        layout[f"CNN/W_cnn_{i}"] = (1, width, E, count)
        layout[f"CNN/b_cnn_{i}"] = (count,)
    for k in range(cnn.n_highway):
        layout[f"CNN_high_{k}/W_transform"] = (F, F)
        layout[f"CNN_high_{k}/W_carry"] = (F, F)
        layout[f"CNN_high_{k}/b_transform"] = (F,)
        layout[f"CNN_high_{k}/b_carry"] = (F,)
    if F != P:
        layout["CNN_proj/W_proj"] = (F, P)
        layout["CNN_proj/b_proj"] = (P,)
    present = set(names)
    for layer in range(lstm.n_layers):
        for direction in range(2):
            candidates = lstm_prefixes(direction, layer, lstm.n_layers)
            prefix = next((p for p in candidates if f"{p}/W_0" in present), candidates[0])
            layout[f"{prefix}/W_0"] = (2 * P, 4 * C)  # [input; state] × 4 gates
            layout[f"{prefix}/B"] = (4 * C,)
            if P < C:
                layout[f"{prefix}/W_P_0"] = (C, P)
    return layout


def check_official_datasets(
    options: BiLMOptions,
    datasets: Mapping[str, tuple[tuple[int, ...], np.dtype]],
    path: str | os.PathLike[str],
    source: str,
) -> dict[str, tuple[int, ...]]:
    """Match every dataset of an official weight file to the options, before building.

    Args:
        options: the architecture.
        datasets: the file's datasets: name → (shape, dtype), from its header.
        path: the weight file, named in errors.
        source: where the options came from, named in errors.

    Returns:
        The layout to read (:func:`official_layout`).

    Raises:
        WeightsError: the first of: an option the file contradicts (field, value and what the
            file holds); a dataset missing, of another shape (both shapes named) or not
            floating point; datasets the options do not use.
    """
    shapes = {name: shape for name, (shape, _) in datasets.items()}
    mismatch = layout_mismatch(options, shapes, str(path))
    if mismatch is not None:
        raise WeightsError(f"{source}: {mismatch}")
    layout = official_layout(options, shapes)
    for name, expected in layout.items():
        if name not in datasets:
            raise WeightsError(f"{path}: dataset {name!r} is missing (expected shape {expected})")
        found, dtype = datasets[name]
        if found != expected:
            raise WeightsError(
                f"{path}: dataset {name!r} has shape {found}, expected {expected} from the options"
            )
        if dtype.kind != "f" or dtype.itemsize not in _FLOAT_ITEMSIZES:
            raise WeightsError(
                f"{path}: dataset {name!r} has dtype {dtype}, expected floating point "
                "(float32 in the official files)"
            )
    unused = sorted(set(datasets) - set(layout))
    if unused:
        shown = ", ".join(unused[:3]) + (f" and {len(unused) - 3} more" if len(unused) > 3 else "")
        raise WeightsError(
            f"{source}: {path} holds {len(unused)} dataset(s) these options do not use ({shown})"
        )
    return layout


def check_checkpoint_tensors(
    options: BiLMOptions,
    tensors: Mapping[str, tuple[tuple[int, ...], str]],
    path: str | os.PathLike[str],
) -> None:
    """Match the biLM tensors of a checkpoint to its options, from the safetensors header.

    Args:
        options: the architecture (the checkpoint's metadata).
        tensors: the biLM's tensors: name → (shape, safetensors dtype such as ``"F32"``).
        path: the checkpoint, named in errors.

    Raises:
        WeightsError: tensors missing, unexpected, of another shape (up to three of each named,
            with both shapes), or not floating point.
    """
    expected = parameter_shapes(options)
    found = {name: shape for name, (shape, _) in tensors.items()}
    if expected != found:
        missing = sorted(set(expected) - set(found))
        extra = sorted(set(found) - set(expected))
        wrong = sorted(k for k in set(expected) & set(found) if expected[k] != found[k])
        detail = "; ".join(
            part
            for part in (
                f"missing {missing[:3]}" if missing else "",
                f"unexpected {extra[:3]}" if extra else "",
                ", ".join(f"{k}: expected {expected[k]}, found {found[k]}" for k in wrong[:3]),
            )
            if part
        )
        raise WeightsError(f"{path}: tensors do not match the options ({detail})")
    for name, (_, dtype) in sorted(tensors.items()):
        if dtype not in _CHECKPOINT_DTYPES:
            raise WeightsError(
                f"{path}: tensor {name!r} has dtype {dtype}, expected floating point "
                f"({', '.join(sorted(_CHECKPOINT_DTYPES))})"
            )


def check_finite(array: np.ndarray, name: str, path: str | os.PathLike[str]) -> None:
    """Refuse a weight holding NaN or infinity.

    One pass over the values in the usual case (a float64 sum, which is finite only when every
    value is); only a weight that fails it is counted, :data:`CHECK_CHUNK` values at a time.

    Args:
        array: the weight as read.
        name: its dataset or tensor name.
        path: its file.

    Raises:
        WeightsError: ``"{path}: dataset NAME holds N non-finite values (a NaN, b inf) of SIZE"``.
    """
    if array.size == 0 or math.isfinite(float(np.sum(array, dtype=np.float64))):
        return
    flat = array.reshape(-1)
    nan = inf = 0
    for start in range(0, flat.size, CHECK_CHUNK):
        chunk = flat[start : start + CHECK_CHUNK]
        nan += int(np.count_nonzero(np.isnan(chunk)))
        inf += int(np.count_nonzero(np.isinf(chunk)))
    if nan or inf:
        raise WeightsError(
            f"{path}: dataset {name!r} holds {nan + inf} non-finite value(s) ({nan} NaN, "
            f"{inf} inf) of {array.size}"
        )


# ------------------------------------------------------------------------ the layout's counts
def _groups(shapes: Mapping[str, tuple[int, ...]]) -> set[str]:
    """Every dataset name of the file and every group above one (``"a/b/c"`` gives ``"a"``,
    ``"a/b"`` and ``"a/b/c"``): one pass, so that counting layers stays linear in the file."""
    groups: set[str] = set()
    for name in shapes:
        parts = name.split("/")
        groups.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return groups


def _count(groups: set[str], *patterns: str) -> int:
    """How many consecutive indices ``i = 0, 1, ...`` name a dataset or group (``groups``,
    :func:`_groups`) by any of ``patterns`` formatted with ``i``."""
    n = 0
    while any(pattern.format(n) in groups for pattern in patterns):
        n += 1
    return n


def layout_mismatch(
    opts: BiLMOptions, shapes: Mapping[str, tuple[int, ...]], weights: str
) -> str | None:
    """The first field of ``opts`` that the file's datasets contradict, as ``"options
    FIELD=VALUE but WEIGHTS holds ..."``; ``None`` when the layout agrees (or is too incomplete
    to tell: the per-dataset checks then name what is missing)."""
    cnn, lstm = opts.char_cnn, opts.lstm
    groups = _groups(shapes)
    if "char_embed" in shapes and shapes["char_embed"][-1:] != (cnn.embedding_dim,):
        width = shapes["char_embed"][-1] if shapes["char_embed"] else None
        return (
            f"options char_cnn.embedding.dim={cnn.embedding_dim} but {weights} holds character "
            f"embeddings of width {width}"
        )
    convolutions = _count(groups, "CNN/W_cnn_{}", "CNN/b_cnn_{}")
    if convolutions != len(cnn.filters):
        return (
            f"options char_cnn.filters has {len(cnn.filters)} filter sizes but {weights} holds "
            f"{convolutions} convolutions"
        )
    for i, (width, count) in enumerate(cnn.filters):
        kernel = shapes.get(f"CNN/W_cnn_{i}", ())
        if len(kernel) == 4 and (kernel[1], kernel[3]) != (width, count):
            return (
                f"options char_cnn.filters[{i}]=[{width}, {count}] but {weights} holds "
                f"[{kernel[1]}, {kernel[3]}] (width, count)"
            )
    highway = _count(groups, "CNN_high_{}")
    if highway != cnn.n_highway:
        return (
            f"options char_cnn.n_highway={cnn.n_highway} but {weights} holds {highway} highway "
            "layer(s)"
        )
    cells = _count(groups, "RNN_0/RNN/MultiRNNCell/Cell{}")
    if cells == 0 and "RNN_0/RNN/LSTMCell" in groups:
        cells = 1  # a single-layer bilm-tf model has no MultiRNNCell wrapper
    if cells != lstm.n_layers:
        return f"options lstm.n_layers={lstm.n_layers} but {weights} holds {cells} LSTM layers"
    kernels = [shapes[f"{p}/W_0"] for p in lstm_prefixes(0, 0, cells) if f"{p}/W_0" in shapes]
    first = kernels[0] if kernels else ()  # (P + P, 4C)
    if len(first) == 2 and first[1] != 4 * lstm.dim:
        return f"options lstm.dim={lstm.dim} but {weights} holds LSTM cells of {first[1] // 4}"
    if len(first) == 2 and first[0] != 2 * lstm.projection_dim:
        return (
            f"options lstm.projection_dim={lstm.projection_dim} but {weights} holds projections "
            f"of {first[0] // 2}"
        )
    return None
