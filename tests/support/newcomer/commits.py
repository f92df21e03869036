"""Two "commits" of the newcomer verifier ``spec.py``: as written, and after a one-line change that draws
the bonus token from the last draft's target row (K - 1) instead of the row after it (K), the planted
regression a comparison of two reports must flag (and nothing else)."""

from pathlib import Path

SPEC = Path(__file__).with_name("spec.py")
GOOD_BONUS = "out[alive, k] = torch.multinomial(p[alive, k], 1, generator=generator)"
BONUS_FROM_WRONG_ROW = "out[alive, k] = torch.multinomial(p[alive, k - 1], 1, generator=generator)"


def source(bonus_bug: bool) -> str:
    """spec.py's text, with the bonus-row bug when ``bonus_bug``."""
    text = SPEC.read_text()
    assert text.count(GOOD_BONUS) == 1, "spec.py changed: update the planted patch"
    return text.replace(GOOD_BONUS, BONUS_FROM_WRONG_ROW) if bonus_bug else text


def write_commit(folder: Path, bonus_bug: bool, name: str = "spec.py") -> str:
    """Write that commit of the verifier to ``folder/name``; its ``path.py:verify`` target."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(source(bonus_bug))
    return f"{folder / name}:verify"
