"""Tiny randomly initialised transformers saved to a folder, for the ``hf`` representation's tests.

Each writer trains a small tokenizer with the ``tokenizers`` library on :data:`TRAINING_TEXT` and
saves it with a freshly initialised model (``save_pretrained``), so the ``hf`` representation
loads it as it would any local model folder: no network, a second or two on a CPU.

* :func:`write_tiny_bert`: WordPiece (BERT's normaliser and pre-tokeniser, lowercased, accents
  stripped) and a 2-layer ``BertModel``.
* :func:`write_tiny_roberta`: byte-level BPE (RoBERTa / GPT-2 style, which needs
  ``add_prefix_space=True`` for pre-split words) and a 2-layer ``RobertaModel``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: The text the tiny tokenizers are trained on (accents, punctuation and digits included).
TRAINING_TEXT = [
    "The cat sat on the mat.",
    "Hello world, this is a much longer sentence with unknown words than the others!",
    "Café déjà vu: naïve résumé, 3.14 and 42 apples.",
    "Transformers split words into pieces; pieces are pooled back into words.",
    "A windowed encoder reads long documents in overlapping windows of word pieces.",
]

#: Width of the tiny models' layers, and their number of hidden layers.
TINY_DIM, TINY_LAYERS = 16, 2
#: Positions of the tiny models (small, so that windows are easy to exercise).
TINY_POSITIONS = 40


def _wrap(tokenizer: object, folder: Path, **special: str) -> None:
    """Save a ``tokenizers.Tokenizer`` as a transformers fast tokenizer in ``folder``."""
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, model_max_length=TINY_POSITIONS, **special
    )
    fast.save_pretrained(folder)


def write_tiny_bert(folder: Path, seed: int = 0) -> Path:
    """A WordPiece tokenizer and a random 2-layer BERT in ``folder`` (returned)."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=120, special_tokens=specials)
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    folder.mkdir(parents=True, exist_ok=True)
    _wrap(
        tokenizer,
        folder,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    config = transformers.BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=TINY_DIM,
        num_hidden_layers=TINY_LAYERS,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=TINY_POSITIONS,
        pad_token_id=tokenizer.token_to_id("[PAD]"),
    )
    _save_model(transformers.BertModel, config, folder, seed)
    return folder


def write_tiny_roberta(folder: Path, seed: int = 0) -> Path:
    """A byte-level BPE tokenizer and a random 2-layer RoBERTa in ``folder`` (returned)."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tokenizer = tokenizers.Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer)
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>"))
    )
    folder.mkdir(parents=True, exist_ok=True)
    _wrap(
        tokenizer,
        folder,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
    )
    pad = tokenizer.token_to_id("<pad>")
    config = transformers.RobertaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=TINY_DIM,
        num_hidden_layers=TINY_LAYERS,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=TINY_POSITIONS + pad + 1,  # RoBERTa's positions start after pad
        pad_token_id=pad,
        bos_token_id=tokenizer.token_to_id("<s>"),
        eos_token_id=tokenizer.token_to_id("</s>"),
        type_vocab_size=1,
    )
    _save_model(transformers.RobertaModel, config, folder, seed)
    return folder


def _save_model(model_class: type, config: object, folder: Path, seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    model = model_class(config)
    model.save_pretrained(folder)  # type: ignore[attr-defined]
