"""The theorems T1-T7, each a named obligation with a statement a reader can check.

Each theorem's proof is a list of :class:`~specproof.proofs.outcomes.Obligation` records (z3, sympy
case splits, stated sum steps, exhaustive exact enumeration), combined into one
:class:`~specproof.proofs.outcomes.ProofResult` with claim ``"theorem"``.  Rules are evaluated from
their one definition (:mod:`specproof.proofs.rules`) in every backend.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import sympy
import z3

from .backends.exact import ExactArith
from .backends.sympy_backend import SympyArith
from .backends.z3_backend import Z3Arith
from .every_size import GenericCoordinateArith, direct_check, prove_every_size
from .outcomes import DEFAULT_RLIMIT, Obligation, ProofResult, Verdict, combine, solver_versions
from .rules import CANONICAL, GREEDY, step_law, step_rules
from .search import PairLaw, find_counterexample, law_distance
from .sequences import ToyPair, continued_law, round_law, target_law
from .solving import check_z3, prove_by_cases

__all__ = ["Theorem", "theorems", "prove_theorem", "EXHAUSTIVE_SIZES"]

EXHAUSTIVE_SIZES = ((2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3))
"""(V, K) pairs checked by exhaustive enumeration of every sequence."""
TABLES_PER_SIZE = 4


@dataclass(frozen=True)
class Theorem:
    name: str
    title: str
    statement: str
    check: Callable[[int], tuple[list[Obligation], dict[str, Any]]]


def _linear_step(name: str, statement: str, premise: str) -> Obligation:
    return Obligation(name, statement, Verdict.PROVED, "linearity of finite sums", 0.0,
                      f"premise {premise} is checked above; summing a pointwise identity over the vocabulary")


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
    return [z.obligation, s], {"n": "pointwise"}


def _t2(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    obligations, _ = _t1(rlimit)
    obligations.append(_linear_step("T2 (every n)", "sum_x min(p,q) + sum_x max(0, p-q) = sum_x p = 1", "T1"))
    for n in range(2, 9):
        ar = Z3Arith()
        p, q = ar.vector("p", n), ar.vector("q", n)
        goal = ar.sub(ar.one, ar.total(ar.minimum(p, q))) == ar.total(ar.relu(ar.sub(p, q)))
        obligations.append(check_z3(f"T2 direct n={n}", "1 - sum min(p,q) = sum max(0, p-q) on the simplex",
                                    ar, [ar.simplex(p), ar.simplex(q)], goal, rlimit=rlimit,
                                    method="z3 direct").obligation)
    return obligations, {"n": "all (direct 2..8)"}


def _t3(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    verdict, obligations, _ = prove_every_size(CANONICAL, rlimit=rlimit)
    f1 = all(o.verdict == Verdict.PROVED for o in obligations if o.name.startswith("F1"))
    for n in (2, 3, 4):
        obligations.append(direct_check(CANONICAL, n, rlimit=rlimit, hint=f1)[0])
    return obligations, {"n": "all (direct 2..4)"}


def _t4(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    ar = GenericCoordinateArith()
    law = step_law(ar, CANONICAL, ar.p, ar.q)
    big_b, big_s = law.acceptance_rate, law.residual_mass
    # sum_x output(x) = B + (1 - B) sum_x residual(x); sum_x w(x)/S = 1 if S > 0 else 0 (linearity)
    total_output = big_b + (1 - big_b) * z3.If(big_s > 0, ar.const(1), ar.const(0))
    obligations = [_linear_step("T4 sum step", "sum_x output = B + (1-B) sum_x residual; sum_x w/S = [S > 0]",
                                "the definition of step_law"),
                   check_z3("T4 (every n)", "B + (1 - B)[S > 0] = 1 given T2 (B + S = 1, S >= 0)", ar,
                            [big_b + big_s == 1, big_s >= 0], total_output == 1, rlimit=rlimit,
                            method="z3, sums abstracted").obligation]
    for n in range(2, 5):
        dar = Z3Arith()
        p, q = dar.vector("p", n), dar.vector("q", n)
        out = step_law(dar, CANONICAL, p, q).output
        obligations.append(check_z3(f"T4 direct n={n}", "sum_x output(x) = 1 on the simplex", dar,
                                    [dar.simplex(p), dar.simplex(q)], dar.total(out) == 1, rlimit=rlimit,
                                    method="z3 direct").obligation)
    return obligations, {"n": "all (direct 2..4)"}


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
                                  time.perf_counter() - start, f"V={vocab}, K={k}: laws differ")
    return Obligation(f"T5 exhaustive ({getattr(rule, 'name', rule)})",
                      "round + continuation == target over every sequence of K+1 tokens", Verdict.PROVED,
                      "exact enumeration", time.perf_counter() - start,
                      f"{checked} tables, (V, K) in {list(sizes)}, zeros included")


def _t5(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    t3, _ = _t3(rlimit)
    obligations = [Obligation("T3 (premise)", "the single-step law is p, for every n", combine(o.verdict for o in t3),
                              "see T3", sum(o.seconds for o in t3), f"{len(t3)} obligations")]
    ar = Z3Arith()
    a, r, p_x, c = (ar.real(n) for n in ("accepted_x", "corrected_x", "p_x", "continuation_s"))
    obligations.append(check_z3(
        "T5 induction step",
        "K drafts: P(x, s) = accepted(x) c(s|x) + corrected(x) c(s|x), where the accepted branch is a "
        "(K-1)-round from prefix x (law c = p(.|x) by the hypothesis) and the corrected branch continues "
        "with the target (law c); with accepted + corrected = p(x) (T3), P(x, s) = p(x) c(s|x). "
        "Base K = 0: the bonus token is drawn from p.",
        ar, [a + r == p_x, a >= 0, r >= 0, c >= 0], a * c + r * c == p_x * c, rlimit=rlimit).obligation)
    for rule in step_rules():
        if rule.claim == "exact":
            obligations.append(sequence_exactness(rule))
    return obligations, {"n": "all V, K (induction); exhaustive V<=3, K<=3"}


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


def _t6(rlimit: int) -> tuple[list[Obligation], dict[str, Any]]:
    obligations = []
    ar = GenericCoordinateArith(ranks=True)
    law = step_law(ar, GREEDY, ar.p, ar.q)
    (rank, _, _), *others = ar.ranks
    g = z3.If(rank == 0, ar.const(1), ar.const(0))
    facts = [ar.p >= 0, ar.q >= 0, ar.q <= 1, rank >= 0, law.residual_mass == 1,
             z3.Implies(rank == 0, law.acceptance_rate == ar.q)] + [other == rank for other, _, _ in others]
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
        obligations.append(check_z3(f"T6 direct n={n}", "greedy step output = 1[argmax p]", dar,
                                    [dar.simplex(p), dar.simplex(q)], dar.all_of(o == e for o, e in zip(out, g_vec)),
                                    rlimit=rlimit, method="z3 direct").obligation)
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
        failure or f"{checked} (table, draft sequence) cases, (V, K) in {list(EXHAUSTIVE_SIZES)}"))
    law_pq = PairLaw("greedy", ("p", "q"), lambda a, L: step_law(a, GREEDY, L["p"], L["q"]).output,
                     lambda a, L: L["p"])
    found = find_counterexample(law_pq, seeds=[{"p": (Fraction(2, 3), Fraction(1, 3)),
                                               "q": (Fraction(1, 2), Fraction(1, 2))}])
    obligations.append(Obligation(
        "T6 not a sampling rule", "at temperature > 0 the target has full support and greedy emits a point "
        "mass: TV > 0 (exact witness)", Verdict.PROVED if found and found.tv > 0 else Verdict.REFUTED,
        "exact witness", 0.0, f"p={[str(x) for x in found.p]}, TV={found.tv}" if found else "no witness"))
    return obligations, {"n": "all (step); exhaustive V<=3, K<=3", "counterexample": found}


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
    s_min, s_plus, s_minus = (ar.real(n) for n in ("sum_min", "sum_pos", "sum_neg"))
    obligations.append(_linear_step("T7 sum step", "B = sum min(p,q) (L1); sum min + sum max(0,p-q) = 1 (T2); "
                                    "sum max(0,p-q) - sum max(0,q-p) = sum (p - q) = 0", "L1, T1"))
    tv = (s_plus + s_minus) / 2
    obligations.append(check_z3("T7 acceptance (every n)", "E[accept] = B = 1 - TV(p, q)", ar,
                                [law.acceptance_rate == s_min, s_min + s_plus == 1, s_plus == s_minus],
                                law.acceptance_rate == 1 - tv, rlimit=rlimit, method="z3, sums abstracted").obligation)
    for n in range(2, 6):
        dar = Z3Arith()
        pv, qv = dar.vector("p", n), dar.vector("q", n)
        rate = step_law(dar, CANONICAL, pv, qv).acceptance_rate
        obligations.append(check_z3(f"T7 direct n={n}", "sum q A = 1 - TV(p, q)", dar,
                                    [dar.simplex(pv), dar.simplex(qv)], rate == 1 - law_distance(dar, pv, qv),
                                    rlimit=rlimit, method="z3 direct").obligation)
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
        bad or f"{count} pairs"))
    return obligations, {"n": "all (direct 2..5)"}


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
    verdict = combine(o.verdict for o in obligations)
    methods = sorted({o.method for o in obligations})
    return ProofResult(
        rule=theorem.name, claim="theorem", verdict=verdict, method=", ".join(methods), n=info["n"],
        seconds=time.perf_counter() - start, versions=solver_versions(rlimit),
        counterexample=info.get("counterexample"), obligations=tuple(obligations),
        reason="" if verdict == Verdict.PROVED else
        "; ".join(f"{o.name}: {o.detail}" for o in obligations if o.verdict != Verdict.PROVED),
        notes=(f"{theorem.title}: {theorem.statement}",))
