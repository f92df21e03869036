"""Row-by-row comparison of two ``results.json`` documents (asv-style marks).

Marks, per row key:

* ``!`` new failure - the row was as expected in the baseline (an implementation expected exact passed,
  a proof got its expected verdict, a zoo member was flagged) and is not now; a row only in the current
  file that is not as expected is a new failure too;
* ``*`` fixed - the reverse;
* ``+`` worse / ``-`` better - the verdict is unchanged and some compared figure of an implementation
  expected exact moved up (down) by more than its threshold ``t = max(t_baseline, t_current)``;
* ``x`` not comparable - the verdict is unchanged but a hash differs (implementation source, rule
  definition, reference and measuring code, or input), or the row is in one file only: its figures are
  not compared.  Verdicts are absolute, so a changed hash never hides a ``!`` or a ``*``.

Thresholds are derived, never tuned: a white-box figure's is its derived bound (the TV bound of the
output law, the bound at the worst entry, the bound on the rejection probability), a grid TV's the grid
tolerance ``min(1, (K+1)(delta + V delta/2 + (V+3) u))``, an impossible mass's 0, and a statistical
row's excess figure's the detectable TV of the run (the smallest TV it detects with power 0.99).
Anything correct float code may produce (a different summation order on another device, another
libm) stays within the bound, and anything within the detectable TV is sampling noise, so neither is
ever marked.  Informational figures (ULP counts, KL, counterexample TVs) have no threshold and are
never marked.

A figure whose value is non-finite (NaN, an infinity) or missing in one file and different in the other is
a change no threshold measures: a compared figure of an implementation expected exact that becomes
non-finite is ``+`` (worse; one that becomes finite again ``-``), any other such figure makes its row ``x``
with the figure named.  Files whose thresholds or exact values are impossible (a NaN threshold, an exact
``"1/0"``) never get here: :func:`~.schema.validate` refuses them, naming the row and the field.

Two files of different modes or statistical budgets (``--quick`` against a default report) measure with
different power and inputs: the comparison states the mismatch (:attr:`Comparison.notes`), and a row whose
verdict is unchanged is never a regression there - a figure beyond its threshold is ``x`` with the reason,
not ``+`` - and neither is a known-bad member whose detection is lost (or a new row of one not caught):
``x`` with the reason.  An implementation expected exact, or a proof, no longer as expected is still ``!``.

Rows of your own targets (kind ``check``, :mod:`.targets`; also what :func:`load_for_compare` makes of a
``specproof check --json`` file) are compared on two things only, since the code under test is what
changes between two commits (a changed source hash is said, never "not comparable"):

* the verdict: a new FAIL (or error) is ``!`` whatever the modes (a finding holds at any budget: its false
  alarm probability is the check's alpha); a FAIL gone is ``*``, PASS to UNDERPOWERED ``+`` and back ``-``,
  each only when the two checks ran in the same mode (:data:`~.targets.MODE_FIELDS`: level, rows per
  scenario, seed, stated power, alpha, time budget); in different modes such a change is ``x``,
  with the fields that differ named, since the power differs;
* the drift, when both rows carry one: ``+`` (``-``) when the current interval lies wholly above (below)
  the baseline's, i.e. the figure moved beyond the uncertainty both runs state; overlapping intervals are
  unchanged however far the estimates moved.

A check row's key names the adapter and contract options it ran under (``batched[rule=canonical]@cpu``), so
two checks that differ in them are two rows.  When the two files each hold one check of a target, dtype,
contract and device and their options differ (``--rule`` added, another ``--temperature``), the pair is
compared as one ``x`` row naming the options that differ: another claim was checked, so no verdict change
between them is a regression or a fix.  Rows of one key whose options are not recorded in one file (a
check file written before they were) are ``x`` too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from specproof.errors import SpecproofInputError
from specproof.harness.report.rows import Row
from specproof.harness.report.schema import HASH_NAMES
from specproof.harness.report.targets import MODE_FIELDS, TARGET_KIND, options_text, row_options
from specproof.harness.files.json_numbers import number_word
from specproof.harness.files.number_text import fmt

__all__ = ["MARKS", "RowComparison", "Comparison", "compare_documents", "FAIL_ON", "without_timing",
           "rows_differing_beyond_timing", "TIMING_FIELDS", "load_for_compare", "CHECK_VERDICT_RANK"]

MARKS = {"!": "new failure", "*": "fixed", "+": "worse", "-": "better", "x": "not comparable", " ": "unchanged"}
FAIL_ON = {"worse": ("!", "+"), "new-failure": ("!",)}
TIMING_FIELDS = ("seconds", "wall")  # and every ``*_seconds``: what two runs of the same plan may differ in


def without_timing(value: Any) -> Any:
    """``value`` (a row, the rows, a list) without its timing fields (:data:`TIMING_FIELDS`)."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items()
                if k not in TIMING_FIELDS and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def rows_differing_beyond_timing(base: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Row keys in one document only, or whose rows differ once timing is removed (the engines'
    identity: ``specproof report`` on the local engine and on Ray)."""
    keys = sorted(set(base["rows"]) | set(current["rows"]))
    return [k for k in keys if k not in base["rows"] or k not in current["rows"]
            or without_timing(base["rows"][k]) != without_timing(current["rows"][k])]


@dataclass(frozen=True)
class FigureChange:
    name: str
    baseline: float
    current: float
    threshold: float

    @property
    def direction(self) -> int:
        """+1 worse, -1 better, 0 within the threshold; a value that becomes non-finite is worse, one that
        becomes finite again better (module docstring)."""
        if not (math.isfinite(self.baseline) and math.isfinite(self.current)):
            if number_word(self.baseline) == number_word(self.current):
                return 0
            return 1 if not math.isfinite(self.current) else -1
        delta = self.current - self.baseline
        return 1 if delta > self.threshold else -1 if delta < -self.threshold else 0

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "baseline": number_word(self.baseline), "current": number_word(self.current),
                "threshold": number_word(self.threshold), "direction": self.direction}

    def text(self) -> str:
        return f"{self.name} {self.baseline:.3g} -> {self.current:.3g} (threshold {self.threshold:.3g})"


@dataclass(frozen=True)
class RowComparison:
    key: str
    mark: str
    reason: str
    baseline_verdict: str | None
    current_verdict: str | None
    changes: tuple[FigureChange, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "mark": self.mark, "meaning": MARKS[self.mark], "reason": self.reason,
                "baseline_verdict": self.baseline_verdict, "current_verdict": self.current_verdict,
                "changes": [c.as_json() for c in self.changes]}

    def line(self) -> str:
        verdicts = f"{self.baseline_verdict or '-':<22} {self.current_verdict or '-':<22}"
        return f"{self.mark}  {verdicts} {self.key}" + (f"  [{self.reason}]" if self.reason else "")


@dataclass
class Comparison:
    rows: list[RowComparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {mark: 0 for mark in MARKS}
        for row in self.rows:
            out[row.mark] += 1
        return out

    def regressed(self, fail_on: str) -> bool:
        return any(row.mark in FAIL_ON[fail_on] for row in self.rows)

    def as_json(self) -> dict[str, Any]:
        return {"counts": self.counts(), "notes": list(self.notes), "rows": [r.as_json() for r in self.rows]}


def _figure_changes(baseline: Row, current: Row) -> list[FigureChange]:
    changes = []
    for name in sorted(set(baseline.figures) & set(current.figures)):
        b, c = baseline.figures[name], current.figures[name]
        thresholds = [t for t in (b.threshold, c.threshold) if t is not None]
        if not thresholds or b.value is None or c.value is None:
            continue
        changes.append(FigureChange(name, b.value, c.value, max(thresholds)))
    return changes


def _answers_for_itself(row: Row) -> bool:
    """A row whose expectation does not depend on the run's power: an implementation expected exact, a proof."""
    return row.expected_exact or row.kind == "proof"


def _unmeasured_moves(baseline: Row, current: Row) -> list[str]:
    """Figures in both rows whose value is non-finite or missing in one and different in the other."""
    moves = []
    for name in sorted(set(baseline.figures) & set(current.figures)):
        b, c = baseline.figures[name].value, current.figures[name].value
        if b is not None and c is not None and math.isfinite(b) and math.isfinite(c):
            continue
        if (b is None) != (c is None) or (b is not None and c is not None and number_word(b) != number_word(c)):
            moves.append(f"{name} {fmt(b)} -> {fmt(c)}")
    return moves


CHECK_VERDICT_RANK = {"pass": 0, "underpowered": 1, "inconclusive": 1, "fail": 2, "error": 2}
"""How far a check row's verdict is from PASS: a move between ranks is a change of the verdict's meaning."""


def mode_differences(baseline: Row, current: Row) -> list[str]:
    """The mode fields (:data:`~.targets.MODE_FIELDS`) in which two check rows differ, as ``name a -> b``."""
    return [f"{name} {fmt(baseline.detail.get(name))} -> {fmt(current.detail.get(name))}"
            if isinstance(baseline.detail.get(name), float) or isinstance(current.detail.get(name), float)
            else f"{name} {baseline.detail.get(name)} -> {current.detail.get(name)}"
            for name in MODE_FIELDS if baseline.detail.get(name) != current.detail.get(name)]


def _drift_move(baseline: Row, current: Row) -> tuple[int, str]:
    """+1 / -1 when the current drift interval lies wholly above / below the baseline's, else 0."""
    b, c = baseline.detail.get("drift"), current.detail.get("drift")
    if not (isinstance(b, dict) and isinstance(c, dict)):
        return 0, ""
    text = (f"drift {fmt(b['estimate'])} ({fmt(b['lower'])} .. {fmt(b['upper'])}) -> {fmt(c['estimate'])} "
            f"({fmt(c['lower'])} .. {fmt(c['upper'])})")
    if c["lower"] > b["upper"]:
        return 1, text + ": intervals disjoint, higher"
    if c["upper"] < b["lower"]:
        return -1, text + ": intervals disjoint, lower"
    return 0, ""


def option_differences(baseline: Row, current: Row) -> list[str]:
    """How the adapter and contract options of two check rows differ (``rule - -> canonical``; an empty list:
    the same), or why they cannot be told (not recorded in one file)."""
    (b_adapter, b_options), (c_adapter, c_options) = row_options(baseline), row_options(current)
    if (b_options is None) != (c_options is None):
        side = "baseline" if b_options is None else "current"
        return [f"contract options not recorded in the {side} file"]
    b_all = {"adapter": b_adapter, **(b_options or {})}
    c_all = {"adapter": c_adapter, **(c_options or {})}

    def said(value: Any) -> str:
        if value is None:
            return "-"
        return options_text(None, {"": value}) if isinstance(value, dict) else \
            options_text(None, {"": value}).removeprefix("=")

    return [f"{name} {said(b_all.get(name))} -> {said(c_all.get(name))}"
            for name in dict.fromkeys([*b_all, *c_all]) if b_all.get(name) != c_all.get(name)]


def _compare_check_row(key: str, baseline: Row, current: Row) -> RowComparison:
    """Two check rows of one target, dtype, contract and device (module docstring)."""
    b_verdict, c_verdict = baseline.verdict, current.verdict
    options = option_differences(baseline, current)
    if options:  # another claim was checked: nothing to call a regression or a fix
        return RowComparison(key, "x", "contract options differ: " + ", ".join(options)
                             + ("" if b_verdict == c_verdict else f"; verdict {b_verdict} -> {c_verdict}"),
                             b_verdict, c_verdict)
    modes = mode_differences(baseline, current)
    notes = []
    if baseline.hashes.implementation and current.hashes.implementation and \
            baseline.hashes.implementation != current.hashes.implementation:
        notes.append("source changed")
    if modes:
        notes.append("modes differ: " + ", ".join(modes))
    b_rank, c_rank = CHECK_VERDICT_RANK.get(b_verdict, 2), CHECK_VERDICT_RANK.get(c_verdict, 2)

    def row(mark: str, *more: str) -> RowComparison:
        return RowComparison(key, mark, "; ".join([*more, *notes]), b_verdict, c_verdict)

    if c_rank == 2 and b_rank < 2:
        return row("!")
    if b_verdict != c_verdict:
        if c_rank == b_rank or modes:
            return row("x", f"verdict {b_verdict} -> {c_verdict}" + (" (the power differs)" if modes else ""))
        return row("*" if b_rank == 2 else "+" if c_rank > b_rank else "-")
    move, text = _drift_move(baseline, current)
    if move:
        return row("+" if move > 0 else "-", text)
    return row(" ")


def _compare_row(key: str, baseline: Row | None, current: Row | None, same_budget: bool = True) -> RowComparison:
    if baseline is not None and current is not None and baseline.kind == current.kind == TARGET_KIND:
        return _compare_check_row(key, baseline, current)
    budget_note = " (the files' modes or budgets differ: a known-bad member's detection depends on the power)"
    if baseline is None:
        assert current is not None
        if not current.as_expected and not same_budget and not _answers_for_itself(current):
            return RowComparison(key, "x", "new row, not as expected" + budget_note, None, current.verdict)
        if not current.as_expected:
            return RowComparison(key, "!", "new row, not as expected", None, current.verdict)
        return RowComparison(key, "x", "only in the current file", None, current.verdict)
    if current is None:
        return RowComparison(key, "x", "only in the baseline", baseline.verdict, None)
    b_verdict, c_verdict = baseline.verdict, current.verdict
    differing = [name for name in HASH_NAMES
                 if baseline.hashes.get(name) and current.hashes.get(name)
                 and baseline.hashes.get(name) != current.hashes.get(name)]
    unknown = [name for name in HASH_NAMES if bool(baseline.hashes.get(name)) != bool(current.hashes.get(name))]
    hash_note = f"{', '.join(differing)} changed" if differing else ""
    if baseline.as_expected and not current.as_expected:
        if not same_budget and not _answers_for_itself(current):
            return RowComparison(key, "x", (hash_note + ";" if hash_note else "") + "detection lost" + budget_note,
                                 b_verdict, c_verdict)
        return RowComparison(key, "!", hash_note, b_verdict, c_verdict)
    if current.as_expected and not baseline.as_expected:
        return RowComparison(key, "*", hash_note, b_verdict, c_verdict)
    if differing:
        return RowComparison(key, "x", hash_note, b_verdict, c_verdict)
    note = f"{', '.join(unknown)} hash unknown in one file" if unknown else ""
    moves = _unmeasured_moves(baseline, current)
    unmeasured = RowComparison(key, "x", "; ".join(moves) + ": a non-finite or missing figure, not comparable",
                               b_verdict, c_verdict)
    if not (baseline.expected_exact and current.expected_exact) or baseline.kind == "proof":
        return unmeasured if moves else RowComparison(key, " ", note, b_verdict, c_verdict)
    changes = _figure_changes(baseline, current)
    worse = [c for c in changes if c.direction > 0]
    better = [c for c in changes if c.direction < 0]
    if (worse or better) and not same_budget and b_verdict == c_verdict:
        return RowComparison(key, "x", "; ".join(c.text() for c in worse + better) + " (the files' modes or "
                             "budgets differ: figures not comparable)", b_verdict, c_verdict, tuple(changes))
    if worse:
        return RowComparison(key, "+", "; ".join(c.text() for c in worse), b_verdict, c_verdict, tuple(changes))
    if better:
        return RowComparison(key, "-", "; ".join(c.text() for c in better), b_verdict, c_verdict, tuple(changes))
    if moves:
        return RowComparison(key, "x", unmeasured.reason, b_verdict, c_verdict, tuple(changes))
    return RowComparison(key, " ", note, b_verdict, c_verdict, tuple(changes))


def load_for_compare(path: Any, argument: str) -> dict[str, Any]:
    """A report's ``results.json`` (or its folder; older schemas migrated) or a ``specproof check --json``
    file (as a one-row report, :func:`~.targets.check_file_document`), validated; usage errors name
    ``argument``."""
    from pathlib import Path

    from specproof.harness.files.envelope import read_json_document
    from specproof.harness.files.kinds import CHECK, REPORT
    from specproof.harness.report.schema import migrate
    from specproof.harness.report.targets import check_file_document

    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    data = read_json_document(path, argument, f"{REPORT.fix}, or {CHECK.fix}")
    if isinstance(data, dict) and data.get("kind") == CHECK.name:
        return check_file_document(data, argument)
    return migrate(data, argument)


def _unoptioned(row: dict[str, Any]) -> tuple[Any, ...]:
    """A check row's target, dtype, contract and device: its key without the adapter and contract options."""
    return row["implementation"], row["dtype"], row["input"].split("[", 1)[0].rsplit("@", 1)[0], \
        row["input"].rsplit("@", 1)[1]


def _option_pairs(b_rows: dict[str, Any], c_rows: dict[str, Any], keys: set[str]) -> dict[str, str]:
    """Baseline key -> current key of check rows in one file each that differ only in their options: the one
    such row of a target, dtype, contract and device in each file (module docstring)."""
    groups: dict[tuple[Any, ...], tuple[list[str], list[str]]] = {}
    for rows, other, side in ((b_rows, c_rows, 0), (c_rows, b_rows, 1)):
        for key in keys:
            if key in rows and key not in other and rows[key]["kind"] == TARGET_KIND:
                groups.setdefault(_unoptioned(rows[key]), ([], []))[side].append(key)
    return {b[0]: c[0] for b, c in groups.values() if len(b) == 1 and len(c) == 1}


def compare_documents(baseline: dict[str, Any], current: dict[str, Any]) -> Comparison:
    """Compare two migrated, validated documents (:func:`~.report_schema.load_results`)."""
    result = Comparison()
    b_rows, c_rows = baseline["rows"], current["rows"]
    same_budget = all(baseline["config"].get(name) == current["config"].get(name) for name in ("mode", "samples"))
    keys = set(b_rows) | set(c_rows)
    for document, other, side in ((baseline, c_rows, "current"), (current, b_rows, "baseline")):
        if document.get("from_check_file") and len(other) > len(document["rows"]):  # a check file names its row
            own = {_unoptioned(row) for row in document["rows"].values()}
            keys = {k for k in keys if k in document["rows"] or (k in other and other[k]["kind"] == TARGET_KIND
                                                                 and _unoptioned(other[k]) in own)}
            result.notes.append(f"a check file against a report: only its row is compared (the {side} file's "
                                f"{len(other) - len(keys & set(other))} other rows are not)")
    pairs = _option_pairs(b_rows, c_rows, keys)
    for key in sorted(keys - set(pairs) - set(pairs.values())):
        b_row, c_row = b_rows.get(key), c_rows.get(key)
        result.rows.append(_compare_row(key, None if b_row is None else Row.from_json(b_row),
                                        None if c_row is None else Row.from_json(c_row), same_budget))
    for b_key, c_key in sorted(pairs.items()):
        result.rows.append(_compare_check_row(f"{b_key} -> {c_key.rsplit('/', 1)[1]}", Row.from_json(b_rows[b_key]),
                                              Row.from_json(c_rows[c_key])))
    shared = set(b_rows) & set(c_rows)
    only_targets = all(r["kind"] == TARGET_KIND for rows in (b_rows, c_rows) for r in rows.values())
    if not shared and not pairs and b_rows and c_rows and only_targets:  # checks of different targets: a mistake
        def named(rows: dict[str, Any]) -> str:
            keys = sorted(rows)
            return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        raise SpecproofInputError("CURRENT", f"has no row in common with BASELINE (baseline: {named(b_rows)}; "
                                  f"current: {named(c_rows)})",
                                  "compare two reports, or two check files, of the same target, contract, dtype "
                                  "and device (their options may differ)")
    modes = sorted({m for key in shared if b_rows[key]["kind"] == c_rows[key]["kind"] == TARGET_KIND
                    for m in mode_differences(Row.from_json(b_rows[key]), Row.from_json(c_rows[key]))})
    if modes:
        result.notes.append("your targets' checks ran in different modes (" + ", ".join(modes) + "): a verdict "
                            "change between PASS and UNDERPOWERED is 'x' there, a new FAIL is still '!'")
    for name in ("device", "device_name"):
        b, c = baseline["provenance"].get(name), current["provenance"].get(name)
        if b != c:
            result.notes.append(f"{name} differs: {b} (baseline) vs {c} (current)")
    b_mode, c_mode = baseline["config"].get("mode"), current["config"].get("mode")
    if only_targets:  # the catalogue's modes and budgets do not apply; the checks' own are stated above
        b_mode = c_mode
    if b_mode != c_mode:
        result.notes.append(f"mode differs: {b_mode} (baseline) vs {c_mode} (current); rows of one mode only are 'x', "
                            "and a row whose verdict did not change is never a regression")
    b_samples, c_samples = baseline["config"].get("samples"), current["config"].get("samples")
    if b_samples != c_samples and not only_targets:
        result.notes.append(f"statistical budget differs: {b_samples} (baseline) vs {c_samples} (current) rows per "
                            "scenario; a statistical verdict can change with the power of the run")
    for name in ("torch", "specproof"):
        b = baseline["provenance"].get("versions", {}).get(name)
        c = current["provenance"].get("versions", {}).get(name)
        if b != c:
            result.notes.append(f"{name} {b} (baseline) vs {c} (current)")
    if baseline.get("migrated_from") or current.get("migrated_from"):
        result.notes.append("a file was migrated from an older schema: hashes it lacked are unknown, not different")
    return result
