"""``nox -s peer``'s machinery without allennlp: the content key of a peer run, the per-epoch
comparison (gap target, seed-aware test, time ratio) and the table rendered from stored records
(a peer record and a project store made here)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.peer import render
from experiments.peer.render import compare_epochs, render_task
from experiments.peer.run import (
    ELMO_VARIANT_KEYS,
    PEER_FORMAT,
    EpochPoint,
    PeerRequest,
    Series,
    _project_argv,
    base_row,
    collect,
    peer_key,
    project_log_name,
    project_overrides,
    project_store,
    split_variant,
    variant_row,
)
from experiments.run.identity import config_digest
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore, RunRecord
from tasks.metrics.prf import span_f1_from_totals
from tasks.ner.peer import PEER
from tasks.ner.task import VERSION as NER_VERSION
from tasks.registry import get_task
from tests.experiments.helpers import PROVENANCE, tiny_tagging_set

IDS = tuple(f"dev.txt:{i}" for i in range(1, 41))


def units(correct: int) -> tuple[tuple[str, ...], list[list[float]]]:
    """40 sentences of one gold chunk each, the first ``correct`` found (span rows c, p, g)."""
    return IDS, [[1.0 if i < correct else 0.0, 1.0, 1.0] for i in range(len(IDS))]


def series(side: str, row: str, correct: dict[int, list[int]], cpu: float) -> Series:
    s = Series(side, row)
    for seed, per_epoch in correct.items():
        s.runs[seed] = [
            EpochPoint(e + 1, c / 40, None, cpu, 100.0, units(c)) for e, c in enumerate(per_epoch)
        ]
    return s


def test_peer_key_follows_file_contents_not_their_paths(tmp_path: Path) -> None:
    a, b = tmp_path / "a.conll", tmp_path / "b" / "same.conll"
    b.parent.mkdir()
    a.write_text("x O O O\n")
    b.write_text("x O O O\n")
    key_a = peer_key({"train_data_path": str(a), "n": 1}, [a], PEER)
    assert key_a == peer_key({"train_data_path": str(b), "n": 1}, [b], PEER)
    assert key_a != peer_key({"train_data_path": str(a), "n": 2}, [a], PEER)
    a.write_text("y O O O\n")
    assert key_a != peer_key({"train_data_path": str(a), "n": 1}, [a], PEER)


def test_peer_key_digests_a_folder_split_by_its_files(tmp_path: Path) -> None:
    """allennlp's srl reader takes a folder: its files' names and contents make the key."""
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "train.gold_conll").write_text("doc 0 0 The\n")
    key = peer_key({"train_data_path": str(one)}, [one], PEER)
    assert key == peer_key({"train_data_path": str(two)}, [two], PEER)
    (two / "sub" / "train.gold_conll").write_text("doc 0 0 A\n")
    assert key != peer_key({"train_data_path": str(two)}, [two], PEER)
    (one / "sub" / "train.gold_conll").rename(one / "sub" / "dev.gold_conll")
    assert key != peer_key({"train_data_path": str(one)}, [one], PEER)


def test_epochs_are_compared_with_the_gap_target_the_test_and_the_time_ratio() -> None:
    peer = series("allennlp", "baseline", {0: [20, 30, 36], 1: [21, 31, 35], 2: [19, 30, 36]}, 100)
    close = series("project", "baseline", {0: [10, 30, 36], 1: [11, 30, 35], 2: [12, 31, 36]}, 60)
    rows = compare_epochs(close, peer, span_f1_from_totals, 100.0)
    assert [r.epoch for r in rows] == [1, 2, 3]
    assert rows[0].within is None  # epoch 1 is not a target
    assert rows[1].within and rows[2].within  # |Δ| within max(1 point, peer's sd)
    assert rows[0].difference == pytest.approx((11 - 20) / 40)
    assert rows[0].comparison is not None and rows[0].comparison.p_value < 0.05
    assert rows[2].comparison is not None and rows[2].comparison.p_value > 0.05
    assert rows[0].project_cpu / rows[0].peer_cpu == pytest.approx(0.6)
    far = series("project", "baseline", {0: [20, 20, 20], 1: [20, 21, 20], 2: [20, 20, 21]}, 60)
    assert compare_epochs(far, peer, span_f1_from_totals, 100.0)[1].within is False
    # the largest gap is sought where the target applies: epoch 1's −9 of 40 is passed over
    assert abs(rows[0].difference) > max(abs(rows[1].difference), abs(rows[2].difference))
    assert render.largest_gap(rows).epoch in (2, 3)
    assert render.largest_gap(rows[:1]).epoch == 1  # unless there is no other epoch


def store_project_run(
    store: ResultsStore,
    request: PeerRequest,
    seed: int,
    per_epoch: list[int],
    variant: tuple[str, ...] = (),
    config: str | None = None,
    precision: str = "fp32",
    **fields: object,
) -> None:
    spec = RunSpec(
        task="ner",
        task_version=NER_VERSION,
        representation="none",
        sites=(),
        dropout=0.0,
        preset="paper",
        overrides=tuple(sorted((*project_overrides(request), *variant))),
        seed=seed,
        data=request.data,
        max_epochs=request.epochs,
    )
    spec = replace(spec, **fields)  # type: ignore[arg-type]
    log, attachments = [], {}
    for e, c in enumerate(per_epoch):
        name = f"units-dev-step{e + 1}.json"
        ids, rows = units(c)
        attachments[name] = json.dumps({"ids": list(ids), "rows": rows})
        log.append(
            {
                "epoch": e + 1,
                "step": e + 1,
                "dev_f1": c / 40,
                "train_cpu_s": 50.0,
                "peak_rss_mb": 900.0,
                "units_file": name,
            }
        )
    # made by this code: the configuration the spec resolves to now (unless a test says else)
    identity = {"config": config_digest(spec) if config is None else config}
    if precision != "fp32":  # as the run records it (experiments.run.identity)
        identity["precision"] = precision
    provenance = replace(PROVENANCE, identity=identity)
    record = RunRecord(
        spec, {"dev_f1": per_epoch[-1] / 40}, provenance, tuple(log), attachments=attachments
    )
    store.put(record)


def stored(tmp_path: Path) -> tuple[Path, PeerRequest]:
    """Two seeds a side of a 2-epoch baseline: peer records and a project store."""
    out = tmp_path / "peer"
    request = PeerRequest("ner", "some/folder", seeds=(0, 1), epochs=2, representations=("none",))
    for seed, per_epoch in ((0, [20, 30]), (1, [22, 31])):
        record = {
            "format": PEER_FORMAT,
            "task": "ner",
            "key": f"k{seed}",
            "row": "baseline",
            "seed": seed,
            "data": request.data,
            "overrides": [],
            "epochs_requested": 2,
            "batch_size": 64,
            "cpu": "Test CPU",
            "epochs": [
                {
                    "epoch": e + 1,
                    "metric": c / 40,
                    "native": c / 40,
                    "train_cpu_s": 100.0,
                    "peak_rss_mb": 1300.0,
                    "units": {"ids": list(units(c)[0]), "rows": units(c)[1]},
                }
                for e, c in enumerate(per_epoch)
            ],
        }
        path = out / "runs" / "ner" / f"k{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
    store = ResultsStore(out / "project-runs")
    store_project_run(store, request, 0, [21, 30])
    store_project_run(store, request, 1, [21, 31])
    return out, request


def test_the_table_renders_from_stored_records_alone(tmp_path: Path) -> None:
    out, request = stored(tmp_path)
    found = {(s.side, s.row): s for s in collect(request, out)}
    assert sorted(found) == [("allennlp", "baseline"), ("project", "baseline")]
    assert sorted(found[("project", "baseline")].runs) == [0, 1]
    path = render_task("ner", out, plot=False)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# NER (`paper` preset) beside allennlp-models' `crf_tagger`")
    assert lines[3].startswith("| some/folder | baseline | 1 |")  # the first row on line 4
    table = [line for line in lines if line.startswith("| some/folder | baseline |")]
    assert len(table) == 2 and table[0].endswith("| 0.50 |")  # CPU ratio 50 / 100
    assert any("Test CPU" in line for line in lines)
    assert all(len(line) <= 160 for line in lines)  # the notes are wrapped too
    assert render.requests_of("ner", out)[0].seeds == (0, 1)
    # every figure in the CSV beside it: one line per data set, row and epoch
    first, second = csv.DictReader(io.StringIO((out / "ner.csv").read_text()))
    assert (first["data"], first["row"], first["epoch"]) == ("some/folder", "baseline", "1")
    assert first["target"] == "" and second["target"] in ("true", "false")
    assert float(first["cpu_ratio"]) == pytest.approx(0.5)


def test_the_summary_has_a_line_per_row_with_its_targets_and_names_rows_not_run(
    tmp_path: Path,
) -> None:
    out, _ = stored(tmp_path)
    path = render.render_summary(out)
    assert path == out / "summary.md"
    lines = path.read_text().splitlines()
    rows = [line for line in lines if line.startswith("| NER: `crf_tagger` |")]
    assert len(rows) == 1  # the other tasks have no records: no line
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1:4] == ["some/folder", "2, 64", "baseline"]
    assert cells[4].startswith("+0.00 (")  # both sides 30.5 of 40 at the final epoch
    assert cells[5:8] == ["+0.00 (epoch 2)", "1 of 1", "0.500×"]  # CPU 50 s / 100 s
    assert cells[8] == "yes, yes" and cells[9] == "–"  # on every target: nothing to explain
    text = " ".join(line.strip() for line in lines)  # the notes unwrapped
    assert (
        "Not run yet: NER some/folder (2 epochs) elmo carry; NER some/folder (2 epochs) elmo reset."
        in text
    )
    empty = tmp_path / "empty"
    with pytest.raises(FileNotFoundError, match="no peer records"):
        render.render_summary(empty)


def test_peer_summary_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from experiments.cli import main

    out, _ = stored(tmp_path)
    assert main(["peer", "--summary", "--out", str(out)]) == 0
    assert (out / "summary.md").is_file() and "summary.md" in capsys.readouterr().out
    assert main(["peer", "--summary", "--task", "ner", "--out", str(out)]) != 0
    assert "no --task or --data with it" in capsys.readouterr().err
    assert main(["peer", "--out", str(out)]) != 0
    assert "--task is needed (or --summary)" in capsys.readouterr().err


def test_a_variant_row_sits_after_its_row_against_the_same_peer_row(tmp_path: Path) -> None:
    out, request = stored(tmp_path)
    store = ResultsStore(out / "project-runs")
    variant = ("train.batching=examples",)
    for seed in (0, 1):
        store_project_run(store, request, seed, [20, 33], variant)
    other = replace(request, data="elsewhere")  # another request's run is not a variant
    store_project_run(store, other, 0, [1, 1], variant)
    found = [(s.side, s.row) for s in collect(request, out)]
    examples = "baseline + train.batching=examples"
    assert found == [("allennlp", "baseline"), ("project", "baseline"), ("project", examples)]
    lines = render_task("ner", out, plot=False).read_text().splitlines()
    rows = [line for line in lines if line.startswith("| some/folder |")]
    assert [r.split(" | ")[1] for r in rows] == ["baseline", "baseline", examples, examples]
    assert rows[3].split(" | ")[3].startswith("76.25")  # allennlp's epoch 2: (30 + 31) / 80
    assert any("`--variant`" in line for line in lines)
    assert variant_row("elmo carry", ()) == "elmo carry" and base_row(examples) == "baseline"


def test_runs_made_under_another_preset_default_are_left_out(tmp_path: Path) -> None:
    """A record whose resolved configuration is not what its spec resolves to now (a preset's
    default changed since) is not shown under the row's name."""
    out, request = stored(tmp_path)
    store = ResultsStore(out / "project-runs")
    store_project_run(store, request, 0, [1, 1], ("train.batching=examples",), config="old")
    found = [(s.side, s.row) for s in collect(request, out)]
    assert found == [("allennlp", "baseline"), ("project", "baseline")]


def test_a_variant_item_the_preset_has_anyway_names_no_variant(tmp_path: Path) -> None:
    out, request = stored(tmp_path)
    store = ResultsStore(out / "project-runs")
    preset = get_task("ner").configure("paper", [])
    assert not any(item.startswith("dropout=") for item in project_overrides(request))
    store_project_run(store, request, 0, [5, 5], (f"dropout={preset.dropout}",))
    store_project_run(store, request, 1, [5, 5], (f"dropout={preset.dropout / 2}",))
    found = {s.row: s for s in collect(request, out) if s.side == "project"}
    # the preset's own value changes nothing: that record is a baseline run; half is a variant
    assert list(found) == ["baseline", f"baseline + dropout={preset.dropout / 2}"]
    # seed 0 has two baseline runs: the one asked for as the plain row is shown
    assert found["baseline"].runs[0][-1].metric == pytest.approx(30 / 40)


@pytest.mark.slow
def test_both_sides_train_and_render_on_a_tiny_set(tmp_path: Path) -> None:
    """The real thing, one epoch of a tiny tagging set: allennlp's crf_tagger in the peer venv
    (built from the repository's recipe when missing: pip needs the network, a few minutes)
    beside the project's paper preset."""
    from experiments.peer.run import run_request

    data = tiny_tagging_set(tmp_path)
    request = PeerRequest(
        "ner", str(data), seeds=(0,), epochs=1, batch_size=8, representations=("none",)
    )
    out = tmp_path / "out"
    found, recipe = run_request(request, out, tmp_path / "work", max_parallel=2, echo=print)
    sides = {(s.side, s.row): s for s in found}
    assert set(sides) == {("allennlp", "baseline"), ("project", "baseline")}
    [peer_run] = sides[("allennlp", "baseline")].runs.values()
    assert peer_run[0].native == pytest.approx(
        peer_run[0].metric
    )  # one ruler agrees with allennlp's
    assert peer_run[0].train_cpu_s > 0 and peer_run[0].units is not None
    assert len(peer_run[0].units[0]) == len(recipe.splits["dev"]) == 12
    again, _ = run_request(request, out, tmp_path / "work", max_parallel=2, echo=print)
    assert {s.sources[0] for s in again} == {s.sources[0] for s in found}  # reused, not retrained
    assert render_task("ner", out).is_file() and (out / "ner.png").is_file()


def test_the_bundled_demo_set_is_labelled_demo_in_peer_tables() -> None:
    assert PeerRequest("snli", "demo").data_label.startswith("DEMO SNLI")
    assert PeerRequest("squad", "demo").data_label.startswith("DEMO SQuAD (")  # its table label
    assert PeerRequest("ner", "some/folder").data_label == "some/folder"


def test_an_elmo_variant_changes_the_elmo_rows_point_and_names_its_row(tmp_path: Path) -> None:
    """``--variant elmo.KEY=VALUE`` reaches ``run`` as its ELMo options, and a stored ELMo run
    whose sites, mix or dropout depart from the preset's becomes its own row, named by the
    departures alone (however the request spelled them)."""
    from bilm.scalar_mix import MixSpec
    from experiments.peer.run import _project_argv
    from tasks.registry import get_task

    task = get_task("ner")
    out, request = stored(tmp_path)
    elmo = replace(
        request,
        representations=("elmo",),
        states=("carry",),
        variant=("elmo.layer_norm=off", "elmo.dropout=0.0", "train.batching=shuffled"),
    )
    argv = _project_argv(elmo, "elmo", "carry", 0, out, tmp_path / "work")
    assert argv[argv.index("--dropout") + 1] == "0.0" and "--no-layer-norm" in argv
    assert "train.batching=shuffled" in argv and "elmo.dropout=0.0" not in argv
    base = _project_argv(request, "none", "reset", 0, out, tmp_path / "work")
    assert not {"--dropout", "--no-layer-norm", "--layer-norm"} & set(base)

    paper = {
        "representation": "elmo",
        "sites": tuple(sorted(task.sites_for("paper"))),
        "mix": task.default_mix,
        "dropout": task.elmo_dropout_for("paper"),
        "state": "carry",
    }
    store = ResultsStore(out / "project-runs")
    no_norm = replace(task.default_mix, layer_norm=not task.default_mix.layer_norm)
    store_project_run(store, elmo, 0, [25, 35], **paper)
    store_project_run(store, elmo, 0, [26, 36], **{**paper, "mix": no_norm, "dropout": 0.5})
    store_project_run(store, elmo, 1, [27, 37], **{**paper, "mix": MixSpec("last")})
    rows = {s.row: sorted(s.runs) for s in collect(replace(elmo, variant=()), out)}
    flipped = str(no_norm.layer_norm).lower()
    assert rows["elmo carry"] == [0]
    assert rows[f"elmo carry + elmo.layer_norm={flipped} + elmo.dropout=0.5"] == [0]
    last = [row for row in rows if "elmo.mode=last" in row]
    assert len(last) == 1 and rows[last[0]] == [1]


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        (("elmo.width=3",), "elmo.width is not one of elmo.sites"),
        (("elmo.layer_norm=maybe",), "takes true or false"),
        (("dropout",), "KEY=VALUE"),
    ],
)
def test_a_bad_elmo_variant_is_refused_before_anything_runs(
    variant: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PeerRequest("snli", "demo", representations=("elmo",), variant=variant)
    assert split_variant(("dropout=0.1", "elmo.dropout=0")) == (
        ("dropout=0.1",),
        ("elmo.dropout=0",),
    )
    assert "sites" in ELMO_VARIANT_KEYS


def test_an_elmo_variant_is_refused_beside_a_baseline_row() -> None:
    with pytest.raises(ValueError, match="changes the ELMo rows only: give --repr elmo"):
        PeerRequest("snli", "demo", variant=("elmo.dropout=0",))


def test_a_long_variant_row_is_lettered_with_its_changes_in_a_note(tmp_path: Path) -> None:
    """A row whose changes would widen the table past 160 characters is shown as
    ``ROW + variant A``, its changes in a note; the CSV keeps the full name."""
    out, request = stored(tmp_path)
    store = ResultsStore(out / "project-runs")
    variant = ("train.batching=examples", "train.optimizer.lr=0.002", "dropout=0.25")
    for seed in (0, 1):
        store_project_run(store, request, seed, [20, 33], variant)
    lines = render_task("ner", out, plot=False).read_text().splitlines()
    rows = [line for line in lines if line.startswith("| some/folder |")]
    assert [r.split(" | ")[1] for r in rows[2:]] == ["baseline + variant A"] * 2
    assert all(len(line) <= 160 for line in lines)
    text = " ".join(lines)
    assert "Variant A: `baseline` with `dropout=0.25`, `train.batching=examples`," in text
    full = "baseline + dropout=0.25 + train.batching=examples + train.optimizer.lr=0.002"
    assert full in (out / "ner.csv").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds=-1"], "--seeds must be >= 0, got -1"),
        (["--seeds", ""], "--seeds needs at least one seed"),
        (["--epochs", "0"], "argument --epochs: expected an integer >= 1"),
        (["--epochs", "-2"], "argument --epochs: expected an integer >= 1"),
        (["--batch-size", "0"], "argument --batch-size: expected an integer >= 1"),
        (["--max-parallel", "0"], "argument --max-parallel: expected an integer >= 1"),
        (["--repr", "bert"], "--repr takes a comma list of none, elmo"),
        (["--state", "frozen"], "--state takes a comma list of reset, carry, warm"),
        (["--set", "nokey=1"], "unknown config key 'nokey'"),
    ],
)
def test_bad_arguments_stop_in_one_line_before_anything_is_written(
    args: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Seeds, epochs, batch size, runs at once, rows, states and ``--set`` are checked before the
    data is read or written, the inputs exported or the peer's venv built (exit status 2)."""
    from experiments.cli import main
    from experiments.peer import run as peer_run

    def never(*_: object, **__: object) -> None:
        raise AssertionError("reached work that a bad argument must prevent")

    monkeypatch.setattr(peer_run, "run_request", never)
    monkeypatch.setattr(peer_run, "prepare_inputs", never)
    monkeypatch.setattr(peer_run, "ensure_venv", never)
    where = ["--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")]
    with pytest.raises(SystemExit) as exited:  # argparse's own exit, or the command's status
        raise SystemExit(main(["peer", "--task", "snli", "--data", "demo", *args, *where]))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()


def test_a_line_off_target_links_its_tasks_deviations_entry(tmp_path: Path) -> None:
    out, _ = stored(tmp_path)
    link = render.deviations_link("ner")
    text, target = link[1:].split("](")
    readme, anchor = target.rstrip(")").split("#")
    assert text == "ner deviations" and anchor == render.DEVIATIONS_ANCHOR
    committed = Path(render.__file__).resolve().parents[2] / "results" / "peer"
    assert f'id="{anchor}"' in (committed / readme).resolve().read_text(encoding="utf-8")
    found = render.compare_task("ner", out)[0][0]
    rows = found.compared["baseline"]
    late = [replace(r, within=False) if r.epoch == 2 else r for r in rows]
    metric = render.get_task("ner").metric
    line = render._summary_row("ner", "crf_tagger", "x | 2, 64", "baseline", late, metric, link)
    assert line.endswith(f"| {link} |") and "0 of 1" in line
    on = render._summary_row("ner", "crf_tagger", "x | 2, 64", "baseline", rows, metric, link)
    assert on.endswith("| – |")


def test_bf16_rows_sit_beside_allennlp_and_beside_the_same_row_in_fp32(tmp_path: Path) -> None:
    out, request = stored(tmp_path)
    bf16 = replace(request, precision="bf16")
    store = ResultsStore(project_store(out, "bf16"))
    assert store.root == out / "project-runs-bf16"
    store_project_run(store, bf16, 0, [20, 30], precision="bf16")
    store_project_run(store, bf16, 1, [22, 32], precision="bf16")
    # an fp32 record in the bf16 store (or the reverse) is not shown under the other's name
    store_project_run(ResultsStore(out / "project-runs"), request, 2, [1, 1], precision="bf16")
    found = [(s.side, s.row) for s in collect(request, out)]
    row = "baseline + precision=bf16"
    assert found == [("allennlp", "baseline"), ("project", "baseline"), ("project", row)]
    lines = render_task("ner", out, plot=False).read_text().splitlines()
    beside_peer = [line for line in lines if line.startswith(f"| some/folder | {row} |")]
    assert len(beside_peer) == 4  # against allennlp, then against fp32: 2 epochs each
    start = next(i for i, line in enumerate(lines) if line.startswith("bf16 against fp32"))
    assert lines[start + 2].startswith("| data | row | epoch | fp32 F1 | bf16 F1 | Δ | p |")
    first, second = (line.split(" | ") for line in lines[start + 4 : start + 6])
    assert all(len(line) <= 160 for line in lines)
    assert first[2:6] == ["1", "52.50 ± 0.00", "52.50 ± 3.54", "+0.00"]  # of 40: 21, 21; 20, 22
    assert second[2:6] == ["2", "76.25 ± 1.77", "77.50 ± 3.54", "+1.25"]  # 30, 31; 30, 32
    assert first[7] == "" and second[7] in ("yes", "**no**")  # epoch 1 is not judged
    assert any("`ROW + precision=bf16`" in line for line in lines)
    argv = _project_argv(bf16, "none", "reset", 0, out, tmp_path / "work")
    at = argv.index("--precision")
    assert argv[at + 1] == "bf16" and argv[argv.index("--store") + 1] == str(store.root)
    assert argv[argv.index("--work") + 1] == str(tmp_path / "work" / "project-bf16")
    with pytest.raises(ValueError, match="precision must be one of"):
        replace(request, precision="fp16")


def test_project_log_names_fit_one_file_name_and_stay_distinct() -> None:
    assert project_log_name("baseline + init=torch", 2) == "baseline-+-init=torch-s2.out"
    long = "baseline" + "".join(f" + key_{i}=value" for i in range(30))
    other = long + " + one=more"
    names = {project_log_name(row, 0) for row in (long, other)}
    assert len(names) == 2  # the digest of the whole row keeps them apart
    assert all(len(n.encode()) <= 255 and n.endswith("-s0.out") for n in names)
