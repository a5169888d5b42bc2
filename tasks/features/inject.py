"""Injecting a representation into a task model, Peters et al. (2018) §3.3 and Table 3.

One representation pass per batch feeds one :class:`bilm.ScalarMix` per injection site: ``input``
(concatenated to the task's token vectors before its lowest RNN) and ``output`` (concatenated to the
task RNN's output, with its own weights ``w`` and ``γ``). Model code sizes its layers from
:meth:`Injector.extra_dim` and calls :meth:`Injector.concat` unconditionally; with a site off or
the ``none`` representation both are no-ops, so there is no ``if`` in model code
(docs/representations.md, "Injecting into a task model").

The λ penalty reaches the loss through :func:`mix_penalty`, which the runner calls on the whole
task model. With ``MixSpec(mode="dynamic")`` each site's mix is a
:class:`bilm.dynamic_mix.DynamicMix` (per-token layer weights); its penalty is that of the batch
last mixed, so call
:func:`mix_penalty` after the model's forward pass, as the runner does.

Typical use::

    injector = Injector(representation, frozenset({"input", "output"}), MixSpec(lam=0.001))
    layers = injector.represent(features)  # or cache.lookup(batch.indices)
    injected = injector(layers)  # site -> (batch, time, dim), after dropout
    x = injector.concat("input", word_vectors, injected)  # (batch, time, word_dim + dim)
    loss = task_loss + mix_penalty(model)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from torch import Tensor, nn

from bilm.dynamic_mix import DynamicMix
from bilm.scalar_mix import MixSpec, ScalarMix, mix_from_spec
from tasks.common.sites import SITES, Site
from tasks.representations import Layers, Representation
from tasks.representations.adapt import adapter_parameters

__all__ = ["SITES", "Injected", "Injector", "MixSpec", "Site", "mix_penalty"]


@dataclass(frozen=True)
class Injected:
    """Mixed representations per active site.

    Attributes:
        tensors: site → ``(batch, time, dim)`` (only the active sites).
        mask: ``(batch, time)`` bool.
    """

    tensors: Mapping[str, Tensor] = field(default_factory=dict)
    mask: Tensor | None = None

    def __getitem__(self, site: str) -> Tensor:
        if site not in self.tensors:
            raise KeyError(f"site {site!r} is not active; active: {sorted(self.tensors)}")
        return self.tensors[site]

    def __contains__(self, site: object) -> bool:
        return site in self.tensors


def _check_site(site: str) -> None:
    if site not in SITES:
        raise ValueError(f"unknown site {site!r}; valid: {', '.join(SITES)}")


class Injector(nn.Module):
    """One representation, one mix per site (:class:`bilm.ScalarMix`, or
    :class:`bilm.dynamic_mix.DynamicMix` in ``"dynamic"`` mode), dropout on each mix.

    Args:
        representation: any :class:`~tasks.representations.Representation`.
        sites: subset of ``{"input", "output"}``.
        mix: mode, λ and layer norm, shared by the sites (each site has its own weights).
        dropout: on each mixed output in training (paper and allennlp: 0.5).

    A frozen representation is kept *outside* the module tree: it is not in ``parameters()`` or
    ``state_dict()`` (task checkpoints stay small; its fingerprint identifies it), ``train()``
    does not touch it, but ``.to()``/``.cuda()``/``.half()`` still move it (when it is an
    ``nn.Module``). A fine-tuned representation is an ordinary submodule. One adapted with LoRA
    (:mod:`tasks.representations.adapt`) stays outside too, and only its adapters are the
    injector's (``adapters``: trained, checkpointed, no second copy of the encoder);
    ``train()`` reaches it.
    """

    def __init__(
        self,
        representation: Representation,
        sites: frozenset[str] | set[str],
        mix: MixSpec | None = None,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        sites = frozenset(sites)
        for site in sorted(sites):
            _check_site(site)
        self.mix = mix or MixSpec()
        self._owns_representation = representation.trainable and not _adapters_only(representation)
        if self._owns_representation:
            self.representation = representation  # a submodule when it is an nn.Module
        else:
            self.__dict__["representation"] = representation  # outside the module tree
        if _adapters_only(representation):  # LoRA: the adapters alone are the model's
            module = representation.adapt_module  # type: ignore[attr-defined]
            self.adapters = nn.ParameterList([p for _, p in adapter_parameters(module)])
        self.sites: frozenset[str] = sites
        on = sites if representation.num_layers > 0 and representation.output_dim > 0 else set()
        self.active_sites: frozenset[str] = frozenset(on)
        self.mixes = nn.ModuleDict(
            {
                site: mix_from_spec(representation.num_layers, representation.output_dim, self.mix)
                for site in sorted(self.active_sites)
            }
        )
        self.dropout = nn.Dropout(dropout)

    def extra_dim(self, site: str) -> int:
        """Width this site adds: the representation's ``output_dim`` if the site is on, else 0."""
        _check_site(site)
        return self.representation.output_dim if site in self.active_sites else 0

    def represent(self, features: Mapping[str, Tensor]) -> Layers:
        """Run the representation once for the batch (skip it when reading a feature cache)."""
        return self.representation(features)

    def forward(self, layers: Layers) -> Injected:
        """Mix ``layers`` once per active site.

        Args:
            layers: ``(num_layers, batch, time, dim)`` and mask, from :meth:`represent` or a cache;
                the baseline's :meth:`Layers.empty` ``(0, batch, time, 0)`` when no site is active.

        Returns:
            :class:`Injected` with site → ``(batch, time, dim)`` after dropout; with no active
            site (the ``none`` representation) ``Injected({}, layers.mask)``, which adds nothing.
        """
        if not self.active_sites:
            return Injected({}, layers.mask)
        expected = (self.representation.num_layers, self.representation.output_dim)
        found = (layers.tensors.shape[0], layers.tensors.shape[-1])
        if found != expected:
            raise ValueError(f"layers are (num_layers, dim) = {found}, expected {expected}")
        tensors = layers.tensors
        if not tensors.is_floating_point():
            raise TypeError(f"layers must be floating point, got {tensors.dtype}")
        out = {
            site: self.dropout(mix(tensors, layers.mask))  # (batch, time, dim)
            for site, mix in self.mixes.items()
        }
        return Injected(out, layers.mask)

    def concat(self, site: str, h: Tensor, injected: Injected) -> Tensor:
        """``cat([h, injected[site]], -1)`` when the site is on, else ``h`` itself.

        Args:
            site: ``"input"`` or ``"output"``.
            h: ``(batch, time, width)`` task vectors.
            injected: from :meth:`forward`.

        Returns:
            ``(batch, time, width + extra_dim(site))``.
        """
        _check_site(site)
        if site not in self.active_sites:
            return h
        extra = injected[site]  # (batch, time, dim)
        if h.shape[:-1] != extra.shape[:-1]:
            raise ValueError(
                f"site {site!r}: task vectors {tuple(h.shape)} and representation "
                f"{tuple(extra.shape)} differ before the last dimension"
            )
        return torch.cat([h, extra.to(h.dtype)], dim=-1)  # (batch, time, width + dim)

    def _site_mixes(self) -> dict[str, ScalarMix | DynamicMix]:
        """Active site → its mix (the modules of :attr:`mixes`, typed)."""
        return {site: cast(ScalarMix | DynamicMix, mix) for site, mix in self.mixes.items()}

    def penalty(self) -> Tensor:
        """Sum of the mixes' penalties (a 0-dim tensor; 0 without mixes or in ``last`` mode):
        ``λ‖w‖²``, or in ``dynamic`` mode λ times the gate's per-token departure from a static
        mix over the batch last mixed (:meth:`bilm.dynamic_mix.DynamicMix.penalty`)."""
        if not self.mixes:
            return torch.zeros(())
        return torch.stack([mix.penalty() for mix in self._site_mixes().values()]).sum()

    def layer_weights(self) -> dict[str, list[float]]:
        """``softmax(w)`` per active site (one-hot on the top layer in ``last`` mode); in
        ``dynamic`` mode the mean per-token weights over the real tokens mixed since the last
        ``eval()`` (:meth:`bilm.dynamic_mix.DynamicMix.normalized_weights`)."""
        return {
            site: [float(x) for x in mix.normalized_weights().detach().cpu()]
            for site, mix in self._site_mixes().items()
        }

    def layer_weights_std(self) -> dict[str, list[float]]:
        """Per ``dynamic`` site, the standard deviation of the per-token weights ``s_{t,j}``
        over the same tokens as :meth:`layer_weights` (empty for the static modes, whose
        weights do not vary by token)."""
        return {
            site: list(mix.weight_statistics().std)
            for site, mix in self._site_mixes().items()
            if isinstance(mix, DynamicMix)
        }

    def gammas(self) -> dict[str, float]:
        """γ per active site."""
        return {site: float(mix.gamma.detach()) for site, mix in self._site_mixes().items()}

    def _apply(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Injector:
        super()._apply(fn, *args, **kwargs)
        rep = self.representation
        if not self._owns_representation and isinstance(rep, nn.Module):
            rep._apply(fn, *args, **kwargs)  # keep the outside representation on our device
        return self

    def train(self, mode: bool = True) -> Injector:
        """Train or eval mode; also for a LoRA-adapted representation outside the tree."""
        super().train(mode)
        rep = self.representation
        if not self._owns_representation and rep.trainable and isinstance(rep, nn.Module):
            rep.train(mode)
        return self


def _adapters_only(representation: Representation) -> bool:
    """Whether only LoRA adapters of ``representation`` train (``tasks.representations.adapt``)."""
    return bool(representation.trainable) and getattr(representation, "adaptation", "") == "lora"


def mix_penalty(model: nn.Module) -> Tensor:
    """Sum of :meth:`Injector.penalty` over every Injector inside ``model`` (0-dim tensor)."""
    terms = [m.penalty() for m in model.modules() if isinstance(m, Injector)]
    if not terms:
        return torch.zeros(())
    return torch.stack([t.to(terms[0].device) for t in terms]).sum()
