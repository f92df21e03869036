"""The Coq definitions compute the same laws as the Python laws in ``proofs/laws``, exactly.

Each instance (exact rational p, q or prefix tables) is written into one Coq file; ``Eval vm_compute``
evaluates the development's own definitions on it (``canonical_output``, ``greedy_output``,
``round_law``, ``continued_law``, ...) as (numerator, denominator) pairs, and every value is compared
with the Python law on the same instance.  A difference fails; nothing is skipped once coqc exists."""

from __future__ import annotations

import itertools
import random
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.laws.block import Tables, block_continued_law, block_round_law
from specproof.proofs.laws.multidraft import recursive_rejection_law
from specproof.proofs.laws.sequences import ToyPair, continued_law, round_law
from specproof.proofs.laws.step_rules import CANONICAL, GREEDY, step_law

HEADER = """From mathcomp Require Import all_ssreflect all_algebra.
From Specproof Require Import Step Round Recursive Block.
Open Scope ring_scope.
Definition fr (a b : nat) : rat := a%:R / b%:R.
Definition vec (V : nat) (xs : seq rat) : 'I_V -> rat := fun i => nth 0 xs i.
Fixpoint look (tab : seq (seq nat * seq rat)) (key : seq nat) : seq rat :=
  if tab is (k, v) :: t then (if k == key then v else look t key) else [::].
Definition cond (V : nat) tab : seq 'I_V -> 'I_V -> rat := fun pre y => nth 0 (look tab (map val pre)) y.
Definition tok (V : nat) (xs : seq nat) : seq 'I_V.+1 := map (nth ord0 (ords V.+1)) xs.
Definition out (rs : seq rat) := map (fun r => (numq r, denq r)) rs.
"""
PAIR = re.compile(r"\(\s*\(?(-?\d+)\)?%Z\s*,\s*\(?(-?\d+)\)?%Z\s*\)")


def _random_law(rng: random.Random, vocab: int, resolution: int) -> tuple[Fraction, ...]:
    while True:
        cuts = sorted(rng.randint(0, resolution) for _ in range(vocab - 1))
        counts = [b - a for a, b in zip([0] + cuts, cuts + [resolution])]
        if rng.random() < 0.5:
            counts = [c + 1 for c in counts]
        if sum(counts):
            return tuple(Fraction(c, sum(counts)) for c in counts)


def _rat(x: Fraction) -> str:
    return f"fr {x.numerator} {x.denominator}"


def _vec(xs: tuple[Fraction, ...]) -> str:
    return f"(vec {len(xs)} [:: {'; '.join(_rat(x) for x in xs)}])"


def _nats(xs) -> str:
    return "; ".join(f"{x}%N" for x in xs)


def _cond(vocab: int, table) -> str:
    rows = "; ".join(f"([:: {_nats(k)}], [:: {'; '.join(_rat(x) for x in v)}])"
                     for k, v in table.items())
    return f"(cond {vocab} [:: {rows}])"


class Instances:
    """Coq queries and the Python values they must equal, in order."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.expected: list[list[Fraction]] = []
        self.kinds: list[str] = []

    def add(self, kind: str, query: str, expected: list[Fraction]) -> None:
        self.kinds.append(kind)
        self.queries.append(f"Eval vm_compute in out ({query}).")
        self.expected.append([Fraction(x) for x in expected])


def _instances() -> Instances:
    rng = random.Random(44)
    ar = ExactArith()
    inst = Instances()
    edge = [((Fraction(1, 2), Fraction(1, 2)), (Fraction(1, 2), Fraction(1, 2))),  # p = q: empty residual
            ((Fraction(1), Fraction(0)), (Fraction(0), Fraction(1))),  # disjoint supports, q(x) = 0
            ((Fraction(1, 3), Fraction(2, 3), Fraction(0)), (Fraction(0), Fraction(1, 2), Fraction(1, 2)))]
    pairs = edge + [(_random_law(rng, v, 6), _random_law(rng, v, 6)) for v in (1, 2, 3, 4) for _ in range(12)]
    for p, q in pairs:
        v = len(p)
        inst.add("step", f"[seq canonical_output {_vec(p)} {_vec(q)} x | x <- ords {v}]",
                 list(step_law(ar, CANONICAL, p, q).output))
    for p, q in pairs[:24]:
        v = len(p)
        inst.add("greedy", f"[seq greedy_output {_vec(p)} {_vec(q)} x | x <- ords {v}]",
                 list(step_law(ar, GREEDY, p, q).output))
    for p, q in pairs[:24]:
        v = len(p)
        for k in (1, 2):
            inst.add("rrs", f"[seq rrs {k} {_vec(p)} {_vec(q)} x | x <- ords {v}]",
                     list(recursive_rejection_law(ar, p, q, k, replacement=False)))
    for (vocab, k), seed in itertools.product(((2, 1), (2, 2), (2, 3), (3, 1), (3, 2)), range(5)):
        pair = ToyPair.random(vocab, k, seed, resolution=4, zeros=seed % 2 == 0, context_free=seed == 4)
        p, q = _cond(vocab, pair.target), _cond(vocab, pair.draft)
        emitted = [s for length in range(1, k + 2) for s in itertools.product(range(vocab), repeat=length)]
        full = list(itertools.product(range(vocab), repeat=k + 1))
        law, cont = round_law(pair), continued_law(pair)
        seqs = lambda ss: "[:: " + "; ".join(f"tok {vocab - 1} [:: {_nats(s)}]" for s in ss) + "]"
        inst.add("round", f"[seq round_law {p} {q} {k} [::] s | s <- {seqs(emitted)}]",
                 [law.get(s, Fraction(0)) for s in emitted])
        inst.add("continued", f"[seq continued_law {p} {q} {k} [::] s | s <- {seqs(full)}]",
                 [cont.get(s, Fraction(0)) for s in full])
    for (vocab, k), seed in itertools.product(((2, 1), (2, 2), (2, 3), (3, 1), (3, 2)), range(20)):
        pair = ToyPair.random(vocab, k, 100 + seed, resolution=4, zeros=seed % 2 == 0, context_free=seed % 5 == 4)
        tables = Tables.from_pair(pair)
        p, q = _cond(vocab, pair.target), _cond(vocab, pair.draft)
        law, _ = block_round_law(ar, tables)
        cont = block_continued_law(ar, tables)
        emitted = [s for length in range(1, k + 2) for s in itertools.product(range(vocab), repeat=length)]
        full = list(itertools.product(range(vocab), repeat=k + 1))
        tok = lambda s: f"tok {vocab - 1} [:: {_nats(s)}]"
        pairs_ = "[:: " + "; ".join(f"({tok(s[:-1])}, nth ord0 (ords {vocab}) {s[-1]})" for s in emitted) + "]"
        inst.add("block", f"[seq block_round_law {p} {q} {k} ey.1 ey.2 | ey <- {pairs_}]",
                 [law.get(s, Fraction(0)) for s in emitted])
        inst.add("block-continued", f"[seq block_continued_law {p} {q} {k} s | s <- [:: {'; '.join(tok(s) for s in full)}]]",
                 [cont.get(s, Fraction(0)) for s in full])
    return inst


def test_at_least_100_instances_of_each_family_mix():
    inst = _instances()
    assert len(inst.queries) >= 100
    assert {"step", "greedy", "rrs", "round", "continued", "block", "block-continued"} <= set(inst.kinds)
    assert inst.kinds.count("block") >= 100


def test_coq_definitions_equal_the_python_laws(coq_development, tmp_path: Path):
    inst = _instances()
    source = tmp_path / "instances.v"
    source.write_text(HEADER + "\n".join(inst.queries) + "\n")
    run = subprocess.run(["coqc", "-w", "none", "-R", coq_development, "Specproof", str(source)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    blocks = re.findall(r"=\s*\[:: (.*?)\]\s*:\s*seq", run.stdout, flags=re.S)
    assert len(blocks) == len(inst.queries), run.stdout[-2000:]
    for kind, query, block, expected in zip(inst.kinds, inst.queries, blocks, inst.expected):
        got = [Fraction(int(a), int(b)) for a, b in PAIR.findall(block)]
        assert got == expected, f"{kind}: Coq {got} != Python {expected} for {query}"
