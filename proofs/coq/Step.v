(* One verification step of speculative sampling, over any real field R and the vocabulary 'I_n.

   The composition is the one of specproof.proofs.laws.step_rules.step_law: for an acceptance A and a
   residual weight w,
     output(x) = q(x) A(x) + rejection * w(x) / sum w      (w / sum w := 0 when sum w = 0)
   with rejection = sum_x q(x) (1 - A(x)), the probability that the drafted token is rejected.
   The canonical rule has A = min(1, p/q) (0 where q = 0) and w = max(0, p - q).

   Theorems: T1 (pointwise split), T3 (the canonical step's output law is p, every n, edge cases
   q(x) = 0, p = q and an empty residual included) and greedy verification's contract. *)
From mathcomp Require Import all_ssreflect all_algebra.
Import GRing.Theory Num.Theory Order.Theory.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Open Scope ring_scope.

(* The ordinals of 'I_n built without [insub], so that vm_compute evaluates sums on instances. *)
Fixpoint ords (n : nat) : seq 'I_n :=
  if n is m.+1 then ord0 :: map (lift ord0) (ords m) else [::].

Lemma ordsE n : ords n = enum 'I_n.
Proof.
apply: (inj_map val_inj); rewrite val_enum_ord.
elim: n => //= m IH; rewrite -map_comp.
by rewrite (eq_map (f2 := succn \o val)) // map_comp IH -(iotaDl 1) add1n.
Qed.

Section Step.
Variable R : realFieldType.
Variable n : nat.
Notation law := ('I_n -> R).

Definition total (v : law) : R := foldr (fun i acc => v i + acc) 0 (ords n).

Lemma totalE v : total v = \sum_i v i.
Proof. by rewrite /total ordsE -big_enum /= unlock. Qed.

Definition is_dist (v : law) := (forall x, 0 <= v x) /\ total v = 1.

Definition safe_div (a b : R) : R := if b == 0 then 0 else a / b.

(* -- the step composition, for any acceptance and residual weight --------------------------------- *)
Definition rejection (A : law) (q : law) : R := total (fun x => q x * (1 - A x)).

Definition step_output (A w : law) (q : law) (x : 'I_n) : R :=
  q x * A x + rejection A q * safe_div (w x) (total w).

(* -- the canonical rule ------------------------------------------------------------------------- *)
Definition acceptance (p q : law) (x : 'I_n) : R := Num.min 1 (safe_div (p x) (q x)).
Definition residual_weight (p q : law) (x : 'I_n) : R := Num.max 0 (p x - q x).
Definition canonical_output (p q : law) : law :=
  step_output (acceptance p q) (residual_weight p q) q.

(* T1: min(p, q) + max(0, p - q) = p, for all p, q in R. *)
Theorem T1_pointwise_split (a b : R) : Num.min a b + Num.max 0 (a - b) = a.
Proof.
case: (lerP a b) => hab.
  by rewrite (_ : Num.max 0 (a - b) = 0) ?addr0 //; apply/max_idPl; rewrite subr_le0.
rewrite (_ : Num.max 0 (a - b) = a - b); last by apply/max_idPr; rewrite subr_ge0 ltW.
by rewrite addrC subrK.
Qed.

Lemma accepted_mass_min p q x : 0 <= p x -> 0 <= q x ->
  q x * acceptance p q x = Num.min (p x) (q x).
Proof.
move=> hp hq; rewrite /acceptance /safe_div.
have [->|q0] := eqVneq (q x) 0; first by rewrite mul0r; apply/esym/min_idPr.
have qpos : 0 < q x by rewrite lt_def q0.
by rewrite minr_pmulr // mulr1 mulrCA divff // mulr1 minC.
Qed.

Lemma acceptance_q0 p q x : q x = 0 -> acceptance p q x = 0.
Proof. by move=> h; rewrite /acceptance /safe_div h eqxx; apply/min_idPr; rewrite ler01. Qed.

Lemma residual_weight_ge0 p q x : 0 <= residual_weight p q x.
Proof. by rewrite le_maxr lexx. Qed.

Section Dists.
Variables p q : law.
Hypotheses (hp : is_dist p) (hq : is_dist q).

Lemma rejection_is_residual_mass :
  rejection (acceptance p q) q = total (residual_weight p q).
Proof.
case: hp => p0 p1; case: hq => q0 q1.
have E : forall x, q x * (1 - acceptance p q x) = q x - Num.min (p x) (q x).
  by move=> x; rewrite mulrBr mulr1 accepted_mass_min.
rewrite /rejection !totalE (eq_bigr _ (fun x _ => E x)) sumrB -(totalE q) q1.
have : \sum_x p x = \sum_x Num.min (p x) (q x) + \sum_x residual_weight p q x.
  by rewrite -big_split /=; apply: eq_bigr => x _; rewrite T1_pointwise_split.
by rewrite -(totalE p) p1 => ->; rewrite addrC addKr.
Qed.

(* An empty residual (sum_x max(0, p - q) = 0) means p = q. *)
Lemma empty_residual_means_equal : total (residual_weight p q) = 0 -> forall x, p x = q x.
Proof.
case: hp => p0 p1; case: hq => q0 q1.
rewrite totalE => /eqP; rewrite psumr_eq0 => [/allP h x|x _]; last exact: residual_weight_ge0.
have /eqP := h x (mem_index_enum x); rewrite /residual_weight => /max_idPl; rewrite subr_le0 => pq.
have : \sum_y (q y - p y) = 0 by rewrite sumrB -!totalE p1 q1 subrr.
move/eqP; rewrite psumr_eq0 => [/allP/(_ x (mem_index_enum x))|y _].
  by rewrite subr_eq0 => /eqP.
have /eqP := h y (mem_index_enum y); rewrite /residual_weight => /max_idPl.
by rewrite subr_le0 subr_ge0.
Qed.

(* T3: the canonical step's output law is p. *)
Theorem T3_step_exact x : canonical_output p q x = p x.
Proof.
case: (hp) => p0 _; case: (hq) => q0 _.
rewrite /canonical_output /step_output accepted_mass_min // rejection_is_residual_mass /safe_div.
have [Z0|Z0] := eqVneq (total (residual_weight p q)) 0.
  rewrite Z0 mul0r addr0 (empty_residual_means_equal Z0 x); exact/min_idPl.
by rewrite mulrCA divff // mulr1 T1_pointwise_split.
Qed.

(* Edge cases, each an instance of T3 with the quantity the runtimes special-case. *)
Corollary T3_unproposed_token x : q x = 0 ->
  acceptance p q x = 0 /\ canonical_output p q x = p x.
Proof. by move=> h; split; [exact: acceptance_q0 | exact: T3_step_exact]. Qed.

Corollary T3_empty_residual : total (residual_weight p q) = 0 ->
  rejection (acceptance p q) q = 0 /\ forall x, canonical_output p q x = p x.
Proof. by move=> h; split; [rewrite rejection_is_residual_mass | exact: T3_step_exact]. Qed.

End Dists.

Corollary T3_equal_laws p : is_dist p ->
  total (residual_weight p p) = 0 /\ forall x, canonical_output p p x = p x.
Proof.
move=> hp; split; last exact: T3_step_exact.
rewrite totalE big1 // => x _; rewrite /residual_weight subrr; exact/max_idPl.
Qed.

(* -- greedy verification ------------------------------------------------------------------------- *)
(* x is the target's argmax, ties to the lower index (Python: mass_ahead(p, 1)(x) = 0). *)
Definition is_argmax (p : law) (x : 'I_n) : bool :=
  all (fun y => (p y < p x) || ((p y == p x) && (x <= y)%N)) (ords n).
Definition greedy_indicator (p : law) (x : 'I_n) : R := if is_argmax p x then 1 else 0.
(* accept iff the draft is the argmax, correct with the argmax *)
Definition greedy_output (p q : law) : law :=
  step_output (greedy_indicator p) (greedy_indicator p) q.

Lemma is_argmaxP (p : law) (x : 'I_n) : reflect (forall y, (p y < p x) || ((p y == p x) && (x <= y)%N)) (is_argmax p x).
Proof.
rewrite /is_argmax ordsE; apply: (iffP allP) => h y; first exact: h (mem_enum _ y).
by move=> _; apply: h.
Qed.

Lemma argmax_unique (p : law) (x y : 'I_n) : is_argmax p x -> is_argmax p y -> x = y.
Proof.
move=> /is_argmaxP hx /is_argmaxP hy; apply/val_inj/eqP; rewrite eqn_leq.
have := hy x; have := hx y.
by case: (ltrgtP (p x) (p y)) => _ /= h1 h2; rewrite ?h1 ?h2.
Qed.

Lemma argmax_exists (p : law) : (0 < n)%N -> exists x, is_argmax p x.
Proof.
move=> n0.
(* a maximiser of p over the list of all tokens, then the lowest index among the maximisers *)
have [x xmax] : exists x, forall y, y \in enum 'I_n -> p y <= p x.
  elim: (enum 'I_n) => [|a s [z zmax]]; first by exists (Ordinal n0).
  case: (lerP (p a) (p z)) => h.
    by exists z => y; rewrite inE => /orP[/eqP ->|/zmax].
  by exists a => y; rewrite inE => /orP[/eqP ->|/zmax hy] //; exact: le_trans hy (ltW h).
pose P := fun k => [exists y : 'I_n, (val y == k) && (p y == p x)].
have Px : exists k, P k by exists (val x); apply/existsP; exists x; rewrite !eqxx.
case: (ex_minnP Px) => k /existsP[y /andP[/eqP yk /eqP ypx]] kmin.
exists y; apply/is_argmaxP => z.
have zle : p z <= p y by rewrite ypx; apply: xmax; rewrite mem_enum.
rewrite lt_neqAle zle andbT; case: eqP => //= pz; rewrite yk; apply: kmin.
by apply/existsP; exists z; rewrite eqxx -ypx pz eqxx.
Qed.

Section Greedy.
Variables p q : law.
Hypotheses (hp : is_dist p) (hq : is_dist q).

Lemma dist_nonempty (v : law) : is_dist v -> (0 < n)%N.
Proof.
case=> _; rewrite /total ordsE lt0n => h; apply/negP => /eqP n0; move: h.
have -> : enum 'I_n = [::] by apply/size0nil; rewrite size_enum_ord.
by move=> /= /eqP; rewrite eq_sym oner_eq0.
Qed.

Lemma total_indicator a : is_argmax p a -> total (greedy_indicator p) = 1.
Proof.
move=> ha; rewrite totalE (bigD1 a) //= big1 ?addr0 /greedy_indicator ?ha // => y ya.
by case: ifP => // hy; case/eqP: ya; apply: argmax_unique hy ha.
Qed.

(* Greedy verification emits the target's argmax (ties to the lower index) whatever the draft law:
   its output is the point mass at argmax p. *)
Theorem greedy_emits_argmax x : greedy_output p q x = greedy_indicator p x.
Proof.
have [a ha] := argmax_exists p (dist_nonempty hp).
case: hq => q0 q1.
rewrite /greedy_output /step_output (total_indicator ha) /safe_div oner_eq0 divr1 /rejection.
have E : forall y, q y * (1 - greedy_indicator p y) = q y - q y * greedy_indicator p y.
  by move=> y; rewrite mulrBr mulr1.
rewrite totalE (eq_bigr _ (fun y _ => E y)) sumrB -(totalE q) q1 (bigD1 a) //= big1 ?addr0.
  rewrite /greedy_indicator ha mulr1; case: ifP => hx; last by rewrite !mulr0 addr0.
  by rewrite (argmax_unique hx ha) !mulr1 addrC subrK.
by move=> y ya; rewrite /greedy_indicator; case: ifP => [hy|]; [case/eqP: ya; apply: argmax_unique hy ha|rewrite mulr0].
Qed.

(* ... so greedy verification samples p only when p is a point mass: it is not a sampler of p. *)
Theorem greedy_not_a_sampler : (forall x, greedy_output p q x = p x) -> exists a, p a = 1.
Proof.
move=> h; have [a ha] := argmax_exists p (dist_nonempty hp).
by exists a; rewrite -h greedy_emits_argmax /greedy_indicator ha.
Qed.

End Greedy.
End Step.
