"""``--repr-set`` keys a user can find and a mistake that names them: ``representations list``
prints every declared key, ``run``/``sweep``/``compare --help`` name them and point at it, a
misspelt key or a value outside its choices is refused in one line (exit status 2) before any
run; the declared flags (``--elmo``, ``--glove``, ``--cove``) give the configurations they gave
before."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from experiments.cli import build_parser, main
from experiments.cli.errors import UsageError
from experiments.cli.options import (
    FLAG_REPRESENTATIONS,
    check_options,
    representation_config,
    run_config,
    task_overrides,
)
from experiments.cli.representations import LIST_COMMAND
from experiments.plan.specs import preset_bilm
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered


def test_representations_list_names_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["representations", "list"]) == 0
    out = capsys.readouterr().out
    for line in ("elmo: ", "hf: ", "hdf5: ", "none: "):
        assert f"\n{line}" in out
    assert "  directions  {both,forward,backward}, default both: " in out
    assert "  adapt         {frozen,finetune,lora}, default frozen: " in out
    assert "  lora_rank     int: LoRA rank" in out
    assert "also --glove PATH" in out and "also --elmo FILE" in out
    assert main(["representations", "list", "glove"]) == 0
    only = capsys.readouterr().out
    assert "\nglove: " in only and "\nelmo: " not in only and "lora_rank" not in only


def test_representations_list_refuses_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["representations", "list", "elmo2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown representation 'elmo2'") and err.count("\n") == 1


@pytest.mark.parametrize("command", ["run", "sweep", "compare"])
def test_help_names_the_keys_and_the_listing(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert LIST_COMMAND in out
    for key in (
        "adapt={frozen,finetune,lora}",
        "lora_rank=int",
        "directions={both,forward,backward}",
    ):
        assert key in out


def test_a_misspelt_key_or_a_bad_value_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = (
        (["directons=forward"], "unknown option(s) ['directons']; valid: checkpoint, options"),
        (["adapt=lorra"], 'adapt="lorra": choose one of frozen, finetune, lora'),
        (["directions=sideways"], "choose one of both, forward, backward"),
        (["adapt=lora", "lora_rank=four"], 'lora_rank="four": expected int'),
        (["adapt=frozen", "lora_rank=4"], "lora_rank needs adapt=lora"),
        (["state=carry"], "state is set by the run's LSTM state policy (--state)"),
    )
    with registered(tmp_path / "toy-demo"):
        for pairs, message in cases:
            argv = ["run", "toy", "--repr", "elmo", "--repr-set", *pairs, *cli_dirs(tmp_path)]
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
            assert LIST_COMMAND in err
        argv = ["sweep", "toy", "--repr", "hf,glove", "--repr-set", "adapt=lora"]
        assert main([*argv, *cli_dirs(tmp_path)]) == 2
        assert (
            "representation 'glove': adapt=\"lora\": choose one of frozen"
            in capsys.readouterr().err
        )
    assert not (tmp_path / "store").exists() and not (tmp_path / "work").exists()


def test_valid_keys_reach_the_spec_as_given(tmp_path: Path) -> None:
    from experiments.cli.runs import train_specs

    def config(*argv: str) -> dict[str, object]:
        args = build_parser().parse_args(["run", "toy", *argv, *cli_dirs(tmp_path)])
        (spec,) = train_specs(args)[0]
        return dict(spec.representation_config)

    with registered(tmp_path / "toy-demo"):
        assert config("--repr-set", "adapt=lora", "lora_rank=4") == {
            "adapt": "lora",
            "lora_rank": 4,
        }
        assert config("--repr-set", "directions=forward") == {"directions": "forward"}
        assert config("--elmo", "o.json", "w.hdf5") == {"options": "o.json", "weights": "w.hdf5"}
        assert config("--repr", "hf", "--repr-set", "layers=[0,2]") == {"layers": [0, 2]}
        assert config() == {}


def test_a_plugin_options_are_checked_by_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "throwaway_cli_reps.py").write_text(
        "from tasks.representations import ReprOption\n\n"
        "class Factory:\n"
        "    OPTIONS = (ReprOption('dim', 'vector width', types=(int,), default=8),)\n\n"
        "    def __init__(self, dim=8):\n"
        "        self.dim = dim\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "throwaway_cli_reps:Factory"
    try:
        check_options(name, {"dim": 16, "adapt": "frozen"})
        with pytest.raises(UsageError, match=r"unknown option\(s\) \['dims'\]; valid: dim, adapt"):
            check_options(name, {"dims": 16})
        with pytest.raises(UsageError, match='dim="wide": expected int'):
            check_options(name, {"dim": "wide"})
        assert main(["representations", "list", name]) == 0
        out = capsys.readouterr().out
        assert f"\n{name}: " in out and "  dim  int, default 8: vector width" in out
    finally:
        sys.modules.pop("throwaway_cli_reps", None)


# ------------------------------------------------------------- flags built from the declarations
def test_the_flags_come_from_the_declarations() -> None:
    assert FLAG_REPRESENTATIONS == ("elmo", "bilm-random", "glove", "cove")
    args = build_parser().parse_args(
        ["run", "ner", "--glove", "g.txt", "--cove", "c.pth", "--turian", "t.txt"]
    )
    assert task_overrides(args) == ["word_vectors=g.txt", "turian_vectors=t.txt"]
    assert run_config(args, "cove") == {"weights": "c.pth", "glove_path": "g.txt"}
    assert run_config(args, "glove") == {"path": "g.txt"}
    assert run_config(args, "hf") == {}


@pytest.mark.parametrize(
    ("name", "elmo", "extra", "expected"),
    [
        ("elmo", None, {}, {}),
        ("elmo", None, {"finetune": 1.0}, {"finetune": 1.0}),
        ("elmo", ["c.pt"], {"finetune": 0}, {"checkpoint": "c.pt", "finetune": 0}),
        ("elmo", ["o.json", "w.hdf5"], {}, {"options": "o.json", "weights": "w.hdf5"}),
        ("elmo", ["published:small"], {}, {"published": "small"}),
        ("bilm-random", ["o.json", "w.hdf5"], {}, {"options": "o.json"}),
        ("bilm-random", ["c.pt"], {"finetune": 0}, {"checkpoint": "c.pt"}),
        ("glove", ["c.pt"], {"glove": "g.txt", "finetune": 2.0}, {"path": "g.txt"}),
        (
            "cove",
            None,
            {"glove": "g.txt", "cove": "c.pth"},
            {"weights": "c.pth", "glove_path": "g.txt"},
        ),
        ("hf", ["c.pt"], {"glove": "g.txt"}, {}),
        ("my_pkg:Rep", ["c.pt"], {}, {}),
    ],
)
def test_representation_config_gives_what_it_gave(
    name: str, elmo: list[str] | None, extra: dict[str, object], expected: dict[str, object]
) -> None:
    """The configurations (and their key order, hence the stored spec's bytes) of the flags."""
    got = representation_config(name, elmo, **extra)  # type: ignore[arg-type]
    assert json.dumps(got) == json.dumps(expected)


def test_the_paper_presets_biLM_comes_from_the_declaration_in_planning() -> None:
    """Without ``--elmo`` the flags name no biLM; planning adds the value ELMo's ``published``
    option declares for the ``paper`` preset, first (the stored spec's key order)."""
    tuned = representation_config("elmo", None, finetune=1.0)
    assert json.dumps(preset_bilm(tuned, "paper")) == '{"published": "original", "finetune": 1.0}'
    assert preset_bilm(tuned, "mini") == tuned
    assert preset_bilm(tuned, "paper", shipped=True) == tuned


@pytest.mark.parametrize(
    ("name", "elmo", "extra", "message"),
    [
        ("elmo", ["a", "b", "c"], {}, "--elmo takes OPTIONS.json WEIGHTS.hdf5, CHECKPOINT or"),
        ("bilm-random", ["published:original"], {}, "bilm-random takes --elmo for options or"),
        ("bilm-random", ["c.pt"], {"finetune": 1.0}, "--finetune-bilm applies to --repr elmo"),
        ("cove", None, {"glove": "g.txt"}, "cove needs --cove WEIGHTS.pth (the MT-LSTM"),
    ],
)
def test_flags_that_do_not_fit_are_refused(
    name: str, elmo: list[str] | None, extra: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        representation_config(name, elmo, **extra)  # type: ignore[arg-type]
    assert message in str(caught.value)
