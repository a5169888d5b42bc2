"""The biLM's hyper-parameters, read from and written to the official ``options.json``.

Schema: allennlp v2.10.1 ``allennlp/modules/elmo.py`` and bilm-tf ``bilm/model.py``. Every width of
the network is derived from these fields; nothing else in the library types a dimension.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from bilm.files import write_json

Activation = Literal["relu", "tanh"]

# ------------------------------------------------------------------------------------ limits
# Every size an options file can ask for has a finite limit, checked by BiLMOptions.validate
# before anything is built, so that a hostile or mistyped file is refused in microseconds
# instead of taking the machine's memory. The largest published ELMo
# (elmo_2x4096_512_2048cnn_2xhighway) has 2 layers of 4096-d cells with 512-d projections,
# 7 filter widths up to 7 summing to 2048 filters (1024 of the widest), 2 highway layers,
# 16-d character embeddings and 50 characters per token; each limit is 10 times that. What
# the limits still allow together can exceed a machine: bilm.checks compares the model's
# memory with what the machine has.

#: ``lstm.n_layers``: 10 × the published 2.
MAX_LSTM_LAYERS = 20
#: ``lstm.dim`` (the memory cell C): 10 × the published 4096.
MAX_LSTM_DIM = 40_960
#: ``lstm.projection_dim`` (P, the width of every exposed layer's halves): 10 × the published 512.
MAX_PROJECTION_DIM = 5_120
#: ``char_cnn.n_highway``: 10 × the published 2.
MAX_HIGHWAY_LAYERS = 20
#: ``char_cnn.embedding.dim`` (E): 10 × the published 16.
MAX_CHAR_EMBEDDING_DIM = 160
#: Entries of ``char_cnn.filters`` (filter widths): 10 × the published 7.
MAX_FILTER_SIZES = 70
#: Width of one filter, in characters: 10 × the published widest, 7.
MAX_FILTER_WIDTH = 70
#: Filters of one width: 10 × the published largest, 1024.
MAX_FILTER_COUNT = 10_240
#: All filters together (F, the width of the highway layers): 10 × the published 2048.
MAX_TOTAL_FILTERS = 20_480
#: ``char_cnn.max_characters_per_token``: 10 × the published 50 (it sizes every batch's
#: character ids: batch × tokens × this).
MAX_CHARACTERS_PER_TOKEN = 500
#: Size of an ``options.json`` file, read whole: the published ones are under 1 KB, and a
#: valid file with every list at its limit is far below this.
MAX_OPTIONS_FILE_BYTES = 1 << 20


class OptionsError(ValueError):
    """An ``options.json`` is missing a field or holds an unusable value."""


@dataclass(frozen=True)
class CharCNNOptions:
    """Character CNN of the token encoder.

    Defaults are the published ``elmo_2x4096_512_2048cnn_2xhighway_options.json``.
    """

    embedding_dim: int = 16
    filters: tuple[tuple[int, int], ...] = (
        (1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024),
    )  # fmt: skip
    n_highway: int = 2
    activation: Activation = "relu"
    # 262 at inference (row 0 = padding), 261 in training files (bilm-tf README).
    n_characters: int = 262
    max_characters_per_token: int = 50

    @property
    def n_filters(self) -> int:
        """Total number of convolution filters, the width of the highway layers (F)."""
        return sum(n for _, n in self.filters)


@dataclass(frozen=True)
class LSTMOptions:
    """Stacked LSTMs with projection (one stack per direction). Defaults: the published model."""

    dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: float | None = 3.0
    proj_clip: float | None = 3.0
    use_skip_connections: bool = True


@dataclass(frozen=True)
class BiLMOptions:
    """All hyper-parameters of a biLM: ``lstm`` and ``char_cnn`` as in ``options.json``."""

    lstm: LSTMOptions = field(default_factory=LSTMOptions)
    char_cnn: CharCNNOptions = field(default_factory=CharCNNOptions)

    @property
    def output_dim(self) -> int:
        """Width of every exposed layer: forward and backward projections concatenated (2P)."""
        return 2 * self.lstm.projection_dim

    @property
    def num_layers(self) -> int:
        """Exposed layers: the (duplicated) token layer plus one per biLSTM layer (L + 1)."""
        return self.lstm.n_layers + 1

    # ----------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "options") -> BiLMOptions:
        """Build from the parsed ``options.json`` structure.

        Args:
            data: the JSON object with ``lstm`` and ``char_cnn`` members.
            source: name used in error messages (usually the file path).

        Raises:
            OptionsError: a required key is missing or a value has the wrong type.
        """
        try:
            lstm = data["lstm"]
            cnn = data["char_cnn"]
            filters = tuple((int(w), int(n)) for w, n in cnn["filters"])
            activation = cnn.get("activation", "relu")
            if activation not in ("relu", "tanh"):
                raise OptionsError(
                    f"{source}: char_cnn.activation must be relu or tanh, got {activation!r}"
                )
            char_cnn = CharCNNOptions(
                embedding_dim=int(cnn["embedding"]["dim"]),
                filters=filters,
                n_highway=int(cnn.get("n_highway") or 0),  # bilm-tf: absent or 0 = no highway
                activation=activation,
                n_characters=int(cnn.get("n_characters", 262)),
                max_characters_per_token=int(cnn.get("max_characters_per_token", 50)),
            )
            lstm_opts = LSTMOptions(
                dim=int(lstm["dim"]),
                projection_dim=int(lstm.get("projection_dim", lstm["dim"])),
                n_layers=int(lstm.get("n_layers", 1)),  # bilm-tf default 1
                cell_clip=float(lstm["cell_clip"]) if lstm.get("cell_clip") else None,
                proj_clip=float(lstm["proj_clip"]) if lstm.get("proj_clip") else None,
                use_skip_connections=bool(lstm.get("use_skip_connections", False)),
            )
        except KeyError as exc:
            raise OptionsError(f"{source}: missing key {exc.args[0]!r}") from None
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, OptionsError):
                raise
            raise OptionsError(f"{source}: bad value ({exc})") from None
        opts = cls(lstm=lstm_opts, char_cnn=char_cnn)
        opts.validate(source)
        return opts

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> BiLMOptions:
        """Read an official ``options.json`` file.

        Raises:
            OptionsError: the file is missing, larger than :data:`MAX_OPTIONS_FILE_BYTES`, not
                JSON, or its options are incomplete or out of bounds (:meth:`validate`).
        """
        try:
            size = Path(path).stat().st_size
        except OSError:
            size = 0  # read_json_file names the missing file
        if size > MAX_OPTIONS_FILE_BYTES:
            raise OptionsError(
                f"{path}: {size} bytes, more than the {MAX_OPTIONS_FILE_BYTES} an options file "
                "may have (bilm.options.MAX_OPTIONS_FILE_BYTES)"
            )
        return cls.from_dict(read_json_file(path), source=str(path))

    def to_dict(self, n_characters: int | None = None) -> dict[str, Any]:
        """The official ``options.json`` structure (``n_characters`` may be overridden)."""
        cnn = asdict(self.char_cnn)
        return {
            "lstm": {
                "dim": self.lstm.dim,
                "projection_dim": self.lstm.projection_dim,
                "n_layers": self.lstm.n_layers,
                "cell_clip": self.lstm.cell_clip or 0,
                "proj_clip": self.lstm.proj_clip or 0,
                "use_skip_connections": self.lstm.use_skip_connections,
            },
            "char_cnn": {
                "activation": cnn["activation"],
                "embedding": {"dim": cnn["embedding_dim"]},
                "filters": [list(f) for f in self.char_cnn.filters],
                "n_highway": cnn["n_highway"],
                "n_characters": n_characters or cnn["n_characters"],
                "max_characters_per_token": cnn["max_characters_per_token"],
            },
        }

    def to_json(self, path: str | os.PathLike[str], n_characters: int | None = None) -> None:
        """Write an official ``options.json`` (atomically)."""
        write_json(path, self.to_dict(n_characters), indent=2)

    def validate(self, source: str = "options") -> None:
        """Check value ranges, the limits of this module (``MAX_*``) included.

        Cheap and allocation-free: it runs before any tensor of the model exists.

        Raises:
            OptionsError: naming the offending field, its value and the limit.
        """
        self._check_limits(source)
        c, lstm = self.char_cnn, self.lstm
        if c.n_characters not in (261, 262):
            raise OptionsError(
                f"{source}: char_cnn.n_characters must be 261 or 262, got {c.n_characters}"
            )
        if c.max_characters_per_token < 3:
            raise OptionsError(f"{source}: char_cnn.max_characters_per_token must be >= 3")
        if not c.filters or any(
            w < 1 or n < 1 or w > c.max_characters_per_token for w, n in c.filters
        ):
            raise OptionsError(f"{source}: char_cnn.filters must be non-empty [width, count] pairs")
        for name in ("embedding_dim", "n_highway"):
            if getattr(c, name) < (1 if name == "embedding_dim" else 0):
                raise OptionsError(f"{source}: char_cnn.{name} out of range")
        if lstm.dim < 1 or lstm.projection_dim < 1 or lstm.n_layers < 1:
            raise OptionsError(f"{source}: lstm.dim, projection_dim and n_layers must be >= 1")
        if lstm.projection_dim > lstm.dim:
            raise OptionsError(
                f"{source}: lstm.projection_dim ({lstm.projection_dim}) > dim ({lstm.dim})"
            )
        for name, clip in (("cell_clip", lstm.cell_clip), ("proj_clip", lstm.proj_clip)):
            if clip is not None and not (math.isfinite(clip) and clip > 0):
                raise OptionsError(
                    f"{source}: lstm.{name} must be a finite number > 0 (or 0 for none), got {clip}"
                )

    def _check_limits(self, source: str) -> None:
        """Refuse any size above its ``MAX_*`` limit (the first one found, the list's length
        before its entries).

        Raises:
            OptionsError: ``"{source}: FIELD=VALUE exceeds the limit LIMIT (bilm.options.NAME)"``.
        """
        c, lstm = self.char_cnn, self.lstm

        def bound(name: str, value: int, limit: int, constant: str) -> None:
            if value > limit:
                raise OptionsError(
                    f"{source}: {name}={value} exceeds the limit {limit} (bilm.options.{constant})"
                )

        bound("lstm.n_layers", lstm.n_layers, MAX_LSTM_LAYERS, "MAX_LSTM_LAYERS")
        bound("lstm.dim", lstm.dim, MAX_LSTM_DIM, "MAX_LSTM_DIM")
        bound("lstm.projection_dim", lstm.projection_dim, MAX_PROJECTION_DIM, "MAX_PROJECTION_DIM")
        bound("char_cnn.n_highway", c.n_highway, MAX_HIGHWAY_LAYERS, "MAX_HIGHWAY_LAYERS")
        bound(
            "char_cnn.embedding.dim",
            c.embedding_dim,
            MAX_CHAR_EMBEDDING_DIM,
            "MAX_CHAR_EMBEDDING_DIM",
        )
        bound(
            "char_cnn.max_characters_per_token",
            c.max_characters_per_token,
            MAX_CHARACTERS_PER_TOKEN,
            "MAX_CHARACTERS_PER_TOKEN",
        )
        bound("len(char_cnn.filters)", len(c.filters), MAX_FILTER_SIZES, "MAX_FILTER_SIZES")
        for i, (width, count) in enumerate(c.filters):
            bound(f"char_cnn.filters[{i}] width", width, MAX_FILTER_WIDTH, "MAX_FILTER_WIDTH")
            bound(f"char_cnn.filters[{i}] count", count, MAX_FILTER_COUNT, "MAX_FILTER_COUNT")
        bound(
            "the sum of char_cnn.filters counts",
            c.n_filters,
            MAX_TOTAL_FILTERS,
            "MAX_TOTAL_FILTERS",
        )


def read_json_file(
    path: str | os.PathLike[str],
    error: type[ValueError] = OptionsError,
    missing: str | None = None,
) -> Any:
    """Parse a UTF-8 JSON file, raising ``error`` with a located message on failure.

    Args:
        path: the file.
        error: the exception type raised.
        missing: the message when the file does not exist (default ``"{path}: no such file"``).

    Raises:
        ``error``: the file is missing, or ``"{path}:{line}: not valid JSON (...)"``.
    """
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(missing or f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise error(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
