"""Priority scores of classic batch-scheduling heuristics (lowest score runs first).

These are RLScheduler's score functions (Zhang et al., SC'20), on arrays of job fields:
  fcfs      submit time                         lcfs      −submit time
  sjf       requested time                      smallest  requested cores
  f1        log10(r)·n + 870·log10(s)           (Carastan-Santos & de Camargo, SC'17; r, s <= 0 read as 0.1)
  wfp3      −(w/r)³·n                           uni       −w / (log2(n)·r)   (UNICEP)
with s = submit, r = requested time, n = cores, w = waiting time. Ties go to the earlier submit, then the
lower position (`best_index`). Everything is `xp`-generic so the same formulas serve jitted code (jnp)
and the float64 reference checks (numpy).
"""

from __future__ import annotations

import jax.numpy as jnp

SCORES = ("fcfs", "lcfs", "sjf", "smallest", "f1", "wfp3", "uni")


def score(name: str, submit, cores, req_time, wait, xp=jnp):
    """Score `[...]` of jobs with the given fields (same shapes); lower is scheduled first."""
    dtype = xp.result_type(float)
    s = xp.asarray(submit).astype(dtype)
    n = xp.asarray(cores).astype(dtype)
    r = xp.asarray(req_time).astype(dtype)
    w = xp.asarray(wait).astype(dtype)
    if name == "fcfs":
        return s
    if name == "lcfs":
        return -s
    if name == "sjf":
        return r
    if name == "smallest":
        return n
    if name == "f1":
        r_ = xp.where(r > 0, r, 0.1)
        s_ = xp.where(s > 0, s, 0.1)
        return xp.log10(r_) * n + 870.0 * xp.log10(s_)
    if name == "wfp3":
        return -((w / r) ** 3) * n
    if name == "uni":
        # RLScheduler adds 1e-15 inside log2 and to w; a serial job (n = 1) then gets an enormous
        # |score|. In float32 1 + 1e-15 == 1, so guard the denominator to keep the same ordering. The
        # 1e-15 on w survives only at w = 0, so an exact tie of w / (log2(n)·r) between waiting jobs goes
        # to the earlier submit (RLScheduler's float64 breaks it towards the smaller log2(n)·r).
        denom = xp.maximum(xp.log2(n + 1e-15) * r, 1e-15)
        return -(w + 1e-15) / denom
    raise ValueError(f"unknown heuristic score '{name}'; choose one of {', '.join(SCORES)}")


def best_index(scores, submit, valid, xp=jnp):
    """Index of the valid entry with the lowest (score, submit, index); -1 when none is valid."""
    big = xp.asarray(xp.inf, scores.dtype)
    sc = xp.where(valid, scores, big)
    m = xp.min(sc)
    cand = valid & (sc == m)
    sub = xp.where(cand, xp.asarray(submit), xp.iinfo(xp.int32).max)
    cand = cand & (sub == xp.min(sub))
    idx = xp.argmax(cand)
    return xp.where(xp.any(valid), idx, -1)
