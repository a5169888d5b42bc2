"""``python -m experiments predict RUN_ID --input FILE`` (docs/runs.md): a tiny trained run's
selected weights applied to a file give the predictions the run itself wrote for the same
examples, in the same official format: NER from tokenized sentences and from its own CoNLL
format, SST-5 from raw text; missing weights, a task whose examples are more than a sentence,
and a record or checkpoint that no longer matches are refused in one line (exit status 2)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.run.predict import PredictError, sentence_examples
from experiments.run.store import ResultsStore
from tasks.registry import get_task

#: Each run trains one epoch on the first LIMIT examples of each split of the DEMO set, with the
#: shipped small biLM (the representation is rebuilt from the spec) and tiny task models.
LIMIT = 20
TINY = {
    "ner": ["word_vectors=random:4", "hidden=[8,8]", "char_filters=4"],
    "sst5": [
        "word_vectors=random:4",
        "encoder_hidden=8",
        "integrator_hidden=8",
        "pre_encode_dim=8",
        "output_dims=[8,8]",
    ],
}


@dataclasses.dataclass(frozen=True)
class Trained:
    """The runs trained once for this module: store, work folder and run id per task."""

    store: Path
    work: Path
    cache: Path
    run_ids: dict[str, str]

    def folder(self, task: str) -> Path:
        return self.store / task / self.run_ids[task]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trained]:
    root = tmp_path_factory.mktemp("predict")
    dirs = ["--store", str(root / "store"), "--work", str(root / "work")]
    dirs += ["--out", str(root / "out"), "--cache", str(root / "cache"), "--quiet"]
    run_ids = {}
    for task, overrides in TINY.items():
        argv = ["run", task, "--repr", "elmo", "--limit", str(LIMIT), "--max-epochs", "1"]
        assert main([*argv, "--set", *overrides, *dirs]) == 0
        (run_ids[task],) = ResultsStore(root / "store").run_ids(task)
    yield Trained(root / "store", root / "work", root / "cache", run_ids)


def predict(trained: Trained, task: str, *args: str, work: Path | None = None) -> int:
    run_id = trained.run_ids[task]
    where = ["--store", str(trained.store), "--work", str(work or trained.work)]
    where += ["--cache", str(trained.cache), "--device", "cpu"]
    return main(["predict", run_id, *args, *where])


def conll_sentences(text: str) -> list[list[list[str]]]:
    """The sentences of a column file: per line its fields (blank lines and -DOCSTART- end one)."""
    sentences: list[list[list[str]]] = [[]]
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if sentences[-1]:
                sentences.append([])
            continue
        sentences[-1].append(fields)
    return [s for s in sentences if s]


# --------------------------------------------------------------------------------------- NER
def test_ner_tokenized_sentences_get_the_runs_predicted_tags(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = conll_sentences((trained.folder("ner") / "predictions-dev.txt").read_text())
    assert len(written) == LIMIT  # WORD GOLD PREDICTED per token
    source = tmp_path / "sentences.txt"
    source.write_text("".join(" ".join(t[0] for t in s) + "\n\n" for s in written))
    capsys.readouterr()
    assert predict(trained, "ner", "--input", str(source), "--format", "tokenized") == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    path = Path(result["predictions"])
    assert result["examples"] == LIMIT and path.parent == tmp_path and path.suffix == ".txt"
    assert err == f"wrote {path}\n"
    predicted = conll_sentences(path.read_text())
    assert [[t[0] for t in s] for s in predicted] == [[t[0] for t in s] for s in written]
    assert [[t[2] for t in s] for s in predicted] == [[t[2] for t in s] for s in written]
    assert {t[1] for s in predicted for t in s} == {"O"}  # no gold: the placeholder


def test_ner_in_its_own_format_rewrites_the_runs_dev_file(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = (get_task("ner").demo() / "eng.testa").read_text(encoding="utf-8")
    first = conll_sentences(dev)[:LIMIT]
    source = tmp_path / "first.conll"
    source.write_text("\n".join("".join(" ".join(t) + "\n" for t in s) for s in first))
    out = tmp_path / "preds" / "ner.txt"
    assert predict(trained, "ner", "--input", str(source), "--out", str(out)) == 0
    assert out.read_bytes() == (trained.folder("ner") / "predictions-dev.txt").read_bytes()
    assert sorted(p.name for p in out.parent.iterdir()) == ["ner.txt"]
    # the reader's errors name the input
    capsys.readouterr()
    source.write_text("EU B-ORG\nrejects O O\n")
    assert predict(trained, "ner", "--input", str(source)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --input (read as ner's dev split): {source}:2: ")
    assert err.count("\n") == 1


# ------------------------------------------------------------------------------------ SST-5
def test_sst5_raw_text_gets_the_runs_labels(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bilm.embed import spacy_tokenizer
    from tasks.sst5.data import iter_trees

    trees = list(iter_trees(get_task("sst5").demo() / "dev.txt"))[:LIMIT]
    texts = [" ".join(tree.tokens) for tree in trees]
    source = tmp_path / "texts.txt"
    source.write_text("\n".join(texts[:3]) + "\n\n" + "\n".join(texts[3:]) + "\n")  # a blank
    out = tmp_path / "labels.txt"
    argv = ("--input", str(source), "--format", "raw", "--out", str(out))
    assert predict(trained, "sst5", *argv) == 0
    assert json.loads(capsys.readouterr().out)["examples"] == LIMIT
    labels = out.read_text().splitlines()
    recorded = (trained.folder("sst5") / "predictions-dev.txt").read_text().splitlines()
    assert len(labels) == len(recorded) == LIMIT and set(labels) <= set("01234")
    tokenize = spacy_tokenizer()
    same = [i for i, tree in enumerate(trees) if tokenize(texts[i]) == list(tree.tokens)]
    assert len(same) >= LIMIT // 2  # the DEMO text is mostly tokenized as spaCy does
    assert [labels[i] for i in same] == [recorded[i] for i in same]


# ---------------------------------------------------------------------------------- refusals
def test_missing_weights_name_where_they_were_looked_for(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "s.txt"
    source.write_text("EU rejects German call\n")
    args = ("--input", str(source), "--format", "tokenized")
    assert predict(trained, "ner", *args, work=tmp_path / "elsewhere") == 2
    err = capsys.readouterr().err
    checkpoint = tmp_path / "elsewhere" / "ner" / trained.run_ids["ner"] / "checkpoint.pt"
    assert err.startswith(f"error: no weights for run {trained.run_ids['ner']}: ")
    assert f"looked for {checkpoint}" in err and err.count("\n") == 1
    assert f"python -m experiments run --spec {trained.folder('ner') / 'spec.json'}" in err
    assert list(tmp_path.iterdir()) == [source]  # nothing written


def test_a_changed_record_or_another_training_is_refused(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    shutil.copytree(trained.store, store)
    copy = dataclasses.replace(trained, store=store)
    source = tmp_path / "s.txt"
    source.write_text("EU rejects German call\n")
    args = ("--input", str(source), "--format", "tokenized")
    metrics_file = copy.folder("ner") / "metrics.json"
    metrics = json.loads(metrics_file.read_text())
    metrics_file.write_text(json.dumps({**metrics, "best_step": 7.0}))
    assert predict(copy, "ner", *args) == 2
    err = capsys.readouterr().err
    assert "holds another training of run" in err and "recorded 7.0" in err
    env_file = copy.folder("ner") / "env.json"
    env = json.loads(env_file.read_text())
    env["provenance"]["identity"]["config"] = "0" * 32
    env_file.write_text(json.dumps(env))
    assert predict(copy, "ner", *args) == 2
    err = capsys.readouterr().err
    assert "was made from other inputs than now: config changed (00000000 →" in err
    assert "--allow-changed" in err and err.count("\n") == 1


def test_blank_input_in_the_tasks_format_is_refused(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format task`` on blank lines only used to exit 0 with an empty output, where
    ``--format tokenized`` refuses."""
    blank = tmp_path / "blank.conll"
    blank.write_text("\n  \n\n")
    capsys.readouterr()
    assert predict(trained, "ner", "--input", str(blank)) == 2
    err = capsys.readouterr().err
    assert err == f"error: --input {blank}: no example (every line is blank)\n"
    assert list(tmp_path.iterdir()) == [blank]  # nothing written


def test_over_long_lines_are_treated_as_training_treats_them(
    trained: Trained, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 5,000-token line that training refuses used to be predicted without a word. A
    tokenized or raw line over the run's limit is refused, naming the line; in the task's own
    format the task's reader applies its dev-split rule (NER keeps such a sentence, SST-5
    refuses it) and one line says what was predicted whole."""
    long = tmp_path / "long.txt"
    long.write_text("EU rejects German call\n\n" + " ".join(["word"] * 5000) + "\n")
    capsys.readouterr()
    assert predict(trained, "ner", "--input", str(long), "--format", "tokenized") == 2
    assert capsys.readouterr().err == (
        f"error: --input {long}:3: a sentence of 5,000 tokens is longer than the run's "
        "max_sentence_tokens=100, which training never trains on (its reader skips or refuses "
        "such a sentence); split the line, or give the input in the task's own format with "
        "--format task (its reader then treats it as it treats the dev split)\n"
    )
    text = tmp_path / "text.txt"
    text.write_text("a fine film\n" + " ".join(["good"] * 600) + "\n")
    assert predict(trained, "sst5", "--input", str(text), "--format", "raw") == 2
    assert capsys.readouterr().err.startswith(
        f"error: --input {text}:2: a sentence of 600 tokens is longer than the run's "
        "max_tokens=512, which training never trains on"
    )
    assert sorted(tmp_path.iterdir()) == [long, text]  # nothing written
    conll = tmp_path / "long.conll"
    conll.write_text("EU B-ORG\n\n" + "".join("word O\n" for _ in range(150)))
    assert predict(trained, "ner", "--input", str(conll)) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["examples"] == 2
    assert err.splitlines()[:-1] == [
        f"--input {conll}: line 3 has 150 tokens, more than the run's max_sentence_tokens=100: "
        "predicted whole, as the task's reader keeps such a sentence in a dev split"
    ]


def test_the_length_limit_is_the_configurations_sentence_limit() -> None:
    from experiments.run.predict import length_limit
    from tasks.ner.config import NerConfig
    from tasks.snli.config import SnliConfig
    from tasks.sst5.config import Sst5Config

    assert length_limit(NerConfig()) == ("max_sentence_tokens", 250)
    assert length_limit(Sst5Config()) == ("max_tokens", 512)
    assert length_limit(SnliConfig()) == ("max_tokens", 200)
    assert length_limit(object()) is None


def test_pairs_are_refused_without_task_format(tmp_path: Path) -> None:
    pair = dataclasses.make_dataclass(
        "Pair", [("premise", tuple[str, ...]), ("hypothesis", tuple[str, ...]), ("label", str)]
    )
    dev = [pair(("A", "dog"), ("An", "animal"), "entailment")]
    with pytest.raises(PredictError, match="a snli example holds more .*--format task"):
        sentence_examples("snli", dev, [(1, ("x",))], "in.txt")


def test_sentence_examples_fill_gold_with_placeholders() -> None:
    tagged = dataclasses.make_dataclass(
        "Tagged",
        [("tokens", tuple[str, ...]), ("tags", tuple[str, ...]), ("line", int), ("path", str)],
    )
    dev = [
        tagged(("EU", "rejects"), ("B-ORG", "O"), 3, "dev.txt"),
        tagged(("Peter", "Blackburn", "said"), ("B-PER", "I-PER", "O"), 9, "dev.txt"),
    ]
    made = sentence_examples("ner", dev, [(2, ("a", "b", "c")), (5, ("d",))], "in.txt")
    assert made == [
        tagged(("a", "b", "c"), ("O", "O", "O"), 2, "in.txt"),
        tagged(("d",), ("O",), 5, "in.txt"),
    ]
    labelled = dataclasses.make_dataclass(
        "Labelled", [("line", int), ("tokens", tuple[str, ...]), ("label", int)]
    )
    made = sentence_examples("sst5", [labelled(1, ("good",), 3)], [(4, ("bad", "film"))], "x")
    assert made == [labelled(4, ("bad", "film"), 3)]


def test_a_stored_plugin_representation_is_refused_unless_trusted(
    trained: Trained,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A store handed over is data: a run whose representation is a plug-in is not rebuilt (its
    module imported and run) unless ``--trust-plugin`` names it; ``--allow-changed`` does not."""
    from experiments.run import predict as predict_module

    pwned = tmp_path / "pwned"
    real = predict_module._stored_run

    def handed(store: Path, run_id: str) -> object:
        stored = real(store, run_id)
        config = {"command": f"echo PWNED > {pwned}"}
        spec = dataclasses.replace(
            stored.spec, representation="os:system", representation_config=config
        )
        return dataclasses.replace(stored, spec=spec)

    monkeypatch.setattr(predict_module, "_stored_run", handed)
    text = tmp_path / "in.txt"
    text.write_text("a fine film .\n", encoding="utf-8")
    for extra in ([], ["--allow-changed"]):
        assert predict(trained, "sst5", "--input", str(text), "--format", "tokenized", *extra) == 2
        err = capsys.readouterr().err
        assert "representation is the plug-in 'os:system'" in err and "--trust-plugin" in err
    assert not pwned.exists()
