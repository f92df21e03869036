(* T5: one K-draft round of speculative sampling, continued by the target, has the target's law.

   The round is the program the runtimes run, as its tree of random choices (the same walk as
   specproof.proofs.laws.sequences.round_law): after the accepted prefix [pre], a draft x is drawn
   from q(. | pre) and accepted with probability min(1, p(x|pre)/q(x|pre)); an accepted draft is emitted
   and the next draft is verified; a rejection emits a correction token from norm(max(0, p - q)) at that
   position and ends the round; when all K drafts pass, a bonus token is drawn from p(. | x_1..x_K).
   Both the target p and the draft q depend on the whole prefix. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Specproof Require Import Step.
Import GRing.Theory Num.Theory Order.Theory.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Open Scope ring_scope.

Section Round.
Variable R : realFieldType.
Variable n : nat.
Variables p q : seq 'I_n -> 'I_n -> R.  (* target and draft conditionals after each prefix *)

(* the target's law of the continuation s after the prefix pre: prod_i p(s_i | pre, s_<i) *)
Fixpoint target_law (pre s : seq 'I_n) : R :=
  if s is y :: s' then p pre y * target_law (rcons pre y) s' else 1.

(* the law of the tokens one round emits (accepted drafts, then the correction or the bonus token),
   with k drafts left after the prefix pre; s is the emitted sequence *)
Fixpoint round_law (k : nat) (pre s : seq 'I_n) : R :=
  match k, s with
  | 0, [:: y] => p pre y                                              (* bonus token *)
  | k'.+1, y :: s' =>
      q pre y * acceptance (p pre) (q pre) y * round_law k' (rcons pre y) s'   (* y drafted, accepted *)
      + (if s' is [::] then rejection (acceptance (p pre) (q pre)) (q pre)       (* a draft rejected, *)
            * safe_div (residual_weight (p pre) (q pre) y)                       (* correction y      *)
                       (total (residual_weight (p pre) (q pre)))
         else 0)
  | _, _ => 0
  end.

(* one round, then the target samples until the horizon |s|: sum over the emitted prefix s_<=j *)
Definition continued_law (k : nat) (pre s : seq 'I_n) : R :=
  total (fun j : 'I_(size s).+1 => round_law k pre (take j s) * target_law (pre ++ take j s) (drop j s)).

Hypothesis hp : forall pre, is_dist (p pre).
Hypothesis hq : forall pre, is_dist (q pre).

Lemma round_law_nil k pre : round_law k pre [::] = 0.
Proof. by case: k. Qed.

Lemma continued_law_cons k pre y s :
  continued_law k pre (y :: s) =
    \sum_(i < (size s).+1) round_law k pre (y :: take i s) * target_law (rcons pre y ++ take i s) (drop i s).
Proof.
by rewrite /continued_law totalE [LHS]big_ord_recl /= round_law_nil mul0r add0r; apply: eq_bigr => i _; rewrite cat_rcons.
Qed.

(* the terms whose emitted sequence is longer than one token, for a law that needs exactly one *)
Lemma only_first_term (f : seq 'I_n -> R) (g : nat -> R) s :
  (forall z t, f (z :: t) = 0) ->
  \sum_(i < (size s).+1) f (take i s) * g i = f [::] * g 0%N.
Proof.
move=> f0; rewrite big_ord_recl take0 big1 ?addr0 // => i _.
by case: s i => [[]//|z s] i; rewrite f0 mul0r.
Qed.

(* T5: for every K, the law of one K-draft round continued by the target is the target's law, at
   every horizon of at least K+1 tokens. *)
Theorem T5_round_exact k pre s : (size s > k)%N -> continued_law k pre s = target_law pre s.
Proof.
elim: k pre s => [|k IH] pre [|y s] //= hs; rewrite continued_law_cons.
  rewrite (@only_first_term (fun t => round_law 0 pre (y :: t))
             (fun i => target_law (rcons pre y ++ take i s) (drop i s))) //=.
  by rewrite take0 cats0 drop0.
rewrite [X in X = _](_ : _ = q pre y * acceptance (p pre) (q pre) y * continued_law k (rcons pre y) s
    + \sum_(i < (size s).+1) (if take i s is [::] then rejection (acceptance (p pre) (q pre)) (q pre)
        * safe_div (residual_weight (p pre) (q pre) y) (total (residual_weight (p pre) (q pre))) else 0)
        * target_law (rcons pre y ++ take i s) (drop i s)); last first.
  rewrite /continued_law totalE big_distrr -big_split /=; apply: eq_bigr => i _.
  by rewrite mulrDl mulrA.
rewrite (@only_first_term (fun t => if t is [::] then _ else 0)
           (fun i => target_law (rcons pre y ++ take i s) (drop i s))) //=.
rewrite take0 cats0 drop0 IH // -mulrDl.
by have := T3_step_exact (hp pre) (hq pre) y; rewrite /canonical_output /step_output => ->.
Qed.

(* The same at the horizon K+1 of specproof.proofs.laws.sequences.continued_law. *)
Corollary T5_round_exact_horizon k pre s : size s = k.+1 -> continued_law k pre s = target_law pre s.
Proof. by move=> hs; apply: T5_round_exact; rewrite hs. Qed.

End Round.
