"""Plain-Python versions of the DAG baselines (`jaxsched/policies/dag.py`) over the reference simulator's
snapshot (`tests/reference/dag.py`), written from that module's docstring: loops and sorted lists, no
arrays. `ref_dag_policy(name, snap, env, feats)` returns `(a_stage, a_limit, r)`; `feats` is
`template_features` of the env's templates (work and bottom levels, in ms)."""

from __future__ import annotations

import math


def _runnable(snap, env):
    """[(slot, stage)] of the runnable stages, in slot-major order."""
    return [divmod(a, env.S) for a in range(env.J * env.S) if snap["stage_mask"][a]]


def _first_stage_of(slot, runnable):
    return min(s for j, s in runnable if j == slot)


def ref_dag_policy(name: str, snap, env, feats):
    k = env.k
    runnable = _runnable(snap, env)
    slots = sorted({j for j, _ in runnable})
    job = {j: int(snap["slot_job"][j]) for j in range(env.J)}  # episode index = arrival order
    if name == "fifo":
        j = min(slots, key=lambda j: job[j])
        return j * env.S + _first_stage_of(j, runnable), k - 1, 0
    if name == "sjf":
        work = {j: feats.work[env.template[job[j]]] for j in slots}
        j = min(slots, key=lambda j: (work[j], job[j]))
        return j * env.S + _first_stage_of(j, runnable), k - 1, 0
    if name == "cp":
        bottom = {(j, s): feats.bottom[env.template[job[j]], s] for j, s in runnable}
        j, s = min(runnable, key=lambda js: (-bottom[js], job[js[0]], js[1]))
        return j * env.S + s, k - 1, 0
    if name == "dynamic":
        unstarted = 0
        for j in range(env.J):
            if job[j] < 0:
                continue
            n = env.t_tasks[env.template[job[j]]]
            if any(n[s] - snap["dispatched"][j, s] - snap["moving"][j, s] > 0 for s in range(env.S)):
                unstarted += 1
        cap = math.ceil(k / max(unstarted, 1))
        under = [j for j in slots if snap["bound"][j] < cap]
        if under:
            j = min(under, key=lambda j: job[j])
            return j * env.S + _first_stage_of(j, runnable), cap - 1, 0
        j = min(slots, key=lambda j: job[j])
        return j * env.S + _first_stage_of(j, runnable), int(snap["bound"][j]), 0
    raise ValueError(name)
