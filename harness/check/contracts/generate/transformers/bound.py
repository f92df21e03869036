"""How far two correct float evaluations of one tiny Llama may disagree on a logit (cached vs uncached).

transformers' ``generate`` computes the target's logits with a KV cache (a prefill, then chunks of
``K + 1`` columns); the reference (:mod:`.pipeline_transformers`) runs an uncached forward on each
prefix.  Both compute the same real function in another order (matmuls of other shapes, softmax over
other key counts), so a logit may differ by some units in the last place.  :func:`logit_error_bound`
bounds that difference a priori from the unit roundoff ``u`` of the dtype (float32: ``2^-24``), the
model's width and depth, its weights and the values of the forward itself; no measured difference
enters (:func:`measured_cache_difference` is the sanity check).

Method: a running error analysis, first order in ``u``.  The forward is replayed in float64 (the
float32 weights are exact there) carrying, for every intermediate value ``y``, a bound ``e_y >= 0`` on
``|fl(y) - y|`` for ANY evaluation order of each sum (Higham, Thm 3.5: an ``n``-term dot product is
within ``gamma_n sum |a_i b_i|``, ``gamma_n = n u / (1 - n u)``, FMA or not, whatever the blocking):

* linear ``y = W a``: ``e_y = |W| e_a + gamma_n |W| |a|`` (``n`` the inner dimension: hidden ``h``,
  ``H d`` for ``o_proj``, MLP width ``I`` for ``down_proj``);
* RMSNorm ``a = g x / r``, ``r = sqrt(mean x^2 + eps)``: ``e_a = |g| / r (e_x + |x| (|x|.e_x) / (h r^2))``
  (the absolute Jacobian ``|g|/r |I - x x^T / (h r^2)|``) ``+ (gamma_{h+2} / 2 + 4 u) |a|``;
* RoPE ``q cos + rot(q) sin``: ``e = e_q |cos| + rot(e_q) |sin| + c (|q| + |rot q|) + 3 u (|q cos| + |rot q sin|)``
  with ``c = 4 u pos + 2 u`` the error of ``cos``/``sin`` of the float32 angle ``pos * inv_freq``;
* scores ``s = scale q.k``: ``e_s = scale (|q|.e_k + e_q.|k| + gamma_d |q|.|k|) + u |s|``;
* softmax over the ``t`` visible keys: ``e_p = p e_s + p (p.e_s) + p (u |s - max| + 4 u + gamma_t)``
  (the absolute Jacobian ``diag p + p p^T``; subtracting the max, ``exp``, the sum, the division);
* ``o = p V``: ``e_o = e_p |V| + p e_V + gamma_t p |V|``; residual ``x + y``: ``e_x + e_y + u |x + y|``;
* SwiGLU ``silu(g) up``: ``e = |silu'(g)| e_g |up| + |silu(g)| e_up + 5 u |silu(g)| |up| + u |silu(g) up|``.

Each evaluation is within ``e`` of the exact real logits, so two are within ``delta = 2 max e_logits``.
Neglected: products of two error terms (``O(u^2)``); relative to the bound they are of the size of the
largest relative first-order error, about ``1e-4`` here (``delta ~ 1e-3`` on logits of size ``~7``).
On CUDA it assumes TF32 matmuls are off (torch's default for float32).  Llama layout only (no biases,
default RoPE, eager attention), which :func:`logit_error_bound` checks.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from specproof.harness.exact.dtypes import dtype_info

__all__ = ["logit_error_bound", "measured_cache_difference"]


def _linear(a: torch.Tensor, e: torch.Tensor, weight: torch.Tensor, gamma) -> tuple[torch.Tensor, torch.Tensor]:
    w = weight.detach().to(torch.float64)
    return a @ w.T, e @ w.abs().T + gamma(w.shape[1]) * (a.abs() @ w.abs().T)


def _norm(x: torch.Tensor, e: torch.Tensor, module: Any, u: float, gamma) -> tuple[torch.Tensor, torch.Tensor]:
    g = module.weight.detach().to(torch.float64)
    h = x.shape[-1]
    r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + module.variance_epsilon)
    a = g * x / r
    spread = x.abs() * (x.abs() * e).sum(-1, keepdim=True) / (h * r * r)
    return a, g.abs() / r * (e + spread) + (gamma(h + 2) / 2 + 4 * u) * a.abs()


def _rotate(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _swap(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((x[..., half:], x[..., :half]), dim=-1)


def _rope(q, e, cos, sin, c, u):
    rq = _rotate(q)
    out = q * cos + rq * sin
    err = e * cos.abs() + _swap(e) * sin.abs() + c * (q.abs() + rq.abs()) + 3 * u * ((q * cos).abs() + (rq * sin).abs())
    return out, err


def _check_layout(cfg: Any) -> None:
    rope = getattr(cfg, "rope_parameters", None) or {}
    if getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False) \
            or rope.get("rope_type", "default") != "default" or cfg._attn_implementation != "eager" \
            or cfg.hidden_act != "silu":
        raise ValueError("logit_error_bound covers Llama without biases, default RoPE, eager attention, SiLU")


@torch.no_grad()
def logit_error_bound(model: Any, ids: torch.Tensor, dtype: str) -> tuple[float, float]:
    """``(delta, max |logit|)`` over every column of ``ids [B, T]`` (module docstring)."""
    cfg = model.config
    _check_layout(cfg)
    u = float(dtype_info(dtype).unit_roundoff)

    def gamma(n: int) -> float:
        return n * u / (1 - n * u)

    ids = ids.to(model.lm_head.weight.device)
    batch, t = ids.shape
    h, heads, kv = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
    d = getattr(cfg, "head_dim", None) or h // heads
    scale = d ** -0.5
    theta = cfg.rope_parameters["rope_theta"]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    pos = torch.arange(t, dtype=torch.float64)
    angle = torch.cat([pos[:, None] * inv_freq] * 2, dim=-1)  # [T, d]
    cos, sin = angle.cos()[None, None], angle.sin()[None, None]
    c_rope = (4 * u * pos[:, None] + 2 * u)[None, None]
    visible = torch.tril(torch.ones(t, t, dtype=torch.bool))
    keys = torch.arange(1, t + 1, dtype=torch.float64)[:, None]  # t visible keys at column t - 1
    gamma_t = keys * u / (1 - keys * u)

    x = model.model.embed_tokens.weight.detach().to(torch.float64)[ids]
    ex = torch.zeros_like(x)
    for layer in model.model.layers:
        att, mlp = layer.self_attn, layer.mlp
        a, ea = _norm(x, ex, layer.input_layernorm, u, gamma)

        def heads_of(y, n):
            return y.view(batch, t, n, d).transpose(1, 2)

        q, eq = (heads_of(v, heads) for v in _linear(a, ea, att.q_proj.weight, gamma))
        k, ek = (heads_of(v, kv) for v in _linear(a, ea, att.k_proj.weight, gamma))
        v, ev = (heads_of(w, kv) for w in _linear(a, ea, att.v_proj.weight, gamma))
        q, eq = _rope(q, eq, cos, sin, c_rope, u)
        k, ek = _rope(k, ek, cos, sin, c_rope, u)
        rep = heads // kv
        k, ek, v, ev = (y.repeat_interleave(rep, dim=1) for y in (k, ek, v, ev))
        s = scale * q @ k.transpose(2, 3)
        es = scale * (q.abs() @ ek.transpose(2, 3) + eq @ k.abs().transpose(2, 3)
                      + gamma(d) * q.abs() @ k.abs().transpose(2, 3)) + u * s.abs()
        s = s.masked_fill(~visible, -math.inf)
        es = es.masked_fill(~visible, 0.0)
        p = torch.softmax(s, dim=-1)
        top = s.max(dim=-1, keepdim=True).values
        local = (u * (s - top).abs().nan_to_num(0.0, posinf=0.0) + 4 * u + gamma_t) * p
        ep = p * es + p * (p * es).sum(-1, keepdim=True) + local
        o = p @ v
        eo = ep @ v.abs() + p @ ev + gamma_t * (p @ v.abs())
        o, eo = (y.transpose(1, 2).reshape(batch, t, heads * d) for y in (o, eo))
        y, ey = _linear(o, eo, att.o_proj.weight, gamma)
        x, ex = x + y, ex + ey + u * (x + y).abs()
        b, eb = _norm(x, ex, layer.post_attention_layernorm, u, gamma)
        gate, eg = _linear(b, eb, mlp.gate_proj.weight, gamma)
        up, eu = _linear(b, eb, mlp.up_proj.weight, gamma)
        sig = torch.sigmoid(gate)
        silu = gate * sig
        dsilu = (sig * (1 + gate * (1 - sig))).abs()
        m = silu * up
        em = dsilu * eg * up.abs() + silu.abs() * eu + 5 * u * m.abs() + u * m.abs()
        y, ey = _linear(m, em, mlp.down_proj.weight, gamma)
        x, ex = x + y, ex + ey + u * (x + y).abs()
    af, eaf = _norm(x, ex, model.model.norm, u, gamma)
    logits, el = _linear(af, eaf, model.lm_head.weight, gamma)
    return 2 * float(el.max()), float(logits.abs().max())


@torch.no_grad()
def measured_cache_difference(model: Any, sequences: torch.Tensor, prompt_length: int, chunk: int) -> float:
    """Largest ``|logit|`` difference between an uncached forward of ``sequences [B, T]`` (one row at
    a time, as ``generate`` runs) and a cached one: prefill the prompt, then chunks of ``chunk`` columns
    (the target's verification calls).  A sanity check of :func:`logit_error_bound`."""
    from transformers import DynamicCache

    worst = 0.0
    for row in sequences:
        row = row[None]
        full = model(row, use_cache=False).logits
        cache = DynamicCache(config=model.config)
        parts = [model(row[:, :prompt_length], cache=cache, use_cache=True).logits]
        for start in range(prompt_length, row.shape[1], chunk):
            parts.append(model(row[:, start:start + chunk], cache=cache, use_cache=True).logits)
        cached = torch.cat(parts, dim=1)
        worst = max(worst, float((full.double() - cached.double()).abs().max()))
    return worst
