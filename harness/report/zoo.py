"""The zoo of a report: for each known-bad implementation, which check flagged it (in which dtypes), and in
which dtypes none did, with what the run there could have seen (:func:`zoo_verdicts`)."""

from __future__ import annotations

from typing import Any

from specproof.harness.report.config import ALL_DTYPES
from specproof.harness.report.rows import Row

__all__ = ["zoo_verdicts"]


_KIND_TEXT = {"statistical": "statistical check", "grid": "grid", "whitebox": "white-box"}


def zoo_verdicts(records: list[Any], rows: dict[str, Any], skipped: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each known-bad record: which check flagged it (in which dtypes), and in which dtypes none did,
    with the detectable TV of the run there (``reason``; empty when caught in every measured dtype)."""
    out = []
    typed = [Row.from_json(r) for r in rows.values()]
    for record in records:
        if record.expected_exact:
            continue
        own = [r for r in typed if r.implementation == record.name]
        core = [r for r in typed if record.uniforms_core and r.implementation == record.uniforms_core]
        caught, reasons = [], []
        caught_dtypes: set[str] = set()
        for label, group in (("", own), (f" via its uniforms core {record.uniforms_core}", core)):
            for kind in ("statistical", "grid", "whitebox"):
                kind_rows = [r for r in group if r.kind == kind]
                flagged = [r for r in kind_rows if not r.passed]
                if flagged:
                    dtypes = sorted({r.dtype for r in flagged}, key=ALL_DTYPES.index)
                    caught_dtypes.update(dtypes)
                    verdicts = sorted({str(r.verdict) for r in flagged})
                    caught.append(f"{_KIND_TEXT[kind]}{label} ({', '.join(dtypes)}: "
                                  f"{len(flagged)}/{len(kind_rows)} rows, {', '.join(verdicts)})")
        measured = sorted({r.dtype for r in own + core}, key=ALL_DTYPES.index)
        for dtype in measured:
            if dtype not in caught_dtypes:
                reasons.append(_not_caught_reason(dtype, [r for r in own + core if r.dtype == dtype]))
        if not own and not core:
            reasons = ["not measured: " + s["reason"] for s in skipped if s["implementation"] == record.name][:1] \
                or ["not measured"]
        out.append({"implementation": record.name, "contract": record.contract, "bug": record.bug,
                    "mirrors": record.mirrors, "measured": bool(own or core), "caught": bool(caught),
                    "caught_by": caught, "reason": "; ".join(reasons)})
    return out


def _not_caught_reason(dtype: str, rows: list[Row]) -> str:
    """``not caught in D (detectable TV x)``: what the run in that dtype could have seen."""
    statistical = [r.detail["detectable_tv_certifiable"] for r in rows
                   if r.kind == "statistical" and "detectable_tv_certifiable" in r.detail]
    kinds = ", ".join(sorted({_KIND_TEXT[r.kind] for r in rows}))
    if statistical:
        return f"not caught in {dtype} (detectable TV {min(statistical):.3g}; {kinds})"
    return f"not caught in {dtype} ({kinds} within the derived tolerance)"
