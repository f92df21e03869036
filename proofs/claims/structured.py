"""Proofs for rules that are not a single :class:`~specproof.proofs.laws.step_rules.StepRule`.

Each function returns a :class:`~specproof.proofs.engine.results.ProofResult`; the laws come from their one
definition (:mod:`.block`, :mod:`.multidraft`, :mod:`.sampler_match`, :mod:`.processors`).  Every
obligation carries its basis (machine, bounded, assumption with its source); the verdict, its scope
and its assumptions are decided by :func:`~specproof.proofs.engine.verdicts.decide` (through
:func:`~specproof.proofs.engine.verdicts.settle`), the assumptions also listed in the notes.

* block verification - for every V and K, by two inductions whose decompositions are taken from the
  paper (assumption), with the pointwise and algebraic steps machine-checked (B1-B4), plus exhaustive
  exact checks and the check vector of algorithms.md (bounded);
* recursive rejection sampling - induction on the levels from T3: with replacement the level step
  is checked on :func:`~.multidraft.rrs_level` itself for every n; without replacement (a loop over
  drafts, tuples only) it is checked at n = 2, 3 and otherwise an assumption;
* SpecTr K-SEQ - algebra with the sums abstracted (k = 2..4 in z3, the geometric identity for
  symbolic k in sympy), existence of rho, direct z3 n = 2, 3 and exact rational instances;
* sampler-match - a pointwise identity once ``sum q = 1``;
* processors on both sides - T3 applied to the pair of processed laws, once the processor is shown
  to map laws to laws for every n (finite-sum facts on a generic coordinate of the processor; top-k and
  top-p also assume that a finite strict total order has one maximum, the argmax they keep).

Sum steps use the facts of :mod:`.finite_sums` (induction on n).  A z3 check whose conclusion follows
from its hypotheses by rewriting alone is not recorded as evidence; the decomposition it encoded is an
assumption with its source.
"""

from __future__ import annotations

import functools
import itertools
import time
from fractions import Fraction
from typing import Any, Callable

import sympy
import z3

from specproof.proofs.arith.exact import ExactArith
from specproof.proofs.arith.z3_backend import Z3Arith
from specproof.proofs.laws.block import (Tables, block_continued_law, block_residual_weight, block_stop_probability,
                    block_target_law, block_weight, expected_accepted_block)
from specproof.proofs.engine.every_size import GenericCoordinateArith, prove_every_size
from specproof.proofs.engine.finite_sums import sum_step, support
from specproof.proofs.laws.multidraft import (recursive_rejection_law, rrs_level, spectr_compose, spectr_instance, spectr_law,
                         spectr_round)
from specproof.proofs.engine.results import Basis, Obligation, ProofResult, Verdict, combine, solver_versions
from specproof.proofs.laws.processors import PROCESSORS, processed_law
from specproof.proofs.claims.pipeline import Settings
from specproof.proofs.laws.step_rules import CANONICAL, step_law
from specproof.proofs.laws.sampler_match import sampler_match_law
from specproof.proofs.engine.counterexamples import simplex_grid
from specproof.proofs.laws.sequences import ToyPair, round_law
from specproof.proofs.engine.solvers import check_z3, prove_by_cases
from specproof.proofs.claims.theorems import assumption, bounded, ranking_order
from specproof.proofs.engine.verdicts import settle

__all__ = ["prove_block", "prove_recursive_rejection", "prove_spectr", "prove_sampler_match",
           "prove_processor_both_sides", "BLOCK_CHECK_VECTOR"]

THIRD = Fraction(1, 3)
BLOCK_CHECK_VECTOR = {"p": (THIRD, 2 * THIRD), "q": (2 * THIRD, THIRD), "k": 2}
"""algorithms.md section 3: V = 2, K = 2, context-free p = (1/3, 2/3), q = (2/3, 1/3)."""


def _result(name: str, claim: str, obligations: list[Obligation], method: str, n: str, start: float,
            settings: Settings, notes: tuple[str, ...] = (), *, every_n: bool) -> ProofResult:
    """``every_n``: the obligations contain a complete every-size chain (the prover's claim; bounded
    obligations are then cross-checks).  :func:`settle` decides the verdict from the obligations."""
    assumptions = tuple(f"{o.name}: {o.source}" for o in obligations if o.basis == Basis.ASSUMPTION)
    claimed = Verdict.PROVED if every_n else Verdict.BOUNDED
    method = ", ".join([method] + [o.method for o in obligations if o.method.startswith("kernel-checked")])
    return settle(ProofResult(name, claim, claimed, method, n, time.perf_counter() - start,
                              solver_versions(settings.rlimit), obligations=tuple(obligations),
                              reason="; ".join(f"{o.name}: {o.detail}" for o in obligations
                                               if o.verdict != Verdict.PROVED),
                              notes=notes + tuple(f"assumption: {a}" for a in assumptions)))


def _exact_obligation(name: str, statement: str, check: Callable[[], tuple[bool, str]]) -> Obligation:
    """An exact check at the sizes its ``detail`` lists (basis ``bounded``)."""
    start = time.perf_counter()
    ok, detail = check()
    return Obligation(name, statement, Verdict.PROVED if ok else Verdict.REFUTED, "exact enumeration",
                      time.perf_counter() - start, detail, Basis.BOUNDED)


@functools.lru_cache(maxsize=4)
def _t3_premise(rlimit: int) -> Obligation:
    """T3 for the canonical rule (cached per rlimit: the canonical rule is a fixed definition)."""
    start = time.perf_counter()
    verdict, obligations, reason = prove_every_size(CANONICAL, rlimit=rlimit)
    return Obligation("T3 (premise)", "a canonical step with target r and ANY draft law q has output law r, "
                      "every n", verdict, "see T3", time.perf_counter() - start, reason or f"{len(obligations)} obligations")


# -- block verification ----------------------------------------------------------------------------

def _block_tables(vocab: int, k: int) -> list[Tables]:
    pairs = [ToyPair.random(vocab, k, seed, zeros=seed % 2 == 0) for seed in range(4)]
    pairs.append(ToyPair.random(vocab, k, 7, context_free=True))
    return [Tables.from_pair(pair) for pair in pairs]


def prove_block(settings: Settings) -> ProofResult:
    """Block verification preserves the target law over K+1 tokens, every V and K.

    Notation along a drafted path: ``Q_i = q(x_1..x_i)``, ``W_i = Q_i w_i``, ``Z_i`` and ``h_i`` as in
    :mod:`.block`, ``R_i(y) = Q_i max(0, w_i p_{i+1}(y) - q_{i+1}(y))`` the emission mass at
    ``tau = i`` with correction ``y``.  Backward (B3): ``P(tau >= i | x_1..x_i) = w_i`` and
    ``P(tau = i | x_1..x_i) = Z_i``.  Forward (B4, B5): with ``O_m`` the probability that the
    continued output starts with ``s_1..s_m``, ``O_m = p_m(s_m) O_{m-1}``, so ``O_{K+1} = p(s)``."""
    start = time.perf_counter()
    rl = settings.rlimit
    ar = Z3Arith()
    w, p, q, q_prev = (ar.real(n) for n in ("w", "p_y", "q_y", "Q_prev"))
    unit = [w >= 0, w <= 1, p >= 0, p <= 1, q >= 0, q <= 1, q_prev >= 0, q_prev <= 1]
    weight = block_weight(ar, w, p, q)
    obligations = [
        check_z3("B1 weight", "q_y w' = min(q_y, w p_y) with w' = min(1, w p_y/q_y) (0 if q_y = 0), and "
                 "0 <= w' <= 1; times Q_prev: W_{i+1} = min(Q_{i+1}, W_i p_{i+1})", ar, unit,
                 z3.And(q * weight == ar.minimum(q, w * p), weight >= 0, weight <= 1), rlimit=rl,
                 method="z3 pointwise").obligation,
        check_z3("B2 split", "max(0, w p - q) + min(q, w p) = w p (T1)", ar, unit,
                 block_residual_weight(ar, w, p, q) + ar.minimum(q, w * p) == w * p, rlimit=rl,
                 method="z3 pointwise").obligation,
    ]
    z, sum_min = ar.real("Z"), ar.real("sum_min")
    h = block_stop_probability(ar, z, w)
    obligations += sum_step("B3 sum step", "summing B2 (max(0, w p - q) = -1 min(q, w p) + w p) over y: "
                            "Z + sum_y min(q_y, w p_y) = w sum p = w; and 0 <= max(0, w p_y - q_y) <= Z",
                            "B2", monotone=True, rlimit=rl)
    induction = assumption(
        "B induction structure", "backward: with the hypothesis P(tau >= i+1 | x_1..x_i, y) = w_{i+1}(y), "
        "P(no stop after i | x_1..x_i) = sum_y q_y (1 - w_{i+1}(y)) = 1 - w + Z (by B1 and B3 sum step); "
        "forward: splitting on tau, O_m = W_m + R_{m-1} + p_m (O_{m-1} - W_{m-1}), which with B4 gives "
        "O_m = p_m O_{m-1} and O_{K+1}(s) = prod_m p_m(s_m). These decompositions of block_round_law are "
        "not checked for every K (only by the bounded exhaustive check below)",
        "Sun et al. 2024, Block Verification Accelerates Speculative Decoding, proof of the block "
        "verification theorem (backward and forward inductions)")
    obligations.append(induction)
    obligations.append(check_z3(
        "B3 backward step", "with G = Z + 1 - w: P(tau >= i) = 1 - (1 - h_i) G = w_i and P(tau = i) = h_i G = Z_i; "
        "base P(tau >= K) = h_K = w_K", ar, [w >= 0, w <= 1, z >= 0, sum_min + z == w],
        z3.And(1 - (1 - h) * (z + 1 - w) == w, h * (z + 1 - w) == z), rlimit=rl,
        method="z3, sums abstracted").obligation)
    r_y = block_residual_weight(ar, w, p, q)
    emitted = q_prev * z * ar.safe_div(r_y, z, ar.zero)
    obligations.append(check_z3(
        "B4 forward step", "emission at tau = i: Q_i Z_i max(0, w p - q)/Z_i = R_i(y) (also when Z_i = 0), and "
        "W_{i+1} + R_i = W_i p_{i+1}(y)", ar, unit + [r_y <= z],
        z3.And(emitted == q_prev * r_y, q_prev * q * weight + q_prev * r_y == q_prev * w * p), rlimit=rl,
        method="z3, sums abstracted").obligation)
    # (the former "B5" z3 check, O_m = W_m + R + p_m(O - W) and W_m + R = W p_m |- O_m = p_m O, followed
    # from its hypotheses by rewriting alone; its content is the forward decomposition stated above)

    exact = ExactArith()

    def exhaustive() -> tuple[bool, str]:
        count = 0
        for vocab, k in ((2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3)):
            for tables in _block_tables(vocab, k):
                count += 1
                if block_continued_law(exact, tables) != block_target_law(exact, tables):
                    return False, f"V={vocab}, K={k}: laws differ"
        return True, f"{count} tables, V <= 3, K <= 3, zeros included"

    obligations.append(_exact_obligation("B exhaustive", "block round + continuation == target law", exhaustive))

    def check_vector() -> tuple[bool, str]:
        cv = BLOCK_CHECK_VECTOR
        tables = Tables.context_free(cv["p"], cv["q"], cv["k"])
        pair = ToyPair.context_free(cv["p"], cv["q"], cv["k"])
        token = sum(((len(s) - 1) * m for s, m in round_law(pair).items()), Fraction(0))
        block = expected_accepted_block(exact, tables)
        law = block_continued_law(exact, tables)
        two: dict[tuple[int, ...], Fraction] = {}
        for seq, mass in law.items():
            two[seq[:2]] = two.get(seq[:2], Fraction(0)) + mass
        product = all(two[(a, b)] == cv["p"][a] * cv["p"][b] for a, b in itertools.product(range(2), repeat=2))
        ok = token == Fraction(10, 9) and block == Fraction(11, 9) and product
        return ok, f"E[accepted] token-level {token}, block {block}; first two tokens ~ p x p: {product}"

    obligations.append(_exact_obligation("B check vector", "V=2, K=2: E[accepted] 10/9 (token) and 11/9 "
                                         "(block); first two tokens ~ p x p", check_vector))
    return _result("block", "exact", obligations, "induction (z3 steps, sums abstracted) + exhaustive exact",
                   "all V, K" + (" (assuming the induction structure)" if induction.basis == Basis.ASSUMPTION
                                 else "") + " (exhaustive V<=3, K<=3)", start, settings,
                   every_n=True)


# -- recursive rejection sampling --------------------------------------------------------------------

def prove_recursive_rejection(settings: Settings, *, replacement: bool) -> ProofResult:
    """Recursive rejection sampling with k drafts is exact, every n and k."""
    start = time.perf_counter()
    name = "rrs-with-replacement" if replacement else "rrs-without-replacement"
    obligations = [_t3_premise(settings.rlimit)]
    # (the former z3 "induction step", a + R r' = r and L_j = r' |- a + sum_j b_j L_j = r, followed from
    # its hypotheses by rewriting alone and never looked at recursive_rejection_law)
    hypothesis = ("the hypothesis that the remaining levels output their own target r_{i+1} for ANY draft law "
                  "(induction on the levels from the last; base: after k rejections recursive_rejection_law "
                  "samples r_{k+1})")
    if replacement:
        gar = GenericCoordinateArith()
        level = rrs_level(gar, gar.p, gar.q, lambda r_next, q_next: r_next, replacement=True)
        step = step_law(gar, CANONICAL, gar.p, gar.q).output
        obligations.append(check_z3(
            "RRS level step (every n)", f"with {hypothesis}, level i's output (rrs_level itself, on a generic "
            "coordinate) equals the canonical step's output with target r_i and draft q, which is r_i by T3",
            gar, [gar.p >= 0, gar.p <= 1, gar.q >= 0, gar.q <= 1], level == step, rlimit=settings.rlimit,
            method="z3 pointwise, sums abstracted").obligation)
    else:
        obligations.append(assumption(
            "RRS level step (without replacement)", f"with {hypothesis}, level i's output is a + "
            "(1 - sum q_i) r_i + sum_x rejected_x r_{i+1} = a + (sum_x rejected_x) r_{i+1} (linearity; "
            "sum q_i = 1), the canonical step's output, so r_i by T3. The loop over drafts x needs tuples, "
            "so this reading of rrs_level is checked only at n = 2, 3 (bounded, below)",
            "Miao et al. 2024 (SpecInfer), recursive rejection sampling: each level is a canonical step "
            "whose residual is the next level's target"))
        for n in (2, 3):
            dar = Z3Arith()
            p, q = dar.vector("p", n), dar.vector("q", n)
            level = rrs_level(dar, p, q, lambda r_next, q_next: r_next, replacement=False)
            step = step_law(dar, CANONICAL, p, q).output
            obligations.append(bounded(check_z3(
                f"RRS level step n={n}", f"with {hypothesis}: rrs_level's output == the canonical step's", dar,
                [dar.simplex(p), dar.simplex(q)], dar.all_of(a == b for a, b in zip(level, step)),
                rlimit=settings.rlimit, method="z3 direct").obligation))
    for n in (2,):
        dar = Z3Arith()
        p, q = dar.vector("p", n), dar.vector("q", n)
        out = recursive_rejection_law(dar, p, q, 2, replacement=replacement)
        obligations.append(bounded(check_z3(f"RRS direct n={n}, k=2", "output == p over symbolic p, q", dar,
                                            [dar.simplex(p), dar.simplex(q)],
                                            dar.all_of(o == x for o, x in zip(out, p)),
                                            rlimit=settings.rlimit, method="z3 direct").obligation))
    exact = ExactArith()

    def grid() -> tuple[bool, str]:
        count = 0
        for n, den in ((2, 6), (3, 4)):
            points = simplex_grid(n, den)
            for p, q in itertools.product(points, repeat=2):
                for k in (1, 2, 3):
                    count += 1
                    if recursive_rejection_law(exact, p, q, k, replacement=replacement) != p:
                        return False, f"p={p}, q={q}, k={k}"
        return True, f"{count} (p, q, k) on the grids 1/6 (n=2), 1/4 (n=3), k = 1..3"

    obligations.append(_exact_obligation("RRS exact grid", "output == p exactly", grid))
    return _result(name, "exact", obligations, "induction on levels from T3; z3 direct; exact grid",
                   "all n, k" + (" (assuming the level step)" if any(o.basis == Basis.ASSUMPTION for o in obligations)
                                 else "")
                   + " (direct n=2, k=2; grid n<=3, k<=3)", start,
                   settings, every_n=True)


# -- SpecTr K-SEQ -------------------------------------------------------------------------------------

def prove_spectr(settings: Settings) -> ProofResult:
    """SpecTr K-SEQ is exact when rho solves 1 - (1-beta)^k = rho beta, every n."""
    start = time.perf_counter()
    rl = settings.rlimit
    obligations = []
    t0 = time.perf_counter()
    beta, i = sympy.Symbol("beta", positive=True), sympy.Symbol("i", integer=True, nonnegative=True)
    k = sympy.Symbol("k", integer=True, positive=True)
    reach = sympy.summation((1 - beta) ** i, (i, 0, k - 1))
    reach = reach.args[-1][0] if isinstance(reach, sympy.Piecewise) else reach
    ok = sympy.simplify(beta * reach - (1 - (1 - beta) ** k)) == 0
    obligations.append(Obligation("K1 geometric sum", "beta sum_{i<k} (1-beta)^i = 1 - (1-beta)^k, symbolic k: "
                                  "the first-accepted draft has law min(q, p/rho) sum_{i<k} (1-beta)^i; with the "
                                  "equation, sum_{i<k} (1-beta)^i = rho (beta > 0)",
                                  Verdict.PROVED if ok else Verdict.REFUTED, "sympy summation",
                                  time.perf_counter() - t0, "closed form"))
    ar = Z3Arith()
    p, q, rho = ar.real("p"), ar.real("q"), ar.real("rho")
    obligations.append(check_z3("K2 residual numerator", "p - rho min(q, p/rho) >= 0 and min(q, p/rho) <= p for "
                                "rho >= 1: the residual is non-negative once sum_{i<k}(1-beta)^i = rho", ar,
                                [p >= 0, q >= 0, rho >= 1],
                                z3.And(p - rho * ar.minimum(q, p / rho) >= 0, ar.minimum(q, p / rho) <= p),
                                rlimit=rl, method="z3 pointwise").obligation)
    obligations += sum_step("K3 sum step", "summing p - rho m (m = min(q, p/rho)): sum_x (p - rho m) = "
                            "1 - rho beta; from m >= 0 and p - m >= 0 (K2): m <= beta and p - m <= 1 - beta, "
                            "so beta = 1 forces m = p", "K2", monotone=True, rlimit=rl)
    s = sympy.Symbol("N", positive=True)
    obligations.append(Obligation("K3 residual mass", "sum_x residual = (1 - beta rho)/(1-beta)^k = 1 by the "
                                  "equation (algebra: 1 - (1 - N) = N, N = (1-beta)^k > 0)",
                                  Verdict.PROVED if sympy.simplify((1 - (1 - s)) / s - 1) == 0
                                  else Verdict.REFUTED, "sympy", 0.0, "N = (1-beta)^k > 0"))
    obligations += _spectr_every_k(rl)
    for kk in (2, 3, 4):
        gar = GenericCoordinateArith()
        rho_g = gar.real("rho")
        out, _ = spectr_law(gar, gar.p, gar.q, kk, rho_g)
        (big_beta, m), = gar.totals
        obligations.append(bounded(check_z3(
            f"K4 composition k={kk}", "output(x) = m(x) sum_{i<k}(1-beta)^i + (1-beta)^k residual(x) = p(x), sums "
            "abstracted: 0 <= m <= beta <= 1, m <= p (K2), and beta = 1 forces m = p (sum m = 1 = sum p)",
            gar, [gar.p >= 0, gar.p <= 1, gar.q >= 0, gar.q <= 1, rho_g >= 1, rho_g <= kk, m >= 0, m <= big_beta,
                  big_beta <= 1, m <= gar.p, z3.Implies(big_beta == 1, m == gar.p),
                  1 - (1 - big_beta) ** kk == rho_g * big_beta],
            out == gar.p, rlimit=rl, method="z3, sums abstracted").obligation))
        b1, bk = ar.real(f"beta_at_1_{kk}"), ar.real(f"beta_at_k_{kk}")
        obligations.append(bounded(check_z3(
            f"K5 rho exists k={kk}", "f(rho) = rho beta(rho) - 1 + (1-beta(rho))^k is continuous with f(1) <= 0 <= "
            "f(k) for beta in [0,1] (Bernoulli), so a root rho in [1, k] exists", ar,
            [b1 >= 0, b1 <= 1, bk >= 0, bk <= 1],
            z3.And(b1 - 1 + (1 - b1) ** kk <= 0, kk * bk - 1 + (1 - bk) ** kk >= 0), rlimit=rl,
            method="z3 pointwise").obligation))
    for n in (2, 3):
        dar = Z3Arith()
        pv, qv, r = dar.vector("p", n), dar.vector("q", n), dar.real("rho")
        out, _ = spectr_law(dar, pv, qv, 2, r)
        b = dar.total(dar.minimum(qv, dar.div(pv, r)))
        obligations.append(bounded(check_z3(f"K direct n={n}, k=2", "output == p for every rho in [1, 2] "
                                            "solving the equation", dar,
                                            [dar.simplex(pv), dar.simplex(qv), r >= 1, r <= 2,
                                             1 - (1 - b) ** 2 == r * b],
                                            dar.all_of(o == x for o, x in zip(out, pv)), rlimit=rl,
                                            method="z3 direct").obligation))
    exact = ExactArith()

    def instances() -> tuple[bool, str]:
        count = 0
        for n, den in ((2, 6), (3, 5)):
            for p_law in simplex_grid(n, den):
                for rho_v in (Fraction(11, 10), Fraction(3, 2), Fraction(9, 5)):
                    q_law = spectr_instance(p_law, rho_v, min(range(n), key=lambda x: p_law[x]))
                    if q_law is None:
                        continue
                    count += 1
                    out, residual = spectr_law(exact, p_law, q_law, 2, rho_v)
                    if out != p_law or min(residual) < 0:
                        return False, f"p={p_law}, q={q_law}, rho={rho_v}"
        return count > 0, f"{count} rational instances (rho in {{11/10, 3/2, 9/5}}, k = 2)"

    obligations.append(_exact_obligation("K exact instances", "output == p and the residual is a law", instances))
    return _result("spectr-kseq", "exact", obligations, "sympy + z3 (sums abstracted); z3 direct; exact instances",
                   "all n, k (induction on k over spectr_round; composition k = 2..4 and direct n=2,3, "
                   "k=2 as cross-checks)", start, settings, every_n=True,
                   notes=("a root rho in [1, k] is shown to exist for k = 2..4 only (K5)",))


def _spectr_every_k(rl: int) -> list[Obligation]:
    """K6: by induction on the number of drafts j, over :func:`spectr_round` itself, ``beta reach =
    1 - none``, ``none >= 0``, ``none = 0 => beta = 1`` and ``beta = 1, j >= 1 => reach = 1, none = 0``.
    K7: with those facts and the sum facts (K2, K3), :func:`spectr_compose` outputs ``p`` and its
    residual is non-negative under the equation ``rho beta = 1 - none``, for every n and k >= 1."""
    ar = Z3Arith()
    beta, reach, none, j = ar.real("beta"), ar.real("reach"), ar.real("none"), z3.Int("j", ar.ctx)

    def invariant(b: Any, r: Any, nn: Any, count: Any) -> Any:
        return z3.And(b * r == 1 - nn, nn >= 0, z3.Implies(nn == 0, b == 1),
                      z3.Implies(z3.And(b == 1, count >= 1), z3.And(r == 1, nn == 0)))

    unit = [beta >= 0, beta <= 1]
    base = check_z3("base j=0", "", ar, unit, invariant(beta, ar.zero, ar.one, 0), rlimit=rl).obligation
    r1, n1 = spectr_round(ar, reach, none, ar.one - beta)
    step = check_z3("step j -> j+1", "", ar, unit + [j >= 0, invariant(beta, reach, none, j)],
                    invariant(beta, r1, n1, j + 1), rlimit=rl).obligation
    k6 = Obligation("K6 draft loop (every k)", "by induction on the drafts j (base and step checked on "
                    "spectr_round): beta reach = 1 - none, none >= 0, none = 0 => beta = 1, and beta = 1, j >= 1 => "
                    "reach = 1, none = 0", combine(o.verdict for o in (base, step)), "z3 induction on k",
                    base.seconds + step.seconds, f"base: {base.detail}; step: {step.detail}", Basis.MACHINE)
    gar = GenericCoordinateArith()
    p, q = gar.p, gar.q
    rho, g_reach, g_none = gar.real("rho"), gar.real("reach"), gar.real("none")
    m = gar.minimum(q, gar.div(p, rho))
    b = gar.total(m)
    out, residual = spectr_compose(gar, p, m, g_reach, g_none)
    facts = [p >= 0, p <= 1, q >= 0, q <= 1, rho >= 1, m >= 0, m <= p, b >= 0, b <= 1, m <= b,
             z3.Implies(b == 1, m == p), invariant(b, g_reach, g_none, 1)]
    k7 = check_z3("K7 composition (every n, k)", "spectr_compose outputs p(x), and its residual is >= 0 when "
                  "rho beta = 1 - none (the K-SEQ equation), given K6 (k >= 1), K2 (m <= p) and the K3 sum "
                  "step (0 <= m <= beta <= 1, beta = 1 => m = p)", gar, facts + [rho * b == 1 - g_none],
                  z3.And(out == p, residual >= 0), rlimit=rl, method="z3, sums abstracted").obligation
    return [k6, k7]


# -- sampler-match --------------------------------------------------------------------------------------

def prove_sampler_match(settings: Settings) -> ProofResult:
    """Sampler-match emits y ~ p whatever the draft: exact, every n."""
    from specproof.proofs.arith.sympy_backend import SympyArith

    start = time.perf_counter()
    gar = GenericCoordinateArith()
    accepted, corrected, out = sampler_match_law(gar, gar.p, gar.q)
    obligations = [check_z3("SM composition (every n)", "q p + p (sum q - q) = p with sum q = 1", gar,
                            [gar.p >= 0, gar.q >= 0], out == gar.p, rlimit=settings.rlimit,
                            method="z3, sums abstracted").obligation]
    sar = SympyArith()
    ps, qs = sympy.symbols("p_x q_x", real=True)
    _, _, sym_out = sampler_match_law(sar, (ps, 1 - ps), (qs, 1 - qs))
    obligations.append(bounded(prove_by_cases("SM (sympy, n=2)", "output = p", sym_out[0] - ps,
                                              [ps >= 0, qs >= 0])))
    for n in (2, 3, 4):
        dar = Z3Arith()
        p, q = dar.vector("p", n), dar.vector("q", n)
        _, _, o = sampler_match_law(dar, p, q)
        obligations.append(bounded(check_z3(f"SM direct n={n}", "output == p", dar,
                                            [dar.simplex(p), dar.simplex(q)],
                                            dar.all_of(a == b for a, b in zip(o, p)), rlimit=settings.rlimit,
                                            method="z3 direct").obligation))
    return _result("sampler-match", "exact", obligations, "z3 + sympy, sums abstracted; z3 direct", "all",
                   start, settings, notes=("acceptance rate sum_x p(x) q(x)",), every_n=True)


# -- processors on both sides ----------------------------------------------------------------------------

def prove_processor_both_sides(settings: Settings, processor: str) -> ProofResult:
    """Accept and correct with the processed pair (P(p), P(q)), drafts from P(q): output P(p)."""
    start = time.perf_counter()
    proc = PROCESSORS[processor]
    obligations = [_t3_premise(settings.rlimit)]
    obligations += _processor_is_a_law(processor, settings.rlimit)
    for n in (2, 3):
        dar = Z3Arith()
        v = dar.vector("v", n)
        pv = proc(dar, v)
        obligations.append(bounded(check_z3(f"P law n={n}", f"{processor} maps a law to a law (the kept "
                                            "argmax has positive mass, so the normaliser is positive)", dar,
                                            [dar.simplex(v)], dar.simplex(pv), rlimit=settings.rlimit,
                                            method="z3 direct").obligation))
    exact = ExactArith()

    def grid() -> tuple[bool, str]:
        count = 0
        for n, den in ((2, 6), (3, 4), (4, 3)):
            for p, q in itertools.product(simplex_grid(n, den), repeat=2):
                count += 1
                out, target = processed_law(exact, p, q, proc, "both-sides")
                if out != target:
                    return False, f"p={p}, q={q}"
        return True, f"{count} pairs, n <= 4"

    obligations.append(_exact_obligation("P exact grid", "output == P(p)", grid))
    return _result(f"processor-both-sides:{processor}", "exact", obligations,
                   "T3 on the processed pair; z3 direct; exact grid",
                   "all (T3; the processor maps laws to laws for every n); grid n <= 4", start, settings,
                   every_n=True)


def _processor_is_a_law(name: str, rlimit: int) -> list[Obligation]:
    """``P(v) = norm(kept(v))`` maps a law to a law, every n, on a generic coordinate of the processor
    itself (``S = sum_x kept(x)``): ``P(v)(x) = c kept(x) >= 0`` with ``c = 1/S`` (0 if ``S = 0``); by
    linearity ``sum_x P(v) = c S``; and ``S > 0``, so ``c S = 1``.  ``S > 0``: for temperature
    (``kept = v^2``) by the support fact, as ``v > 0 => v^2 > 0`` and ``sum v = 1``; for top-k / top-p the
    argmax ``x*`` (rank 0, nothing ahead: ``mass_ahead(v, w)(x*) = 0``) is kept with ``v(x*) > 0``,
    so ``S >= kept(x*) > 0`` by monotonicity."""
    gar = GenericCoordinateArith(ranks=True)
    v = gar.p
    out = PROCESSORS[name](gar, v)
    (big_s, kept), = gar.totals
    c = z3.If(big_s == 0, gar.const(0), 1 / big_s)
    domain = [v >= 0, v <= 1, big_s >= 0]
    obligations = [check_z3("P pointwise", f"{name}: P(v)(x) = c kept(x), kept(x) >= 0, c = 1/S (0 if S = 0), "
                            "S = sum_y kept(y) >= 0, on the processor itself", gar, domain,
                            z3.And(out == c * kept, kept >= 0, out >= 0), rlimit=rlimit,
                            method="z3 pointwise").obligation]
    obligations += sum_step("P sum step", "sum_x P(v)(x) = c S; 0 <= kept(x) <= S", "P pointwise", terms=1,
                            monotone=True, rlimit=rlimit)
    if gar.ranks:
        obligations.append(ranking_order(rlimit))
        obligations.append(assumption(
            "P argmax", "the ranking being a strict total order (checked), one token x* has rank 0 and nothing "
            "ranks ahead of it, so mass_ahead(v, w)(x*) = 0 for every weight w; v(x*) >= v(y) for every y, so "
            "v(x*) > 0 when sum v = 1", "order theory: a finite strict total order has exactly one maximum"))
        at_top = [ahead == 0 for ahead, _, _ in gar.ranks] + [v > 0, v <= 1]
        obligations.append(check_z3("P keeps the argmax", f"{name} keeps x*: kept(x*) = v(x*) > 0", gar, at_top,
                                    z3.And(kept == v, kept > 0), rlimit=rlimit, method="z3 pointwise").obligation)
    else:
        obligations.append(check_z3("P support", "kept(x) >= 0 and v(x) > 0 => kept(x) > 0", gar, [v >= 0],
                                    z3.And(kept >= 0, z3.Implies(v > 0, kept > 0)), rlimit=rlimit,
                                    method="z3 pointwise").obligation)
        sup = support(rlimit=rlimit)
        obligations.append(Obligation("P sum step (support)", f"sum v = 1 > 0 => S > 0, by: {sup.statement}",
                                      sup.verdict, sup.method, sup.seconds, sup.detail, Basis.MACHINE))
    obligations.append(check_z3("P law (every n)", "c S = 1 given S > 0: P(v) sums to 1", gar, [big_s > 0],
                                c * big_s == 1, rlimit=rlimit, method="z3, sums abstracted").obligation)
    return obligations
