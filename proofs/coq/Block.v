(* Block verification (Sun et al. 2024, "Block Verification Accelerates Speculative Decoding"): one round
   with K drafts, continued by the target, has the target's law, for every n and K.

   The round is the program, as specproof.proofs.laws.block.block_round_law runs it: every drafted path
   x_1..x_K (x_i ~ q(. | x_<i)) is enumerated; along it
     w_0 = 1,  w_i = min(1, w_{i-1} p_i(x_i) / q_i(x_i))          (0 where q_i(x_i) = 0),
     Z_i = sum_y max(0, w_i p_{i+1}(y) - q_{i+1}(y)),
     h_0 = 1,  h_i = Z_i / (Z_i + 1 - w_i) for 0 < i < K (1 when the denominator is 0),  h_K = w_K;
   tau = max {i : eta_i <= h_i} has P(tau = i | path) = h_i prod_{j > i} (1 - h_j); the round emits
   x_1..x_tau and then a token y from p(. | x_1..x_K) when tau = K, else from
   norm(max(0, w_tau p_{tau+1} - q_{tau+1})).  Both p and q depend on the whole prefix.

   The proof (the paper's backward and forward inductions, checked here for every K):
   - backward: D_i = E[prod_{j > i} (1 - h_j) | x_1..x_i] satisfies (1 - h_i) D_i = 1 - w_i, hence
     h_i D_i = Z_i: the mass of stopping at a node is its residual mass (block_stop_mass);
   - forward: from a node of weight w, the emission continued by the target has law w p(s | pre)
     (block_node_continued), by T1 on max(0, w p - q) + min(q, w p) = w p. *)
From mathcomp Require Import all_ssreflect all_algebra.
From Specproof Require Import Step Round Recursive.
Import GRing.Theory Num.Theory Order.Theory.
Set Implicit Arguments. Unset Strict Implicit. Unset Printing Implicit Defensive.
Open Scope ring_scope.

Section Block.
Variable R : realFieldType.
Variable n : nat.
Variables p q : seq 'I_n -> 'I_n -> R.  (* target and draft conditionals after each prefix *)

(* finite sums and products over a list, by foldr (so that vm_compute evaluates them) *)
Definition sumseq (T : Type) (f : T -> R) (xs : seq T) : R := foldr (fun a acc => f a + acc) 0 xs.
Definition prodseq (T : Type) (f : T -> R) (xs : seq T) : R := foldr (fun a acc => f a * acc) 1 xs.

(* every drafted path of length k *)
Fixpoint paths (k : nat) : seq (seq 'I_n) :=
  if k is k'.+1 then flatten [seq [seq x :: t | t <- paths k'] | x <- ords n] else [:: [::]].

(* the quantities of one node: prefix pre (the drafts so far) and weight w *)
Definition block_weight (pre : seq 'I_n) (w : R) (x : 'I_n) : R :=
  Num.min 1 (w * safe_div (p pre x) (q pre x)).
Definition block_residual (pre : seq 'I_n) (w : R) (y : 'I_n) : R := Num.max 0 (w * p pre y - q pre y).
Definition block_stop (pre : seq 'I_n) (w : R) : R :=
  let z := total (block_residual pre w) in if z + 1 - w == 0 then 1 else z / (z + 1 - w).

(* along a path t drafted after the node (pre, w): the stop probabilities h of the nodes below it *)
Fixpoint stops (pre : seq 'I_n) (w : R) (t : seq 'I_n) : seq R :=
  if t is x :: t' then
    (if t' is [::] then block_weight pre w x else block_stop (rcons pre x) (block_weight pre w x))
      :: stops (rcons pre x) (block_weight pre w x) t'
  else [::].

(* ... and the law of the token emitted when tau stops at each node of the path (this one first) *)
Fixpoint tokens (pre : seq 'I_n) (w : R) (t : seq 'I_n) : seq ('I_n -> R) :=
  if t is x :: t' then normalise (block_residual pre w) :: tokens (rcons pre x) (block_weight pre w x) t'
  else [:: p pre].

(* P(tau = i | path) = h_i prod_{j > i} (1 - h_j), hs = h_0 :: h_1 .. h_K *)
Definition stop_prob (hs : seq R) (i : nat) : R := nth 0 hs i * prodseq (fun h => 1 - h) (drop i.+1 hs).

(* the mass that a path t drafted after (pre, w), stopping at tau, gives to the emission e ++ [:: y] *)
Definition path_term (pre : seq 'I_n) (w h : R) (e : seq 'I_n) (y : 'I_n) (t : seq 'I_n) (tau : nat) : R :=
  if take tau t == e then
    target_law q pre t * stop_prob (h :: stops pre w t) tau * nth (fun _ => 0) (tokens pre w t) tau y
  else 0.

(* the emission law of the k drafts after the node (pre, w) whose own stop probability is h *)
Definition block_node_law (k : nat) (pre : seq 'I_n) (w h : R) (e : seq 'I_n) (y : 'I_n) : R :=
  sumseq (fun t => sumseq (path_term pre w h e y t) (iota 0 k.+1)) (paths k).

(* one block round with K = k drafts: the probability that it emits e ++ [:: y] *)
Definition block_round_law (k : nat) (e : seq 'I_n) (y : 'I_n) : R := block_node_law k [::] 1 1 e y.

(* the emission from a node, then the target until the horizon |s| *)
Definition block_node_continued (k : nat) (pre : seq 'I_n) (w h : R) (s : seq 'I_n) : R :=
  sumseq (fun j => if drop j s is y :: rest then
                     block_node_law k pre w h (take j s) y * target_law p (pre ++ rcons (take j s) y) rest
                   else 0) (iota 0 (size s)).

(* one block round, then the target until the horizon |s|: the sum over the emitted prefix s_<=j *)
Definition block_continued_law (k : nat) (s : seq 'I_n) : R :=
  sumseq (fun j => if drop j s is y :: rest then
                     block_round_law k (take j s) y * target_law p (rcons (take j s) y) rest
                   else 0) (iota 0 (size s)).

(* -- the proof ------------------------------------------------------------------------------------ *)

(* the stop probability of a node with k drafts below it, and the law of the token it emits *)
Definition node_stop (k : nat) (pre : seq 'I_n) (w : R) : R := if k is 0 then w else block_stop pre w.
Definition node_token (k : nat) (pre : seq 'I_n) (w : R) : 'I_n -> R :=
  if k is 0 then p pre else normalise (block_residual pre w).
(* D = E[prod_{j > i} (1 - h_j) | x_1..x_i]: no node below this one stops *)
Definition no_later_stop (k : nat) (pre : seq 'I_n) (w : R) : R :=
  sumseq (fun t => target_law q pre t * prodseq (fun h => 1 - h) (stops pre w t)) (paths k).

Lemma sumseqE (T : Type) (f : T -> R) xs : sumseq f xs = \sum_(a <- xs) f a.
Proof. by elim: xs => [|a xs IH]; rewrite ?big_nil ?big_cons //= IH. Qed.

Lemma eq_sumseq_in (T : eqType) (f g : T -> R) xs : {in xs, f =1 g} -> sumseq f xs = sumseq g xs.
Proof.
elim: xs => [|a xs IH] h //=; rewrite h ?mem_head // IH // => b bx.
by apply: h; rewrite inE bx orbT.
Qed.

Lemma sumseq_map (T U : Type) (f : U -> R) (g : T -> U) xs : sumseq f (map g xs) = sumseq (f \o g) xs.
Proof. by rewrite !sumseqE big_map. Qed.

Lemma sumseq_mull (T : Type) (f : T -> R) c xs : sumseq (fun a => c * f a) xs = c * sumseq f xs.
Proof. by rewrite !sumseqE big_distrr. Qed.

Lemma sumseq0 (T : Type) (f : T -> R) xs : (forall a, f a = 0) -> sumseq f xs = 0.
Proof. by move=> h; rewrite sumseqE big1. Qed.

Lemma eq_total (f g : 'I_n -> R) : f =1 g -> total f = total g.
Proof. by move=> h; rewrite !totalE; apply: eq_bigr => x _. Qed.

Lemma sum_paths (f : seq 'I_n -> R) k :
  sumseq f (paths k.+1) = total (fun x => sumseq (fun t => f (x :: t)) (paths k)).
Proof.
rewrite /= sumseqE big_flatten /= /total big_map; elim: (ords n) => [|x xs IH]; rewrite ?big_nil ?big_cons //=.
by rewrite IH big_map sumseqE.
Qed.

Lemma size_paths k t : t \in paths k -> size t = k.
Proof.
elim: k t => [|k IH] t /=; first by rewrite inE => /eqP ->.
by case/flattenP => ts /mapP[x _ ->] /mapP[t' /IH <- ->].
Qed.

Lemma stops_cons k pre w x t : size t = k ->
  stops pre w (x :: t) = node_stop k (rcons pre x) (block_weight pre w x)
                           :: stops (rcons pre x) (block_weight pre w x) t.
Proof. by case: t => [|z t] <-. Qed.

Lemma tokens_head k pre w t : size t = k -> nth (fun _ => 0) (tokens pre w t) 0%N = node_token k pre w.
Proof. by case: t => [|x t] <-. Qed.

Lemma node_law_nil k pre w h y :
  block_node_law k pre w h [::] y = h * no_later_stop k pre w * node_token k pre w y.
Proof.
rewrite /block_node_law /no_later_stop mulrAC -sumseq_mull; apply: eq_sumseq_in => t /size_paths tk.
rewrite sumseqE /= big_cons big_seq big1 ?addr0; last first.
  move=> tau; rewrite mem_iota add1n ltnS => /andP[t1 tk']; rewrite /path_term.
  by rewrite -size_eq0 size_takel ?tk // eqn0Ngt t1.
by rewrite /path_term take0 eqxx /stop_prob /= drop0 (tokens_head _ _ tk) mulrCA mulrAC.
Qed.

Lemma sumseq_cons (T : Type) (f : T -> R) a xs : sumseq f (a :: xs) = f a + sumseq f xs.
Proof. by []. Qed.

Lemma iota0S m : iota 0 m.+1 = 0%N :: map succn (iota 0 m).
Proof. by rewrite -[RHS]/(0%N :: map (addn 1) (iota 0 m)) -iotaDl. Qed.

Lemma path_sum_cons k pre w h x0 x e y t : size t = k ->
  sumseq (path_term pre w h (x :: e) y (x0 :: t)) (iota 0 k.+2) =
    if x0 == x then q pre x * sumseq (path_term (rcons pre x) (block_weight pre w x)
                                       (node_stop k (rcons pre x) (block_weight pre w x)) e y t) (iota 0 k.+1)
    else 0.
Proof.
move=> tk; rewrite iota0S sumseq_cons sumseq_map {1}/path_term take0 add0r.
case: eqP => [->|nx]; last first.
  by apply: sumseq0 => tau; rewrite /path_term /= eqseq_cons; case: eqP.
rewrite -sumseq_mull; apply: eq_sumseq_in => tau _.
rewrite /path_term (stops_cons _ _ _ tk) /= eqseq_cons eqxx /=; case: ifP => _; last by rewrite mulr0.
by rewrite /stop_prob /= -!mulrA.
Qed.

Lemma node_law_cons k pre w h x e y :
  block_node_law k.+1 pre w h (x :: e) y =
    q pre x * block_node_law k (rcons pre x) (block_weight pre w x)
                              (node_stop k (rcons pre x) (block_weight pre w x)) e y.
Proof.
rewrite /block_node_law sum_paths.
rewrite (@eq_total _ (fun x0 => if x0 == x then q pre x * sumseq (fun t => sumseq (path_term (rcons pre x)
    (block_weight pre w x) (node_stop k (rcons pre x) (block_weight pre w x)) e y t) (iota 0 k.+1)) (paths k)
    else 0)).
  by rewrite totalE -big_mkcond big_pred1_eq.
move=> x0; case: eqP => [->|nx].
  by rewrite -sumseq_mull; apply: eq_sumseq_in => t /size_paths tk; rewrite path_sum_cons // eqxx.
rewrite (@eq_sumseq_in _ _ (fun _ => 0)) ?sumseq0 // => t /size_paths tk.
by rewrite path_sum_cons //; case: eqP.
Qed.

Lemma no_later_stop0 pre w : no_later_stop 0 pre w = 1.
Proof. by rewrite /no_later_stop /= mulr1 addr0. Qed.

Lemma no_later_stop_rec k pre w :
  no_later_stop k.+1 pre w =
    total (fun x => q pre x * ((1 - node_stop k (rcons pre x) (block_weight pre w x))
                               * no_later_stop k (rcons pre x) (block_weight pre w x))).
Proof.
rewrite /no_later_stop sum_paths; apply: eq_total => x.
rewrite [in RHS]mulrC -sumseq_mull [in RHS]mulrC -sumseq_mull; apply: eq_sumseq_in => t /size_paths tk.
by rewrite (stops_cons _ _ _ tk) /= -mulrA; congr (_ * _); rewrite mulrCA.
Qed.

Hypothesis hp : forall pre, is_dist (p pre).
Hypothesis hq : forall pre, is_dist (q pre).

Lemma block_residual_ge0 pre w y : 0 <= block_residual pre w y.
Proof. by rewrite le_maxr lexx. Qed.

Lemma block_weight_ge0 pre w x : 0 <= w -> 0 <= block_weight pre w x.
Proof.
move=> w0; case: (hp pre) (hq pre) => p0 _ [q0 _].
rewrite le_minr ler01 /= mulr_ge0 // /safe_div; case: eqP => // _; exact: divr_ge0.
Qed.

Lemma block_weight_le1 pre w x : block_weight pre w x <= 1.
Proof. by rewrite le_minl lexx. Qed.

(* q(x) w'(x) = min(q(x), w p(x)): the mass with which draft x passes *)
Lemma weighted_mass pre w x : 0 <= w -> q pre x * block_weight pre w x = Num.min (q pre x) (w * p pre x).
Proof.
move=> w0; case: (hp pre) (hq pre) => p0 _ [q0 _]; rewrite /block_weight /safe_div.
have [->|qx] := eqVneq (q pre x) 0.
  by rewrite mul0r; apply/esym/min_idPl; rewrite mulr_ge0.
rewrite minr_pmulr // mulr1; congr Num.min.
by rewrite mulrCA; congr (_ * _); rewrite mulrC divfK.
Qed.

(* the mass that passes and the residual mass together are w: sum_x min(q, w p) + Z = w *)
Lemma passing_plus_residual pre w : 0 <= w ->
  total (fun x => q pre x * block_weight pre w x) + total (block_residual pre w) = w.
Proof.
move=> w0; case: (hp pre) => _ p1.
rewrite !totalE -big_split /=.
rewrite (eq_bigr (fun x => w * p pre x)) => [|x _]; last first.
  by rewrite weighted_mass // minC /block_residual T1_pointwise_split.
by rewrite -mulr_sumr -totalE p1 mulr1.
Qed.

Lemma stop_algebra (z w : R) : 0 <= z -> w <= 1 ->
  let h := (if z + 1 - w == 0 then 1 else z / (z + 1 - w)) in
  (1 - h) * (z + 1 - w) = 1 - w /\ h * (z + 1 - w) = z.
Proof.
move=> z0 w1 /=; case: eqP => [G0|/eqP G0].
  have [-> w1'] : z = 0 /\ 1 - w = 0.
    by move: G0; rewrite -addrA => /eqP; rewrite paddr_eq0 ?subr_ge0 // => /andP[/eqP -> /eqP ->].
  by rewrite -addrA w1' addr0 !mulr0.
by rewrite mulrBl mul1r divfK // -addrA [z + _]addrC addrK.
Qed.

Lemma block_residual_total_ge0 pre w : 0 <= total (block_residual pre w).
Proof. by apply: total_ge0 => y; apply: block_residual_ge0. Qed.

Lemma block_weight_unit pre w x : 0 <= w <= 1 -> 0 <= block_weight pre w x <= 1.
Proof. by case/andP=> w0 _; rewrite block_weight_ge0 ?block_weight_le1. Qed.

(* one step of the backward induction: if P(tau >= i+1 | x_1..x_{i+1}) = w_{i+1} below a node,
   then D_i = Z_i + 1 - w_i at the node *)
Lemma no_later_stop_step k pre w : 0 <= w <= 1 ->
  (forall x, (1 - node_stop k (rcons pre x) (block_weight pre w x))
             * no_later_stop k (rcons pre x) (block_weight pre w x) = 1 - block_weight pre w x) ->
  no_later_stop k.+1 pre w = total (block_residual pre w) + 1 - w.
Proof.
case/andP=> w0 w1 IH; case: (hq pre) => _ q1.
rewrite no_later_stop_rec (eq_total (g := fun x => q pre x - q pre x * block_weight pre w x)); last first.
  by move=> x; rewrite IH mulrBr mulr1.
have E : total (fun x => q pre x * block_weight pre w x) = w - total (block_residual pre w).
  by apply/eqP; rewrite eq_sym subr_eq eq_sym (passing_plus_residual pre w0).
by rewrite totalE sumrB -!totalE q1 E opprB addrA [1 + _]addrC.
Qed.

(* backward induction (Sun et al.): (1 - h_i) D_i = 1 - w_i, i.e. P(tau >= i | x_1..x_i) = w_i *)
Lemma no_later_stop_pass k pre w : 0 <= w <= 1 ->
  (1 - node_stop k pre w) * no_later_stop k pre w = 1 - w.
Proof.
elim: k pre w => [|k IH] pre w hw; first by rewrite no_later_stop0 mulr1.
rewrite (no_later_stop_step hw) => [|x]; last by apply: IH; apply: block_weight_unit.
by case/andP: hw => _ w1; apply: (proj1 (stop_algebra (block_residual_total_ge0 pre w) w1)).
Qed.

(* ... so D_i = Z_i + 1 - w_i below every node that has drafts below it *)
Lemma no_later_stop_value k pre w : 0 <= w <= 1 ->
  no_later_stop k.+1 pre w = total (block_residual pre w) + 1 - w.
Proof.
by move=> hw; apply: no_later_stop_step => // x; apply: no_later_stop_pass; apply: block_weight_unit.
Qed.

(* the mass of stopping at a node is its residual mass: h_i D_i = Z_i (and h_K D_K = w_K) *)
Lemma block_stop_mass k pre w : 0 <= w <= 1 ->
  node_stop k.+1 pre w * no_later_stop k.+1 pre w = total (block_residual pre w).
Proof.
move=> hw; rewrite no_later_stop_value //=; case/andP: hw => _ w1.
exact: (proj2 (stop_algebra (block_residual_total_ge0 pre w) w1)).
Qed.

(* ... so a node emits its correction y with mass max(0, w p(y) - q(y)), or w p(y) after the last draft *)
Lemma node_emission k pre w y : 0 <= w <= 1 ->
  node_stop k pre w * no_later_stop k pre w * node_token k pre w y =
    (if k is 0 then w * p pre y else block_residual pre w y).
Proof.
case: k => [|k] hw; first by rewrite no_later_stop0 mulr1.
rewrite block_stop_mass // /node_token /normalise /safe_div; case: eqP => [Z0|/eqP Z0].
  by rewrite mulr0 (total_eq0 _ Z0) // => x; apply: block_residual_ge0.
by rewrite mulrC divfK.
Qed.

Lemma node_law0_cons pre w h x e y : block_node_law 0 pre w h (x :: e) y = 0.
Proof. by rewrite /block_node_law /= /path_term /= !addr0. Qed.

Lemma node_continued_cons k pre w h y s :
  block_node_continued k pre w h (y :: s) =
    block_node_law k pre w h [::] y * target_law p (rcons pre y) s
    + sumseq (fun j => if drop j s is y' :: rest then
                         block_node_law k pre w h (y :: take j s) y' * target_law p (pre ++ rcons (y :: take j s) y') rest
                       else 0) (iota 0 (size s)).
Proof. by rewrite /block_node_continued /= cats1 -[iota 1 _]/(iota (1 + 0) _) iotaDl sumseq_map. Qed.

(* forward induction: from a node of weight w, the emission continued by the target has law w p(s | pre) *)
Theorem block_node_exact k pre w s : 0 <= w <= 1 -> (k < size s)%N ->
  block_node_continued k pre w (node_stop k pre w) s = w * target_law p pre s.
Proof.
elim: k pre w s => [|k IH] pre w [|y s] hw // hs; rewrite node_continued_cons node_law_nil.
  rewrite node_emission // sumseq0 ?addr0 ?mulrA // => j.
  by case: (drop j s) => // y' rest; rewrite node_law0_cons mul0r.
rewrite node_emission //.
set w' := block_weight pre w y.
rewrite (_ : sumseq _ _ = q pre y * block_node_continued k (rcons pre y) w' (node_stop k (rcons pre y) w') s).
  case/andP: (hw) => w0 _.
  rewrite IH ?block_weight_unit // mulrA -mulrDl weighted_mass // minC.
  by rewrite /block_residual addrC T1_pointwise_split mulrA.
rewrite /block_node_continued -sumseq_mull; apply: eq_sumseq_in => j _.
case: (drop j s) => [|y' rest]; first by rewrite mulr0.
by rewrite node_law_cons mulrA /= cat_rcons.
Qed.

(* Block verification is exact: one block round with K drafts (prefix-dependent p and q), continued by
   the target, has the target's law at every horizon of at least K+1 tokens, for every n and K. *)
Theorem block_exact k s : (k < size s)%N -> block_continued_law k s = target_law p [::] s.
Proof.
move=> hs; have h1 : node_stop k [::] 1 = 1.
  by case: k hs => [|k] _ //=; rewrite /block_stop addrK; case: eqP => // /eqP Z0; rewrite divff.
rewrite (_ : block_continued_law k s = block_node_continued k [::] 1 1 s) //.
by rewrite -{2}h1 block_node_exact ?mul1r // ler01 lexx.
Qed.

(* The same at the horizon K+1 of specproof.proofs.laws.block.block_continued_law. *)
Corollary block_exact_horizon k s : size s = k.+1 -> block_continued_law k s = target_law p [::] s.
Proof. by move=> hs; apply: block_exact; rewrite hs. Qed.

End Block.
