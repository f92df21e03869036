"""The shared options (harness/cli/options.py): declared once, checked once, the same on every command;
``bench --only reference`` runs the exact reference's timing."""

import json

import pytest

from specproof.harness.cli import main, options
from specproof.harness.cli.parser import SUBCOMMANDS, build_parser

SHARED = {"--json", "--out", "--quiet", "--device", "--dtype", "--dtypes", "--seed"}


def _subparser(command):
    sub = next(a for a in build_parser(command)._actions if a.dest == "command")
    return sub.choices[command]


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_output_and_seed_option_is_declared_through_options(command):
    parser = _subparser(command)
    flags = {s for a in parser._actions for s in a.option_strings}
    outputs = {flag for _, flag, _ in parser.get_default(options._OUTPUTS) or ()}
    assert {"--json", "--out"} & flags == outputs
    assert ("--seed" in flags) == (parser.get_default(options._SEEDS) == ("seed",))
    assert flags & SHARED  # every command takes at least one of them


def test_the_shared_options_mean_the_same_everywhere():
    seen = {}
    for command in SUBCOMMANDS:
        for action in _subparser(command)._actions:
            for flag in set(action.option_strings) & {"--json", "--quiet", "--seed"}:
                seen.setdefault(flag, set()).add((type(action).__name__, action.default, action.type))
    assert all(len(kinds) == 1 for kinds in seen.values()), seen


def test_device_choices_are_the_registry_devices():
    from specproof.impls.registry import DEVICES

    assert options.DEVICES == DEVICES


def test_bench_only_reference_writes_the_reference_timing(tmp_path, capsys):
    (tmp_path / "new").mkdir()
    args = ["--vocab", "4", "8", "--repeats", "1", "--seed", "3"]
    assert main(["bench", "--only", "reference", "--out", str(tmp_path / "new"), *args]) == 0
    new = json.loads((tmp_path / "new" / "reference.json").read_text())
    assert new["kind"] == "bench-reference" and new["provenance"]["seeds"] == [3]
    assert [(r["vocab"], r["outputs_agree_exactly"]) for r in new["result"]["rows"]] == [(4, True), (8, True)]
    assert not (tmp_path / "new" / "bench.json").exists()
    with pytest.raises(SystemExit) as gone:  # no former spelling
        main(["bench-reference"])
    assert gone.value.code == 2


@pytest.mark.parametrize("argv, flag", [
    (["bench", "--vocab", "4"], "--vocab"),
    (["bench", "--repeats", "2"], "--repeats"),
    (["bench", "--seed", "-1"], "--seed"),
    (["bench", "--only", "reference", "--seed", "-5"], "--seed"),
])
def test_bench_usage_errors_name_the_flag_and_write_nothing(argv, flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv + ["--out", str(tmp_path / "o")]) == 2
    assert f"error: {flag}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_output_path_is_checked_by_the_one_function(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert main(["bench", "--only", "reference", "--vocab", "4", "--out", str(tmp_path / "afile")]) == 2
    assert "--out" in capsys.readouterr().err and (tmp_path / "afile").read_text() == "x"
