"""The check's progress display: one tqdm bar over every row of a run, or one line per batch."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["RowProgress"]


class RowProgress:
    """One bar over every row of the run (tqdm), or one line per batch to a callable, or silence."""

    def __init__(self, progress: Any, total: int):
        self.say = progress if callable(progress) else None
        self.bar = None
        if progress is None:
            progress = sys.stderr.isatty()
        if progress is True:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="rows", desc="specproof check", file=sys.stderr,
                            dynamic_ncols=True, unit_scale=True)

    def batch(self, ledger: Any, n: int, total: int) -> None:  # an engine ledger: its stream, rows, rejected
        if self.bar is not None:
            if self.bar.total != total:
                self.bar.total = total
                self.bar.refresh()
            self.bar.update(n)
            self.bar.set_postfix_str(f"{ledger.stream.name}", refresh=False)
        elif self.say is not None:
            self.say(f"{ledger.stream.name}: {ledger.rows} rows, {ledger.rejected} events rejected")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
