"""The masked layer norm of the scalar mixes (allennlp ``ScalarMix(do_layer_norm=True)``)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["masked_layer_norm"]


def masked_layer_norm(layers: Tensor, mask: Tensor) -> Tensor:
    """Each layer normalised with one mean and variance over all unmasked elements of the batch
    (allennlp ``do_layer_norm``; not per-token); padding becomes 0.

    Args:
        layers: ``(num_layers, batch, time, dim)``.
        mask: ``(batch, time)`` bool.

    Returns:
        ``(num_layers, batch, time, dim)``.
    """
    m = mask[None, :, :, None].to(layers.dtype)  # (1, batch, time, 1)
    count = (m.sum() * layers.shape[-1]).clamp_min(1.0)
    mean = (layers * m).sum(dim=(1, 2, 3), keepdim=True) / count  # (L, 1, 1, 1)
    var = (((layers - mean) * m) ** 2).sum(dim=(1, 2, 3), keepdim=True) / count
    eps = 1e-4 if layers.dtype == torch.half else 1e-13  # allennlp's choice
    return (layers - mean) / torch.sqrt(var + eps) * m
