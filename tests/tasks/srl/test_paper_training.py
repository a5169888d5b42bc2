"""The SRL presets' training settings: the paper preset clips each gradient value at 1.0 with no
norm clipping (allennlp ``grad_clipping: 1.0``, no ``grad_norm``) and re-draws its batches every
epoch (bucket ``padding_noise`` 0.1); mini keeps the settings its stored runs were made with."""

from __future__ import annotations

from tasks.srl.config import PRESETS


def test_paper_preset_clips_values_not_the_norm_and_uses_bucket_noise() -> None:
    train = PRESETS["paper"]().train
    assert train.clip_value == 1.0
    assert train.clip_norm is None
    assert train.bucket_noise == 0.1
    assert (train.batch_size, train.optimizer.name, train.epochs, train.patience) == (
        80,
        "adadelta",
        500,
        200,
    )


def test_mini_preset_keeps_its_training_settings() -> None:
    train = PRESETS["mini"]().train
    assert (train.clip_norm, train.clip_value, train.bucket_noise) == (1.0, None, 0.0)
