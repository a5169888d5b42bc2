"""Representation contract (R1–R6 of docs/representations.md), applied to every registered entry.

Use it for your own representation::

    from tests.contract.test_representations import RepresentationContract

    class TestMyEmbedder(RepresentationContract):
        def make(self, folder):
            return MyEmbedder(dim=8)

``make`` receives a fresh temporary folder (for files the representation reads) and is called once
per test class.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from torch import Tensor, nn

from tasks.representations import (
    REPRESENTATIONS,
    GloveRepresentation,
    Layers,
    Representation,
    build_representation,
    convert_glove_text,
)
from tests.contract.helpers import (
    ODD_SENTENCES,
    SENTENCES,
    write_cove_state,
    write_glove_text,
    write_hdf5_features,
    write_tiny_checkpoint,
)
from tests.contract.hf_helpers import write_tiny_bert


def _lengths(sentences: Sequence[Sequence[str]]) -> list[int]:
    return [len(s) for s in sentences]


class RepresentationContract:
    """Mixin of conformance tests; subclass it as ``Test*`` and implement :meth:`make`."""

    #: The :data:`~tasks.representations.REPRESENTATIONS` key this class covers (None: not one).
    registry_name: ClassVar[str | None] = None
    #: Tolerance of the batch / padding / order invariance check (R3).
    atol: ClassVar[float] = 1e-5

    def make(self, folder: Path) -> Representation:
        """Build the representation under test (files go in ``folder``)."""
        raise NotImplementedError

    @pytest.fixture(scope="class")
    @classmethod
    def rep(cls, tmp_path_factory: pytest.TempPathFactory) -> Representation:
        return cls().make(tmp_path_factory.mktemp(cls.__name__))

    def run(self, rep: Representation, sentences: Sequence[Sequence[str]]) -> Layers:
        layers = rep(rep.featurize(sentences))
        assert isinstance(layers, Layers), f"__call__ returned {type(layers).__name__}, not Layers"
        return layers

    # ---------------------------------------------------------------- declared attributes
    def test_declares_the_protocol(self, rep: Representation) -> None:
        assert isinstance(rep, Representation)
        assert isinstance(rep.name, str) and rep.name
        if self.registry_name is not None:
            assert rep.name == self.registry_name
        assert isinstance(rep.output_dim, int) and rep.output_dim >= 0
        assert isinstance(rep.num_layers, int) and rep.num_layers >= 0
        assert isinstance(rep.trainable, bool)
        fingerprint = rep.fingerprint()
        assert isinstance(fingerprint, str) and re.fullmatch(r"[0-9a-f]{16,}", fingerprint)
        assert rep.fingerprint() == fingerprint, "fingerprint must be stable"

    # ---------------------------------------------------------------- R1
    def test_r1_shapes_and_mask(self, rep: Representation) -> None:
        out = self.run(rep, SENTENCES)
        lengths = _lengths(SENTENCES)
        shape = (rep.num_layers, len(SENTENCES), max(lengths), rep.output_dim)
        assert tuple(out.tensors.shape) == shape
        assert out.mask.dtype == torch.bool
        expected = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
        assert torch.equal(out.mask.cpu(), expected)
        assert out.tensors.is_floating_point()
        assert torch.isfinite(out.tensors).all()
        padding = out.tensors[:, ~out.mask]  # (num_layers, n_padded, dim)
        assert torch.count_nonzero(padding) == 0, "padded positions must be exactly 0"

    # ---------------------------------------------------------------- R2
    def test_r2_eval_mode_is_deterministic(self, rep: Representation) -> None:
        a = self.run(rep, SENTENCES).tensors
        b = self.run(rep, SENTENCES).tensors
        assert torch.equal(a, b)

    # ---------------------------------------------------------------- R3
    def test_r3_batch_padding_and_order_invariance(self, rep: Representation) -> None:
        together = self.run(rep, SENTENCES)
        reverse = self.run(rep, SENTENCES[::-1])
        padded = self.run(rep, [*SENTENCES, ["pad"] * 25])  # a long row forces extra padding
        for i, sentence in enumerate(SENTENCES):
            n = len(sentence)
            alone = self.run(rep, [sentence]).tensors[:, 0, :n]  # (L, n, D)
            j = len(SENTENCES) - 1 - i
            for other, row in ((together, i), (reverse, j), (padded, i)):
                torch.testing.assert_close(
                    other.tensors[:, row, :n], alone, atol=self.atol, rtol=0.0
                )

    # ---------------------------------------------------------------- R4
    @pytest.mark.parametrize(
        "sentences",
        [[[]], [[], []], [[], ["a"], []], []],
        ids=["one-empty", "all-empty", "mixed", "no-sentences"],
    )
    def test_r4_empty_sentences(self, rep: Representation, sentences: list[list[str]]) -> None:
        out = self.run(rep, sentences)
        time = max(_lengths(sentences), default=0)
        assert tuple(out.tensors.shape) == (rep.num_layers, len(sentences), time, rep.output_dim)
        assert out.mask.sum().item() == sum(_lengths(sentences))

    def test_r4_odd_unicode(self, rep: Representation) -> None:
        out = self.run(rep, ODD_SENTENCES)
        assert out.tensors.shape[1:3] == (len(ODD_SENTENCES), max(_lengths(ODD_SENTENCES)))
        assert torch.isfinite(out.tensors).all()
        assert out.mask.sum().item() == sum(_lengths(ODD_SENTENCES))

    # ---------------------------------------------------------------- R5
    def test_r5_featurize_is_cpu_and_picklable(self, rep: Representation) -> None:
        features = rep.featurize(SENTENCES + ODD_SENTENCES)
        assert isinstance(features, dict) and features
        for name, value in features.items():
            assert isinstance(name, str) and isinstance(value, Tensor)
            assert value.device.type == "cpu"
        restored = pickle.loads(pickle.dumps(features))
        assert features.keys() == restored.keys()
        for name in features:
            assert torch.equal(features[name], restored[name])
        torch.testing.assert_close(rep(restored).tensors, rep(features).tensors, atol=0, rtol=0)

    # ---------------------------------------------------------------- R6
    def test_r6_parameters_frozen_unless_trainable(self, rep: Representation) -> None:
        if rep.trainable:
            pytest.skip("trainable representation")
        if isinstance(rep, nn.Module):
            assert [n for n, p in rep.named_parameters() if p.requires_grad] == []
        assert not self.run(rep, SENTENCES).tensors.requires_grad

    def test_to_returns_a_working_representation(self, rep: Representation) -> None:
        moved = rep.to("cpu")
        assert moved is not None
        assert self.run(rep, [["a"]]).tensors.device.type == "cpu"


# ------------------------------------------------------------------------ registered entries
class TestElmo(RepresentationContract):
    registry_name = "elmo"

    def make(self, folder: Path) -> Representation:
        return build_representation("elmo", checkpoint=write_tiny_checkpoint(folder))


class TestBilmRandom(RepresentationContract):
    registry_name = "bilm-random"

    def make(self, folder: Path) -> Representation:
        return build_representation("bilm-random", checkpoint=write_tiny_checkpoint(folder), seed=3)


class TestGlove(RepresentationContract):
    registry_name = "glove"

    def make(self, folder: Path) -> Representation:
        return build_representation("glove", path=write_glove_text(folder / "g.txt.gz", dim=8))


class TestCove(RepresentationContract):
    registry_name = "cove"

    def make(self, folder: Path) -> Representation:
        return build_representation(
            "cove",
            weights=write_cove_state(folder / "wmtlstm-test.pth"),
            glove_path=write_glove_text(folder / "glove300.txt", dim=300),
        )


class TestHdf5(RepresentationContract):
    registry_name = "hdf5"

    def make(self, folder: Path) -> Representation:
        elmo = build_representation("elmo", checkpoint=write_tiny_checkpoint(folder))
        every = [*SENTENCES, *ODD_SENTENCES, ["a"], ["pad"] * 25]  # all the contract asks for
        return build_representation(
            "hdf5", path=write_hdf5_features(folder / "features.hdf5", elmo, every)
        )


class TestHf(RepresentationContract):
    registry_name = "hf"

    def make(self, folder: Path) -> Representation:
        return build_representation("hf", model=str(write_tiny_bert(folder)))  # tiny, random


class TestNone(RepresentationContract):
    registry_name = "none"

    def make(self, folder: Path) -> Representation:
        return build_representation("none")


# ------------------------------------------------------------------------ other configurations
class TestElmoWarmState(RepresentationContract):
    def make(self, folder: Path) -> Representation:
        return build_representation("elmo", checkpoint=write_tiny_checkpoint(folder), state="warm")


class TestGloveNpyLowercase(RepresentationContract):
    def make(self, folder: Path) -> Representation:
        npy, vocab = convert_glove_text(write_glove_text(folder / "g.txt", 6), folder / "g")
        return build_representation("glove", vectors=npy, vocab=vocab, lowercase=True)


class TestDocsExample(RepresentationContract):
    """The worked example of docs/representations.md passes the contract."""

    def make(self, folder: Path) -> Representation:
        docs = Path(__file__).resolve().parents[2] / "docs" / "representations.md"
        blocks = re.findall(r"```python\n(.*?)```", docs.read_text(encoding="utf-8"), re.S)
        namespace: dict[str, object] = {"__name__": "docs_example"}
        (block,) = [b for b in blocks if "class CharHashRepresentation" in b]
        exec(compile(block, str(docs), "exec"), namespace)
        return namespace["CharHashRepresentation"](dim=8)  # type: ignore[operator]


def test_every_registered_representation_has_a_contract_test() -> None:
    covered = {
        cls.registry_name for cls in RepresentationContract.__subclasses__() if cls.registry_name
    }
    assert covered == set(REPRESENTATIONS)


def test_glove_is_a_representation_without_the_registry() -> None:
    rep = GloveRepresentation(["a", "b"], torch.eye(2))
    assert isinstance(rep, Representation) and rep.output_dim == 2
