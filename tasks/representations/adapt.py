"""What of a representation trains with the task model: nothing (``frozen``), all of it
(``finetune``) or low-rank adapters (``lora``, Hu et al. 2021, through the ``peft`` library).

The scalar mix (Eq. 1) sits on top in every mode; only what trains differs. A representation
can be adapted when it exposes its encoder as :attr:`adapt_module` (an ``nn.Module``) and says
where LoRA goes by default (:attr:`lora_defaults`): the biLM representations (``elmo``,
``bilm-random``: the LSTMs' input, recurrent and projection matrices, which ``peft`` wraps as
parameters since the biLM's LSTM is no ``nn.Linear``) and ``hf`` (``peft``'s own per-model
default, the attention's query and value maps for BERT-style encoders). GloVe, CoVe, HDF5
features and ``none`` refuse every mode but ``frozen``.

Defaults (:class:`AdaptConfig`; chosen here, each a documented option):

* learning rate, as a multiple of the task's (the loop's schedules scale both alike):
  ``finetune`` 0.01, ``lora`` 0.1. With the ``mini`` presets' Adam at 5e-3–1e-2 that is
  5e-5–1e-4 for fine-tuning (BERT's range, Devlin et al. 2019, A.3) and 5e-4–1e-3 for LoRA
  (Hu et al. 2021, Table 9: 4e-4–5e-4 for RoBERTa-base);
* a linear warm-up of the representation's learning rate over its first 100 optimizer steps;
* LoRA rank 2 for the biLM and 8 for ``hf`` (the shipped small biLM's 128-unit projections
  make rank 8 train 5.3 % of its weights; rank 2 trains 1.3 %, the full-size ELMo 0.3 %),
  ``alpha`` twice the rank (Hu et al.'s ratio in their GPT-2 runs), no adapter dropout.

An adapted run's identity holds the mode and every option given (``representation_config``
keys :data:`ADAPT_KEYS`, declared for the command line as :data:`ADAPT_OPTIONS`); a ``frozen``
configuration is exactly the configuration without them. A representation that cannot be
adapted declares :data:`FROZEN_ONLY` instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from tasks.representations.options import ReprOption

__all__ = [
    "ADAPT_KEYS",
    "ADAPT_MODES",
    "ADAPT_OPTIONS",
    "FROZEN_ONLY",
    "AdaptConfig",
    "adapt",
    "adapter_parameters",
    "adapt_config",
    "trainable_parameters",
]

AdaptMode = Literal["frozen", "finetune", "lora"]
ADAPT_MODES: tuple[str, ...] = ("frozen", "finetune", "lora")
#: ``representation_config`` key → :class:`AdaptConfig` field.
ADAPT_KEYS: dict[str, str] = {
    "adapt": "mode",
    "adapt_lr": "lr_scale",
    "adapt_warmup": "warmup",
    "lora_rank": "rank",
    "lora_alpha": "alpha",
    "lora_dropout": "dropout",
    "lora_targets": "targets",
}
_LR_SCALE = {"frozen": 0.0, "finetune": 0.01, "lora": 0.1}


@dataclass(frozen=True)
class AdaptConfig:
    """How a representation trains with the task model.

    Attributes:
        mode: ``frozen`` (nothing; features may be cached), ``finetune`` (every weight) or
            ``lora`` (low-rank adapters only).
        lr_scale: the representation's learning rate as a multiple of the task's; ``None``:
            0.01 (``finetune``) or 0.1 (``lora``).
        warmup: optimizer steps over which the representation's learning rate rises linearly
            from ``1/warmup`` of its value to all of it.
        rank: LoRA rank; ``None``: the representation's default (biLM 2, ``hf`` 8).
        alpha: LoRA scaling numerator (the update is ``alpha / rank · B A``); ``None``:
            ``2 · rank``.
        dropout: dropout on the adapters' input.
        targets: what LoRA wraps (names of ``nn.Linear``-like modules for ``hf``, of 2-D
            parameters for the biLM); ``None``: the representation's default.
    """

    mode: AdaptMode = "frozen"
    lr_scale: float | None = None
    warmup: int = 100
    rank: int | None = None
    alpha: float | None = None
    dropout: float = 0.0
    targets: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.mode not in ADAPT_MODES:
            raise ValueError(f"adapt must be one of {ADAPT_MODES}, got {self.mode!r}")
        if self.lr_scale is not None and self.mode == "frozen":
            raise ValueError("adapt_lr needs adapt=finetune or adapt=lora (adapt is 'frozen')")
        if self.lr_scale is not None and not self.lr_scale > 0:
            raise ValueError(f"adapt_lr must be > 0, got {self.lr_scale}")
        if self.warmup < 0:
            raise ValueError(f"adapt_warmup must be >= 0, got {self.warmup}")
        if self.rank is not None and self.rank < 1:
            raise ValueError(f"lora_rank must be >= 1, got {self.rank}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"lora_dropout must be in [0, 1), got {self.dropout}")
        lora_only = {"rank": self.rank, "alpha": self.alpha, "targets": self.targets}
        given = [k for k, v in lora_only.items() if v is not None] + (
            ["dropout"] if self.dropout else []
        )
        if given and self.mode != "lora":
            raise ValueError(f"lora_{given[0]} needs adapt=lora (adapt is {self.mode!r})")

    @property
    def learning_rate_scale(self) -> float:
        """:attr:`lr_scale`, or the mode's default."""
        return self.lr_scale if self.lr_scale is not None else _LR_SCALE[self.mode]


#: The keys of :data:`ADAPT_KEYS` as options of every representation that can be adapted.
ADAPT_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption(
        "adapt",
        "what trains with the task model: nothing, every weight, or LoRA adapters",
        choices=ADAPT_MODES,
        default=AdaptConfig.mode,
    ),
    ReprOption(
        "adapt_lr",
        "the representation's learning rate as a multiple of the task's (default 0.01 for "
        "finetune, 0.1 for lora)",
        types=(float,),
    ),
    ReprOption(
        "adapt_warmup",
        "optimizer steps of linear warm-up of the representation's learning rate",
        types=(int,),
        default=AdaptConfig.warmup,
    ),
    ReprOption(
        "lora_rank", "LoRA rank (default: 2 for a biLM, 8 for hf); adapt=lora", types=(int,)
    ),
    ReprOption(
        "lora_alpha", "LoRA scaling numerator (default: twice the rank); adapt=lora", types=(float,)
    ),
    ReprOption(
        "lora_dropout",
        "dropout on the adapters' input; adapt=lora",
        types=(float,),
        default=AdaptConfig.dropout,
    ),
    ReprOption(
        "lora_targets",
        "what LoRA wraps: parameter names (biLM) or module names (hf); default: the "
        "representation's own; adapt=lora",
        types=(str, list),
    ),
)
#: The one adaptation key of a representation that only runs frozen (GloVe, CoVe, HDF5).
FROZEN_ONLY = ReprOption(
    "adapt",
    "its only mode: it cannot be fine-tuned or given adapters",
    choices=("frozen",),
    default="frozen",
)


def adapt_config(config: Mapping[str, Any]) -> AdaptConfig:
    """The :class:`AdaptConfig` of a representation configuration (its :data:`ADAPT_KEYS`).

    Raises:
        ValueError: an invalid mode or option (the message names the key).
    """
    values: dict[str, Any] = {}
    for key, name in ADAPT_KEYS.items():
        if key in config and config[key] is not None:
            value = config[key]
            if name == "targets":
                value = (value,) if isinstance(value, str) else tuple(str(v) for v in value)
            values[name] = value
    return AdaptConfig(**values)


def adapt(representation: Any, config: AdaptConfig) -> Any:
    """``representation`` made to train as ``config`` says (in place; returned).

    ``frozen`` leaves it as built. ``finetune`` lets gradients reach every weight of its
    :attr:`adapt_module`. ``lora`` wraps the targets in ``peft`` LoRA adapters, which alone
    train. Either marks it ``trainable`` (no feature cache; the injector owns what trains).

    Raises:
        ValueError: the representation cannot be adapted (it has no ``adapt_module``), or LoRA
            found none of its targets (the message lists what could be wrapped).
        ImportError: ``lora`` without the ``peft`` package (says how to install it).
    """
    if config.mode == "frozen":
        return representation
    module = getattr(representation, "adapt_module", None)
    name = getattr(representation, "name", type(representation).__name__)
    if not isinstance(module, nn.Module):
        raise ValueError(
            f"representation {name!r} cannot be {config.mode}d: it exposes no encoder module "
            "(adapt_module); only the biLM representations (elmo, bilm-random) and hf can"
        )
    if config.mode == "finetune":
        for p in module.parameters():
            p.requires_grad_(True)
    else:
        _inject_lora(module, config, dict(getattr(representation, "lora_defaults", {})), name)
    representation.trainable = True
    representation.adaptation = config.mode
    return representation


def _inject_lora(module: nn.Module, config: AdaptConfig, defaults: dict[str, Any], name: str):
    try:
        import peft
    except ImportError:
        raise ImportError(
            "adapt=lora needs the peft package: pip install 'elmo-bench[adapt]'"
        ) from None
    kind = defaults.get("kind", "modules")  # "modules" (nn.Linear-like) or "parameters"
    rank = config.rank or int(defaults.get("rank", 8))
    targets = config.targets or defaults.get("targets")  # None: peft's default for the model
    lora = peft.LoraConfig(
        r=rank,
        lora_alpha=config.alpha if config.alpha is not None else 2 * rank,  # type: ignore[arg-type]
        lora_dropout=config.dropout,
        target_modules=[] if kind == "parameters" else (list(targets) if targets else None),
        target_parameters=list(targets or []) if kind == "parameters" else None,
        bias="none",
    )
    for p in module.parameters():
        p.requires_grad_(False)
    try:
        peft.inject_adapter_in_model(lora, module)
    except ValueError as error:
        raise ValueError(
            f"representation {name!r}: LoRA found none of its targets {targets}: {error}. "
            f"Set lora_targets to some of: {', '.join(_wrappable(module, kind)) or 'none'}"
        ) from None
    if not adapter_parameters(module):
        raise ValueError(f"representation {name!r}: LoRA wrapped nothing (targets {targets})")


def _wrappable(module: nn.Module, kind: str) -> list[str]:
    """Names LoRA could take as targets: 2-D parameters' last names, or ``nn.Linear`` modules'."""
    if kind == "parameters":
        names = {n.rsplit(".", 1)[-1] for n, p in module.named_parameters() if p.dim() == 2}
    else:
        names = {
            n.rsplit(".", 1)[-1] for n, m in module.named_modules() if isinstance(m, nn.Linear)
        }
    return sorted(names)


def adapter_parameters(module: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The LoRA adapters' named parameters in ``module`` (``peft``'s ``lora_`` names)."""
    return [(n, p) for n, p in module.named_parameters() if "lora_" in n]


def trainable_parameters(modules: Sequence[nn.Module | Any]) -> int:
    """Number of distinct parameters that require grad over ``modules`` (others skipped)."""
    seen: dict[int, torch.Tensor] = {}
    for m in modules:
        if isinstance(m, nn.Module):
            for p in m.parameters():
                if p.requires_grad:
                    seen[id(p)] = p
    return sum(p.numel() for p in seen.values())
