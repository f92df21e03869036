"""Import direction: every ``specproof`` import in proofs/, harness/ and impls/ goes down the layers.

Layers (docs/architecture.md), imports only downwards, anything inside one subpackage:

    harness:  cli(5) -> report, bench(4) -> drift(3) -> check(2) -> exact, files(1) -> proofs
    proofs:   claims(3) -> engine(2) -> laws(1) -> arith(0); ``errors`` and ``lazy_exports`` from anywhere
    harness -> impls -> proofs;  impls never imports harness;  proofs imports neither.

Two subpackages on the same level (report/bench, exact/files) do not import each other. Every
``import`` and ``from ... import`` is read with :mod:`ast`, function-level ones included, and relative
imports are resolved against the importing module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"proofs": "specproof.proofs", "harness": "specproof.harness", "impls": "specproof.impls"}
HARNESS_LEVELS = {"cli": 5, "report": 4, "bench": 4, "drift": 3, "check": 2, "exact": 1, "files": 1,
                  "triton_draws": 1.5}  # Triton's draws under injection: above exact, below the check
PROOFS_LEVELS = {"claims": 3, "engine": 2, "laws": 1, "arith": 0}
SHARED = {"specproof.errors", "specproof.lazy", "specproof.verdicts", "specproof.loading"}  # the root package: from anywhere



def _modules() -> list[tuple[str, Path, bool]]:
    found = []
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found.append((".".join([package] + parts[:-1 if is_package else None]), path, is_package))
    return found


def imports_of(module: str, source: str, is_package: bool) -> list[tuple[str, int]]:
    """Every ``specproof`` module named by an import in ``source`` (relative ones resolved), with its line."""
    named = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            named += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # ``from specproof.harness import report`` names the subpackage: each alias is read as one
            named += [(target, node.lineno)] + [(f"{target}.{alias.name}", node.lineno) for alias in node.names]
    return [(name, line) for name, line in named if name == "specproof" or name.startswith("specproof.")]


def _room(module: str) -> tuple[str, str | None]:
    """(top package, subpackage or module right below it); ``specproof.proofs`` alone is (proofs, None)."""
    parts = module.split(".")
    return parts[1], (parts[2] if len(parts) > 2 else None)


def violation(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported`` (None when the import goes downwards)."""
    if imported in SHARED or any(imported.startswith(s + ".") for s in SHARED):
        return None
    top, sub = _room(importer)
    to_top, to_sub = _room(imported)
    if to_top not in PACKAGES:
        return f"imports {imported}, outside the three packages"
    if top == "impls":
        return "impls never imports the harness" if to_top == "harness" else None
    if top == "proofs":
        if to_top != "proofs":
            return f"proofs imports neither harness nor impls ({imported})"
        if sub is None or to_sub is None or sub == to_sub:  # the facade, or inside one subpackage
            return None
        if sub not in PROOFS_LEVELS or to_sub not in PROOFS_LEVELS:
            return None if to_sub not in PROOFS_LEVELS else f"{sub} is not a layer"
        return None if PROOFS_LEVELS[sub] > PROOFS_LEVELS[to_sub] else \
            f"proofs.{sub} (level {PROOFS_LEVELS[sub]}) imports proofs.{to_sub} (level {PROOFS_LEVELS[to_sub]})"
    # harness
    if to_top != "harness" or sub is None or to_sub is None or sub == to_sub:
        return None
    if to_sub not in HARNESS_LEVELS or sub not in HARNESS_LEVELS:
        return None
    if HARNESS_LEVELS[sub] > HARNESS_LEVELS[to_sub]:
        return None
    return f"harness.{sub} (level {HARNESS_LEVELS[sub]}) imports harness.{to_sub} (level {HARNESS_LEVELS[to_sub]})"


def current_violations() -> list[tuple[str, str, int, str]]:
    found = []
    for module, path, is_package in _modules():
        for imported, line in imports_of(module, path.read_text(encoding="utf-8"), is_package):
            why = violation(module, imported)
            if why is not None:
                found.append((module, imported, line, why))
    return found


def test_every_import_goes_down_the_layers():
    bad = sorted({f"{m}:{line} -> {i}: {why}" for m, i, line, why in current_violations()})
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_the_modules_are_found():
    names = {m for m, _, _ in _modules()}
    assert {"specproof.proofs.claims.theorems", "specproof.harness.cli", "specproof.impls.registry"} <= names
    assert len(names) > 80


@pytest.mark.parametrize("importer, imported, bad", [
    ("specproof.harness.cli.check", "specproof.harness.check.driver", False),
    ("specproof.harness.check.driver", "specproof.harness.report.run", True),
    ("specproof.harness.drift.grid", "specproof.harness.check.contracts.batched.families", False),
    ("specproof.harness.check.contracts.batched.families", "specproof.harness.drift.grid", True),
    ("specproof.harness.bench.render", "specproof.harness.report.analysis", True),
    ("specproof.harness.exact.convert", "specproof.proofs.arith.exact", False),
    ("specproof.harness.check.driver", "specproof.impls.sampler_probe", False),
    ("specproof.impls.records", "specproof.harness.exact.convert", True),
    ("specproof.impls.records", "specproof.proofs.claims.catalogue", False),
    ("specproof.proofs.laws.step_rules", "specproof.proofs.engine.results", True),
    ("specproof.proofs.claims.theorems", "specproof.proofs.engine.verdicts", False),
    ("specproof.proofs.arith.exact", "specproof.errors", False),
    ("specproof.proofs.engine.results", "specproof.impls.registry", True),
    ("specproof.proofs.engine.results", "specproof.harness.exact.convert", True),
])
def test_the_rule_itself(importer, imported, bad):
    assert (violation(importer, imported) is not None) is bad


def test_function_level_and_relative_imports_are_read():
    source = "def f():\n    from specproof.harness.report import run\n    from ..report import plan\n"
    named = {name for name, _ in imports_of("specproof.harness.check.driver", source, False)}
    assert {"specproof.harness.report", "specproof.harness.report.plan"} <= named
    assert any(violation("specproof.harness.check.driver", n) for n in named)
