(* Recursive rejection sampling without replacement (SpecInfer; EAGLE-style multi-draft), k drafts.

   Level i has a target r_i (r_1 = p) and a draft law q_i (q_1 = q): a draft x ~ q_i is accepted with
   probability min(1, r_i(x)/q_i(x)); on rejection the next level has target r_{i+1} = norm(max(0, r_i - q_i))
   and draft law q_{i+1} = norm(q_i with x zeroed) (drawn without replacement); a draft law with no mass
   left drafts nothing (the level then samples r_i), and after k levels r_{k+1} is sampled.  The same
   definition as specproof.proofs.laws.multidraft.recursive_rejection_law (replacement=False). *)
From mathcomp Require Import all_ssreflect all_algebra.
From Specproof Require Import Step.
Import GRing.Theory Num.Theory Order.Theory.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Open Scope ring_scope.

Section Recursive.
Variable R : realFieldType.
Variable n : nat.
Notation law := ('I_n -> R).

Definition normalise (v : law) : law := fun x => safe_div (v x) (total v).
Definition zero_at (v : law) (x0 : 'I_n) : law := fun x => if x == x0 then 0 else v x.

Fixpoint rrs (k : nat) (r q : law) : law :=
  if k is k'.+1 then fun y =>
    q y * acceptance r q y + (1 - total q) * r y
    + total (fun x => q x * (1 - acceptance r q x)
                      * rrs k' (normalise (residual_weight r q)) (normalise (zero_at q x)) y)
  else r.

(* a draft law of a level: a distribution, or no mass left *)
Definition draft_law (q : law) := (forall x, 0 <= q x) /\ (total q = 1 \/ total q = 0).

Lemma total_ge0 (v : law) : (forall x, 0 <= v x) -> 0 <= total v.
Proof. by move=> h; rewrite totalE sumr_ge0. Qed.

Lemma total_eq0 (v : law) : (forall x, 0 <= v x) -> total v = 0 -> forall x, v x = 0.
Proof.
move=> h; rewrite totalE => /eqP; rewrite psumr_eq0 // => /allP hv x.
exact/eqP/(hv x (mem_index_enum x)).
Qed.

Lemma normalise_ge0 (v : law) : (forall x, 0 <= v x) -> forall x, 0 <= normalise v x.
Proof.
move=> h x; rewrite /normalise /safe_div; case: eqP => // _.
by rewrite divr_ge0 // total_ge0.
Qed.

Lemma total_normalise (v : law) : total v != 0 -> total (normalise v) = 1.
Proof.
move=> h; rewrite /normalise /safe_div (negbTE h) !totalE -mulr_suml -totalE divff //.
Qed.

Lemma normalise_draft_law (v : law) : (forall x, 0 <= v x) -> draft_law (normalise v).
Proof.
move=> h; split; first exact: normalise_ge0.
have [v0|v0] := eqVneq (total v) 0; last by left; apply: total_normalise.
right; rewrite totalE big1 // => x _; rewrite /normalise /safe_div v0 eqxx //.
Qed.

(* Recursive rejection sampling without replacement outputs the target, for every k and n. *)
Theorem rrs_without_replacement_exact k (r q : law) :
  is_dist r -> draft_law q -> forall y, rrs k r q y = r y.
Proof.
elim: k r q => [//|k IH] r q hr [q0 [q1|qz]] y /=; last first.
  have qy := total_eq0 q0 qz.
  rewrite qz subr0 mul1r qy mul0r add0r totalE big1 ?addr0 // => x _; by rewrite qy !mul0r.
have hq : is_dist q by [].
case: (hr) => r0 r1.
have [Z0|Z0] := eqVneq (total (residual_weight r q)) 0.
  have rq := empty_residual_means_equal hr hq Z0.
  rewrite q1 subrr mul0r addr0 totalE big1 ?addr0.
    by rewrite accepted_mass_min // rq; apply/min_idPl.
  by move=> x _; rewrite mulrBr mulr1 accepted_mass_min // rq minxx subrr !mul0r.
have next : is_dist (normalise (residual_weight r q)).
  by split; [apply: normalise_ge0 => x; apply: residual_weight_ge0 | apply: total_normalise].
have drafts x : draft_law (normalise (zero_at q x)).
  by apply: normalise_draft_law => z; rewrite /zero_at; case: eqP.
rewrite q1 subrr mul0r addr0.
rewrite (_ : total _ = rejection (acceptance r q) q * normalise (residual_weight r q) y).
  by have := T3_step_exact hr hq y; rewrite /canonical_output /step_output.
by rewrite /rejection !totalE mulr_suml; apply: eq_bigr => x _; rewrite IH.
Qed.

End Recursive.
