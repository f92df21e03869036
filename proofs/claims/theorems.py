"""The theorems T1-T7, each a named obligation with a statement a reader can check.

Each theorem's proof is a list of :class:`~specproof.proofs.engine.results.Obligation` records, each with
its basis: ``machine`` (z3, sympy case splits, the sum facts of :mod:`.finite_sums` proved by induction
on ``n``), ``bounded`` (direct checks and exhaustive exact enumeration at the listed sizes: cross-checks,
never evidence for every ``n``) or ``assumption`` (a step taken from the named source, not checked
here).  The verdict is decided in one place, :func:`~specproof.proofs.engine.verdicts.decide` (through
:func:`~specproof.proofs.engine.verdicts.settle`): PROVED only when the theorem's every-size chain is
complete (its assumptions listed with their sources), BOUNDED when only bounded checks support it, so
every caller of :func:`prove_theorem` (``specproof prove``, the report, the benchmark) gets the same
verdict, scope and assumptions.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import sympy
import z3

from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.arith.sympy_backend import SympyArith
from specproof.proofs.arith.z3_backend import Z3Arith
from specproof.proofs.engine.every_size import GenericCoordinateArith, direct_check, prove_every_size
from specproof.proofs.engine.finite_sums import sum_step
from specproof.proofs.engine.results import DEFAULT_RLIMIT, Basis, Obligation, ProofResult, Verdict, combine, solver_versions
from specproof.proofs.engine.verdicts import settle
from specproof.proofs.laws.step_rules import CANONICAL, GREEDY, step_law, step_rules
from specproof.proofs.engine.counterexamples import PairLaw, find_counterexample, law_distance
from specproof.proofs.laws.sequences import ToyPair, continued_law, round_law, target_law
from specproof.proofs.engine.solvers import check_z3, prove_by_cases
from specproof.proofs.claims.kernel_checked import kernel_fallback, kernel_obligation

__all__ = ["Theorem", "theorems", "prove_theorem", "assumption", "bounded", "ranking_order", "EXHAUSTIVE_SIZES"]

EXHAUSTIVE_SIZES = ((2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3))
"""(V, K) pairs checked by exhaustive enumeration of every sequence."""
TABLES_PER_SIZE = 4


@dataclass(frozen=True)
class Theorem:
    name: str
    title: str
    statement: str
    check: Callable[[int], tuple[list[Obligation], dict[str, Any]]]


def assumption(name: str, statement: str, source: str) -> Obligation:
    """A step taken from ``source`` and not checked here (basis ``assumption``), unless the Coq
    development proves it (then that kernel-checked obligation)."""
    source = "; ".join((source,) + kernel_fallback(name))
    return kernel_obligation(name, statement) or Obligation(name, statement, Verdict.PROVED, "stated, not checked",
                                                            0.0, f"taken from {source}", Basis.ASSUMPTION, source)


def bounded(o: Obligation) -> Obligation:
    """``o`` relabelled as a bounded check (sizes in its name and detail)."""
    return Obligation(o.name, o.statement, o.verdict, o.method, o.seconds, o.detail, Basis.BOUNDED, o.source)


def _t1(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    statement = "min(p, q) + max(0, p - q) = p for all real p, q"
    ar = Z3Arith()
    p, q = ar.real("p"), ar.real("q")
    z = check_z3("T1 (z3)", statement, ar, [p == p], ar.add(ar.minimum(p, q), ar.relu(ar.sub(p, q))) == p,
                 rlimit=rlimit)
    sar = SympyArith()
    ps, qs = sympy.symbols("p q", real=True)
    s = prove_by_cases("T1 (sympy)", statement, sar.add(sar.minimum(ps, qs), sar.relu(sar.sub(ps, qs))) - ps,
                       [], rlimit=rlimit)
    return [z.obligation, s], {"n": "pointwise", "every_n": True}


def _t2(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    obligations, _ = _t1(rlimit)
    obligations += sum_step("T2 (every n)", "sum_x min(p,q) + sum_x max(0, p-q) = sum_x p = 1", "T1",
                            rlimit=rlimit)
    for n in range(2, 9):
        ar = Z3Arith()
        p, q = ar.vector("p", n), ar.vector("q", n)
        goal = ar.sub(ar.one, ar.total(ar.minimum(p, q))) == ar.total(ar.relu(ar.sub(p, q)))
        obligations.append(bounded(check_z3(f"T2 direct n={n}", "1 - sum min(p,q) = sum max(0, p-q) on the "
                                             "simplex", ar, [ar.simplex(p), ar.simplex(q)], goal, rlimit=rlimit,
                                             method="z3 direct").obligation))
    return obligations, {"n": "all (direct 2..8)", "every_n": True}


def _t3(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    verdict, obligations, _ = prove_every_size(CANONICAL, rlimit=rlimit)
    f1 = all(o.verdict == Verdict.PROVED for o in obligations if o.name.startswith("F1"))
    for n in (2, 3, 4):
        obligations.append(direct_check(CANONICAL, n, rlimit=rlimit, hint=f1)[0])
    return obligations, {"n": "all (direct 2..4)", "every_n": True}


def _t4(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    ar = GenericCoordinateArith()
    law = step_law(ar, CANONICAL, ar.p, ar.q)
    big_b, big_s = law.acceptance_rate, law.residual_mass
    # sum_x output(x) = B + (1 - B) sum_x residual(x); sum_x w(x)/S = 1 if S > 0 else 0 (linearity)
    c = z3.If(big_s == 0, ar.const(0), (1 - big_b) / big_s)
    domain = [ar.p >= 0, ar.p <= 1, ar.q >= 0, ar.q <= 1]
    obligations = [check_z3("T4 pointwise", "output(x) = 1 q(x)A(x) + c w(x) with the constant c = (1 - B)/S "
                            "(c = 0 when S = 0), on the rule's own step_law", ar, domain,
                            law.output == law.accepted_mass + c * law.residual_weight, rlimit=rlimit,
                            method="z3 pointwise").obligation]
    obligations += sum_step("T4 sum step", "sum_x output = B + c S", "T4 pointwise", rlimit=rlimit)
    obligations.append(check_z3("T4 (every n)", "B + c S = 1 given T2 (B + S = 1)", ar,
                                [big_b + big_s == 1], big_b + c * big_s == 1, rlimit=rlimit,
                                method="z3, sums abstracted").obligation)
    for n in range(2, 5):
        dar = Z3Arith()
        p, q = dar.vector("p", n), dar.vector("q", n)
        out = step_law(dar, CANONICAL, p, q).output
        obligations.append(bounded(check_z3(f"T4 direct n={n}", "sum_x output(x) = 1 on the simplex", dar,
                                             [dar.simplex(p), dar.simplex(q)], dar.total(out) == 1,
                                             rlimit=rlimit, method="z3 direct").obligation))
    return obligations, {"n": "all (direct 2..4)", "every_n": True}


def _random_pairs(vocab: int, k: int) -> list[ToyPair]:
    pairs = [ToyPair.random(vocab, k, seed, zeros=seed % 2 == 0) for seed in range(TABLES_PER_SIZE)]
    pairs.append(ToyPair.random(vocab, k, 99, context_free=True))
    return pairs


def sequence_exactness(rule: Any, sizes: tuple[tuple[int, int], ...] = EXHAUSTIVE_SIZES) -> Obligation:
    """Exhaustive exact check: round + target continuation == target law, for random tables."""
    start = time.perf_counter()
    checked = 0
    for vocab, k in sizes:
        for pair in _random_pairs(vocab, k):
            checked += 1
            if continued_law(pair, rule) != target_law(pair):
                return Obligation("T5 exhaustive", "", Verdict.REFUTED, "exact enumeration",
                                  time.perf_counter() - start, f"V={vocab}, K={k}: laws differ", Basis.BOUNDED)
    return Obligation(f"T5 exhaustive ({getattr(rule, 'name', rule)})",
                      "round + continuation == target over every sequence of K+1 tokens", Verdict.PROVED,
                      "exact enumeration", time.perf_counter() - start,
                      f"{checked} tables, (V, K) in {list(sizes)}, zeros included", Basis.BOUNDED)


def _t5(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    t3, _ = _t3(rlimit)
    obligations = [Obligation("T3 (premise)", "the single-step law is p, for every n", combine(o.verdict for o in t3),
                              "see T3", sum(o.seconds for o in t3), f"{len(t3)} obligations")]
    # The old z3 "induction step" (a + r = p |- a c + r c = p c) followed from its hypotheses by
    # rewriting alone: it never looked at round_law.  The decomposition it rested on is stated here.
    obligations.append(assumption(
        "T5 induction on K (round decomposition)",
        "K drafts: the first emitted token x has the single-step law (T3); given x, an accepted draft is "
        "followed by a (K-1)-draft round from prefix x (law p(.|x) over the rest by the hypothesis) and a "
        "correction by target sampling (law p(.|x)), so P(x, s) = p(x) p(s|x); base K = 0: the bonus token "
        "is drawn from p. Not checked against sequences.round_law for every K (only by the bounded "
        "exhaustive checks below)",
        "Leviathan, Kalman, Matias 2023 and Chen et al. 2023: a K-draft round is K single-step "
        "verifications, each conditioned on the accepted prefix"))
    for rule in step_rules():
        if rule.claim == "exact":
            obligations.append(sequence_exactness(rule))
    stated = obligations[1].basis == Basis.ASSUMPTION
    return obligations, {"n": f"all V, K ({'assuming the round decomposition' if stated else 'Coq'}); "
                         "exhaustive V<=3, K<=3",
                         "every_n": True}


def _greedy_sequence(pair: ToyPair) -> tuple[int, ...]:
    seq: tuple[int, ...] = ()
    ar = ExactArith()
    while len(seq) < pair.k + 1:
        ranks = ar.mass_ahead(pair.target[seq], ar.one)
        seq = seq + (ranks.index(Fraction(0)),)
    return seq


def _greedy_round(pair: ToyPair, drafts: tuple[int, ...]) -> tuple[int, ...] | None:
    """The tokens one greedy round emits for a fixed draft sequence, each step evaluated with the
    GREEDY rule (draft law = point mass at the draft); the bonus token is the rule's correction token
    at position K+1.  None if some step's output is not a point mass."""
    ar = ExactArith()
    emitted: tuple[int, ...] = ()
    for position in range(pair.k + 1):
        p_row = pair.target[emitted]
        draft = drafts[position] if position < pair.k else None
        q_row = tuple(Fraction(int(i == draft)) for i in range(pair.vocab)) if draft is not None else p_row
        law = step_law(ar, GREEDY, p_row, q_row)
        support = [i for i, x in enumerate(law.output) if x]
        if len(support) != 1 or law.output[support[0]] != 1:
            return None
        emitted += (support[0],)
        if draft is None or not law.accepted_mass[draft]:
            return emitted
    return emitted


def ranking_order(rlimit: int) -> Obligation:
    """``[y ahead of x]`` read off :meth:`Arith.mass_ahead` itself (weight = indicator of ``y``) over
    three symbolic keys: irreflexive, exactly one of two distinct tokens ahead of the other, transitive."""
    ar = Z3Arith()
    key = ar.vector("key", 3)
    ahead = [[None] * 3 for _ in range(3)]  # ahead[x][y] = [y ranks ahead of x]
    for y in range(3):
        indicator = tuple(ar.const(int(i == y)) for i in range(3))
        for x, mass in enumerate(ar.mass_ahead(key, indicator)):
            ahead[x][y] = mass
    facts = [ahead[x][x] == 0 for x in range(3)]
    facts += [ahead[x][y] + ahead[y][x] == 1 for x in range(3) for y in range(3) if x != y]
    facts += [z3.Implies(z3.And(ahead[x][y] == 1, ahead[y][z] == 1), ahead[x][z] == 1)
              for x, y, z in itertools.permutations(range(3))]
    facts += [z3.Or(a == 0, a == 1) for row in ahead for a in row]
    return check_z3("T6 ranking order", "Arith.mass_ahead ranks by a strict total order: [y ahead of x] is 0/1, "
                    "irreflexive, exactly one of two distinct tokens is ahead of the other, and transitive; the "
                    "relation compares only key[x], key[y] and the index order, so the triples of three symbolic "
                    "keys (every index order) cover every n", ar, [], ar.all_of(facts), rlimit=rlimit,
                    method="z3 on mass_ahead").obligation


def _t6(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    obligations = []
    ar = GenericCoordinateArith(ranks=True)
    law = step_law(ar, GREEDY, ar.p, ar.q)
    (rank, _, _), *others = ar.ranks
    g = z3.If(rank == 0, ar.const(1), ar.const(0))
    facts = [ar.p >= 0, ar.q >= 0, ar.q <= 1, rank >= 0, law.residual_mass == 1,
             z3.Implies(rank == 0, law.acceptance_rate == ar.q)] + [other == rank for other, _, _ in others]
    obligations.append(ranking_order(rlimit))
    obligations.append(assumption(
        "T6 rank facts", "ranking ahead being a strict total order (checked above), exactly one token has "
        "rank 0, so g = 1[rank 0] is a one-point indicator: sum_x g = 1 and sum_x q g = q(argmax); every "
        "mass_ahead(p, 1) call in the rule returns the same rank (a function of p)",
        "order theory: a finite strict total order has exactly one maximum"))
    obligations.append(check_z3(
        "T6 greedy step (every n)",
        "with ties to the lower index exactly one token has rank 0 (sum_x g = 1) and sum_x q g = q(argmax): "
        "output = g = 1[x = argmax p] for every q", ar, facts, law.output == g, rlimit=rlimit,
        method="z3, sums abstracted").obligation)
    for n in (2, 3, 4):
        dar = Z3Arith()
        p, q = dar.vector("p", n), dar.vector("q", n)
        out = step_law(dar, GREEDY, p, q).output
        g_vec = dar.select(dar.eq(dar.mass_ahead(p, dar.one), dar.zero), dar.one, dar.zero)
        obligations.append(bounded(check_z3(f"T6 direct n={n}", "greedy step output = 1[argmax p]", dar,
                                             [dar.simplex(p), dar.simplex(q)],
                                             dar.all_of(o == e for o, e in zip(out, g_vec)),
                                             rlimit=rlimit, method="z3 direct").obligation))
    start = time.perf_counter()
    checked, failure = 0, ""
    for vocab, k in EXHAUSTIVE_SIZES:
        for seed in range(TABLES_PER_SIZE):
            pair = ToyPair.random(vocab, k, seed, resolution=4)  # coarse: ties are common
            greedy = _greedy_sequence(pair)
            for drafts in itertools.product(range(vocab), repeat=k):
                emitted = _greedy_round(pair, drafts)
                checked += 1
                if emitted is None or greedy[:len(emitted)] != emitted:
                    failure = f"V={vocab}, K={k}, drafts {drafts}: emitted {emitted}, greedy {greedy}"
                    break
    obligations.append(Obligation(
        "T6 greedy contract (exhaustive)", "every draft sequence: the round emits a prefix of the target's "
        "greedy sequence (ties to the lower index), so greedy continuation reproduces it",
        Verdict.REFUTED if failure else Verdict.PROVED, "exact enumeration", time.perf_counter() - start,
        failure or f"{checked} (table, draft sequence) cases, (V, K) in {list(EXHAUSTIVE_SIZES)}",
        Basis.BOUNDED))
    law_pq = PairLaw("greedy", ("p", "q"), lambda a, L: step_law(a, GREEDY, L["p"], L["q"]).output,
                     lambda a, L: L["p"])
    found = find_counterexample(law_pq, seeds=[{"p": (Fraction(2, 3), Fraction(1, 3)),
                                               "q": (Fraction(1, 2), Fraction(1, 2))}])
    obligations.append(Obligation(
        "T6 not a sampling rule", "at temperature > 0 the target has full support and greedy emits a point "
        "mass: TV > 0 (exact witness)", Verdict.PROVED if found and found.tv > 0 else Verdict.REFUTED,
        "exact witness", 0.0, f"p={[str(x) for x in found.p]}, TV={found.tv}" if found else "no witness"))
    stated = obligations[1].basis == Basis.ASSUMPTION
    return obligations, {"n": f"all (step, {'assuming the rank facts' if stated else 'Coq'}); exhaustive V<=3, K<=3",
                         "counterexample": found, "every_n": True}


def _t7(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    obligations = []
    ar = GenericCoordinateArith()
    p, q = ar.p, ar.q
    law = step_law(ar, CANONICAL, p, q)
    statement = "q(x) A(x) = min(p(x), q(x))"
    obligations.append(check_z3("T7 L1 (z3)", statement, ar, [p >= 0, q >= 0], law.accepted_mass ==
                                ar.minimum(p, q), rlimit=rlimit, method="z3 pointwise").obligation)
    sar = SympyArith()
    ps, qs = sympy.symbols("p_x q_x", real=True)
    obligations.append(prove_by_cases("T7 L1 (sympy)", statement,
                                      sar.mul(qs, CANONICAL.acceptance(sar, ps, qs)) - sar.minimum(ps, qs),
                                      [ps >= 0, qs >= 0], rlimit=rlimit))
    obligations.append(check_z3("T7 |p-q| split", "|p - q| = max(0, p-q) + max(0, q-p)", ar, [p == p],
                                z3.If(p >= q, p - q, q - p) == ar.relu(p - q) + ar.relu(q - p), rlimit=rlimit,
                                method="z3 pointwise").obligation)
    obligations.append(check_z3("T7 signed split", "max(0, p-q) = 1 max(0, q-p) + 1 p + (-1) q", ar, [p == p],
                                ar.relu(p - q) == ar.relu(q - p) + p - q, rlimit=rlimit,
                                method="z3 pointwise").obligation)
    s_min, s_plus, s_minus = (ar.real(n) for n in ("sum_min", "sum_pos", "sum_neg"))
    obligations += sum_step("T7 sum step", "B = sum min(p,q) (L1); sum min + sum max(0,p-q) = 1 (T2); "
                            "sum max(0,p-q) = sum max(0,q-p) + sum p - sum q = sum max(0,q-p) (signed split); "
                            "TV = sum |p-q|/2 = (sum max(0,p-q) + sum max(0,q-p))/2 (|p-q| split)",
                            "L1, T1, the two splits", terms=3, rlimit=rlimit)
    tv = (s_plus + s_minus) / 2
    obligations.append(check_z3("T7 acceptance (every n)", "E[accept] = B = 1 - TV(p, q)", ar,
                                [law.acceptance_rate == s_min, s_min + s_plus == 1, s_plus == s_minus],
                                law.acceptance_rate == 1 - tv, rlimit=rlimit, method="z3, sums abstracted").obligation)
    for n in range(2, 6):
        dar = Z3Arith()
        pv, qv = dar.vector("p", n), dar.vector("q", n)
        rate = step_law(dar, CANONICAL, pv, qv).acceptance_rate
        obligations.append(bounded(check_z3(f"T7 direct n={n}", "sum q A = 1 - TV(p, q)", dar,
                                             [dar.simplex(pv), dar.simplex(qv)],
                                             rate == 1 - law_distance(dar, pv, qv), rlimit=rlimit,
                                             method="z3 direct").obligation))
    start = time.perf_counter()
    a = sympy.Symbol("a", positive=True)
    i = sympy.Symbol("i", integer=True, nonnegative=True)
    k_sym = sympy.Symbol("K", integer=True, nonnegative=True)

    def closed_form(total: Any) -> Any:  # the a != 1 branch of sympy's Piecewise result
        return total.args[-1][0] if isinstance(total, sympy.Piecewise) else total

    tokens = closed_form(sympy.summation(a ** i, (i, 0, k_sym)))
    accepted = closed_form(sympy.summation(a ** i, (i, 1, k_sym)))
    ok = (sympy.simplify(tokens - (1 - a ** (k_sym + 1)) / (1 - a)) == 0
          and sympy.simplify(accepted - a * (1 - a ** k_sym) / (1 - a)) == 0)
    obligations.append(Obligation(
        "T7 tokens per round (symbolic K)", "i.i.d. acceptance a != 1: P(#accepted >= i) = a^i for i <= K, so "
        "E[tokens] = sum_{i=0}^{K} a^i = (1 - a^(K+1))/(1 - a); E[accepted] = a (1 - a^K)/(1 - a)",
        Verdict.PROVED if ok else Verdict.REFUTED, "sympy summation", time.perf_counter() - start,
        "closed forms of the geometric sums, K symbolic"))
    start = time.perf_counter()
    bad = ""
    count = 0
    for vocab, kk in EXHAUSTIVE_SIZES:
        for seed in range(TABLES_PER_SIZE):
            pair = ToyPair.random(vocab, kk, seed, context_free=True)
            rate = step_law(ExactArith(), CANONICAL, pair.target[()], pair.draft[()]).acceptance_rate
            mean_len = sum((len(s) * w for s, w in round_law(pair).items()), Fraction(0))
            expected = sum((rate ** j for j in range(kk + 1)), Fraction(0))
            count += 1
            if mean_len != expected:
                bad = f"V={vocab}, K={kk}, seed={seed}: {mean_len} != {expected}"
    obligations.append(Obligation(
        "T7 tokens per round (exact)", "context-free pairs (i.i.d. acceptance): E[len(round)] = sum_i a^i",
        Verdict.REFUTED if bad else Verdict.PROVED, "exact enumeration", time.perf_counter() - start,
        bad or f"{count} pairs", Basis.BOUNDED))
    return obligations, {"n": "all (direct 2..5)", "every_n": True}


_THEOREMS = (
    Theorem("T1", "pointwise split", "min(p,q) + max(0, p-q) = p for all reals p, q", _t1),
    Theorem("T2", "rejection identity", "on the simplex, 1 - sum_x min(p,q) = sum_x max(0, p-q), every n", _t2),
    Theorem("T3", "single-step exactness", "for every n and p, q in the simplex, the canonical step's output "
            "law is p; edge cases p == q (zero residual), q(x) = 0, p(x) = 0 included", _t3),
    Theorem("T4", "normalisation", "the canonical step's output law sums to 1, every n", _t4),
    Theorem("T5", "K-token rounds", "one round of K drafts (first-rejection truncation, bonus token) "
            "followed by target sampling has the target's law over K+1 tokens, every V, K", _t5),
    Theorem("T6", "greedy contract", "greedy verification emits the target's greedy sequence (ties to the "
            "lower index) for any drafts; it is not a sampling rule at temperature > 0", _t6),
    Theorem("T7", "acceptance", "E[accept] = sum min(p,q) = 1 - TV(p,q); E[tokens per round] = "
            "(1 - a^(K+1))/(1 - a) under i.i.d. acceptance a", _t7),
)


def theorems() -> tuple[Theorem, ...]:
    """T1..T7 in order."""
    return _THEOREMS


def prove_theorem(theorem: Theorem | str, *, rlimit: int = DEFAULT_RLIMIT) -> ProofResult:
    """Check every obligation of one theorem."""
    if isinstance(theorem, str):
        by_name = {t.name: t for t in _THEOREMS}
        if theorem not in by_name:
            raise ValueError(f"theorem: unknown {theorem!r} - choose one of {sorted(by_name)}")
        theorem = by_name[theorem]
    start = time.perf_counter()
    obligations, info = theorem.check(rlimit)
    obligations += [o for o in (kernel_obligation(theorem.name, theorem.statement),) if o is not None]
    methods = sorted({o.method for o in obligations})
    # the theorem's own claim (an every-size chain is among its obligations, or bounded checks only);
    # settle() lets decide() turn it and the obligations into the verdict, scope and assumptions
    claim = Verdict.PROVED if info["every_n"] else Verdict.BOUNDED
    assumptions = tuple(f"{o.name}: {o.source}" for o in obligations if o.basis == Basis.ASSUMPTION)
    return settle(ProofResult(
        rule=theorem.name, claim="theorem", verdict=claim, method=", ".join(methods), n=info["n"],
        seconds=time.perf_counter() - start, versions=solver_versions(rlimit),
        counterexample=info.get("counterexample"), obligations=tuple(obligations),
        reason="; ".join(f"{o.name}: {o.detail}" for o in obligations if o.verdict != Verdict.PROVED),
        notes=(f"{theorem.title}: {theorem.statement}",) + tuple(f"assumption: {a}" for a in assumptions)
        + kernel_fallback(theorem.name)))
