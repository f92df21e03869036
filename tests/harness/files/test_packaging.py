"""Packaging: every import is declared where the README installs it, and the CLI starts light.

The start-up checks look at ``sys.modules`` in a fresh interpreter (deterministic), never at a clock.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from specproof.harness.cli import parser as cli

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11; CI runs 3.11

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("harness", "proofs", "impls", "tests")
HEAVY = ("torch", "sympy", "z3")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalise(re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0])


def _readme_command(section: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(f"## {section}\n", 1)[1].split("```bash\n", 1)[1]
    return block.split("\n", 1)[0]


def _declared(extras: list[str]) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {_requirement_name(r) for r in project["dependencies"]}
    for extra in extras:
        names |= {_requirement_name(r) for r in project["optional-dependencies"][extra]}
    return names


def _third_party_imports() -> dict[str, str]:
    """Top-level module -> one file importing it, over the package and the tests."""
    local = {p.stem for folder in SOURCES for p in (ROOT / folder).rglob("*.py")}
    local |= {p.name for folder in SOURCES for p in (ROOT / folder).rglob("*") if p.is_dir()}
    found: dict[str, str] = {}
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in local and top != "specproof":
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_import_is_declared_in_what_the_readme_test_command_installs():
    command = _readme_command("Tests")
    extras = re.search(r'pip install -e "\.\[([^\]]*)\]"', command).group(1).split(",")
    declared = _declared(extras)
    owners = packages_distributions()
    missing = {}
    for module, where in _third_party_imports().items():
        distributions = {_normalise(d) for d in owners.get(module, [])}
        if not distributions & declared:
            missing[module] = (where, sorted(distributions) or "not installed")
    assert not missing, f"imported but not declared in core or [{','.join(extras)}]: {missing}"


def test_the_report_extra_holds_what_the_report_imports():
    assert {"matplotlib", "transformers"} <= _declared(["report"])


def test_ci_runs_the_readme_test_command_in_a_fresh_environment():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m venv" in script and "--system-site-packages" not in script
    assert "pip install -q torch==2.13.0" in script and "README.md" in script
    assert "pytest" in _readme_command("Tests")


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\n"
                          f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return {"loaded": json.loads(out.stdout.strip().splitlines()[-1]), "stdout": out.stdout}


@pytest.mark.parametrize("code", [
    "import specproof.harness.cli.parser",
    "import specproof.proofs, specproof.proofs.arith, specproof.harness",
    "from specproof.harness.cli.parser import SUBCOMMANDS, build_parser\n"
    "build_parser()\nfor c in SUBCOMMANDS: build_parser(c)",
    "from specproof.harness.cli import main\nmain(['reference', '--p', '1/2,1/2', '--q', '1,0'])",
])
def test_help_and_reference_start_without_torch_sympy_or_z3(code):
    assert _fresh(code)["loaded"] == []


def test_each_subcommand_module_adds_the_command_it_is_listed_under():
    for command in cli.SUBCOMMANDS:
        parser = cli.build_parser(command)
        subparsers = next(a for a in parser._actions if a.dest == "command")
        assert list(subparsers.choices) == [command]
    assert set(cli.SUBCOMMAND_MODULES) == set(cli.SUBCOMMANDS.values())


def test_an_unknown_command_still_lists_every_command(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["refrence"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert all(command in err for command in cli.SUBCOMMANDS)


@pytest.mark.parametrize("package", ["specproof.proofs", "specproof.proofs.arith", "specproof.harness"])
def test_lazy_packages_serve_every_public_name(package):
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(module, "no_such_name")


def test_a_submodule_named_like_its_function_leaves_the_function_in_place():
    out = _fresh("import specproof.proofs.claims.catalogue, specproof.proofs.claims.theorems\n"
                 "from specproof.proofs import catalogue, theorems\n"
                 "import specproof.proofs as P\n"
                 "print(callable(catalogue), callable(theorems), callable(P.catalogue))")
    assert "True True True" in out["stdout"]
