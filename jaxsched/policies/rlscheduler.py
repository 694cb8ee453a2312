"""RLScheduler's heuristic table (Zhang et al., SC'20, Tables V/VI): FCFS, WFP3, UNI, SJF, F1 by sequence.

Reproduces `HPCEnv.schedule_curr_sequence_reset` of DIR-LAB/deep-batch-scheduler (`HPCSimPickJobs.py`,
`cluster.py`, `job.py`) as one jitted `lax.while_loop`, `vmap`-ed over (start, policy) lanes.

The model, exactly as RLScheduler's code runs it:
  * Trace: the SWF jobs with run time != 0 (negative -> 10 s), in job-id order (`load_swf(sort="job_id")`).
  * Machine: `MaxNodes` nodes of `MaxProcs / MaxNodes` processors (true division; `MaxProcs = MaxNodes` when
    absent); a job holds `ceil(procs / ppn)` whole nodes (`Cluster.can_allocated`).
  * A sequence is the `length` jobs from index `start`. Time starts at its first job's submit time, the
    cluster empty and that job queued.
  * Decision: the queued job with the lowest score (stable sort of the queue list: score ties go to the lower
    job index). If it does not fit, the choice is *committed*: it waits, one event at a time, until it fits.
    An event is the next arrival (of this sequence) if its submit time is <= the next completion, else the
    release of *one* running job -- the one with the smallest actual end `start + run`; among equal ends,
    the first in RLScheduler's `running_jobs` list (start order, re-sorted by requested end each time
    back-filling computes an earliest start). Released nodes are free only after their release event.
  * Back-filling (`--backfill`, `moveforward_for_resources_backfill_greedy`): when the committed job first
    fails to fit, its earliest start is the requested end `start + req` of the running job (in requested-end
    order) at which the free nodes plus the nodes released so far reach its need; it is not updated later.
    Before every event, every queued job (in FCFS order: submit time, then -- among equal submit times --
    the order of the last score sort, later arrivals last) that fits now and has `now + req < earliest start`
    starts now.
  * When the queue is empty, events run until an arrival; the sequence ends when all `length` jobs started.
  * bsld = mean over jobs of max(1, (wait + run) / max(run, 10)); util = sum(run * procs) / ((time of the
    last start - first submit) * MaxProcs) (`post_process_score`, score_type 3). Values per start are summed
    in start order like RLScheduler's dict; the table reports their mean over the starts (`np.mean`).

Policies (lowest score first; s submit, r requested time, n processors, w waiting time):
  fcfs s | lcfs -s | sjf (r, s) | smallest (n, s) | f1 log10(r)·n + 870·log10(s) |
  wfp3 -(w/r)^3·n | uni -(w + 1e-15)/(log2(n + 1e-15)·r)                      (`jaxsched.policies.scores`)
  `wfp3` and `uni` are RLScheduler's code as published: a queued job's `scheduled_time` is still -1, so its
  "waiting time" is -1 - s and both scores are fixed per job. `wfp3_real` / `uni_real` use w = now - s.

Starts: a comma list (`1981,2756`), `random:N:SEED` (N starts drawn uniformly from [0, J - length] with
`numpy.random.default_rng(SEED)`), or `rlscheduler:N:SEED` -- the N starts RLScheduler's
`compare-pick-jobs.py` / `make_table_script.py` test on (`env.seed(SEED)` with gym 0.15 seeding, then
`reset_for_test` draws `np_random.randint(length, J - length - 1)` each time, ignoring its `start`
argument). The paper used seed 1, 10 starts, length 1024: 1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762,
4022, 7085 on the 10000-job Lublin traces. `rlscheduler:10:1` is the default.

Numerics: static scores (every policy except the `_real` ones) are computed once per job on the host in
numpy float64 -- the same operations RLScheduler runs, so the ordering is bit-for-bit its ordering (F1's
870·log10(s) with s ~ 1e7 s needs float64: float32 cannot separate jobs 1 s apart) -- and enter the loop as
integer ranks. The `_real` scores depend on the clock and are computed inside the loop in float64 under a
scoped `jax.enable_x64` (XLA's pow/log may differ from numpy's in the last bit: only exact near-ties can
order differently). Times are int32 seconds; the metrics are float64 numpy.
"""

from __future__ import annotations

import hashlib
import math
import struct

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.envs.hpc.rlscheduler import NEVER, run_dynamic, run_static
from jaxsched.policies.scores import score as heuristic_score
from jaxsched.workloads.base import Workload

STATIC_POLICIES = ("fcfs", "lcfs", "sjf", "smallest", "f1", "wfp3", "uni")
DYNAMIC_POLICIES = ("wfp3_real", "uni_real")
POLICIES = STATIC_POLICIES + DYNAMIC_POLICIES
DEFAULT_POLICIES = ("fcfs", "wfp3", "uni", "sjf", "f1")
METRICS = ("bsld", "util")
DEFAULT_STARTS = "rlscheduler:10:1"

_I32 = jnp.int32


# --- host side: trace, machine, scores, starts ------------------------------------------------------------


def machine_nodes(workload: Workload) -> tuple[int, np.ndarray]:
    """`(total nodes, nodes per job i64[J])` as RLScheduler's `Cluster` counts them.

    `Cluster(max_nodes, max_procs / max_nodes)` divides as floats and `can_allocated` takes
    `ceil(float(procs) / ppn)`: reproduced in float64 (not `Workload.procs_per_node`, which floors).
    Without `MaxNodes` (RLScheduler would divide by zero) every processor is a node.
    """
    procs = np.asarray(workload.cores, dtype=np.int64)
    if workload.max_nodes > 0:
        total = int(workload.max_nodes)
        ppn = float(workload.max_procs) / float(workload.max_nodes)
    else:
        total = int(workload.max_procs)
        ppn = 1.0
    nodes = np.ceil(procs.astype(np.float64) / ppn).astype(np.int64)
    wide = nodes > total
    if wide.any():
        i = int(np.argmax(wide))
        raise ValueError(
            f"job index {i} (job_id {int(workload.job_id[i])}) needs {nodes[i]} nodes ({procs[i]} procs at "
            f"{ppn:g} per node), more than the machine's {total}"
        )
    return total, nodes


def static_rank(policy: str, submit: np.ndarray, procs: np.ndarray, req: np.ndarray) -> np.ndarray:
    """Dense rank `i32[n]` of RLScheduler's float64 score of each job (equal scores share a rank).

    Ties among equal scores go to the lower index in the loop, which is what RLScheduler's stable sort of its
    arrival-ordered queue gives (an equal-score pair is never reordered: the FCFS sorts of back-filling keep
    submit order, which is index order). `sjf`'s `(r, s)` and `smallest`'s `(n, s)` keys therefore rank like
    `r` and `n` alone.
    """
    submit = np.asarray(submit, dtype=np.int64)
    # The published WFP3/UNI read `scheduled_time - submit_time` of a job still in the queue: -1 - submit.
    wait = -1 - submit if policy in ("wfp3", "uni") else np.zeros_like(submit)
    key = np.asarray(heuristic_score(policy, submit, procs, req, wait, xp=np), dtype=np.float64)
    _, inverse = np.unique(key, return_inverse=True)  # -0.0 == 0.0: one rank
    return inverse.reshape(-1).astype(np.int32)


def _gym015_random_state(seed: int) -> np.random.RandomState:
    """`gym.utils.seeding.np_random(seed)` of gym 0.15 (RLScheduler's pinned gym), for an int seed >= 0."""
    digest = hashlib.sha512(str(seed % 2**64).encode("utf8")).digest()[:8]
    words = struct.unpack("<2I", digest)  # little-endian 32-bit words -> a 64-bit int
    big = words[0] + (words[1] << 32)
    init = []
    while big > 0:
        big, low = divmod(big, 2**32)
        init.append(low)
    rng = np.random.RandomState()
    rng.seed(init)
    return rng


def parse_starts(spec: str | list | tuple, n_jobs: int, length: int) -> list[int]:
    """Starts from a comma list, `random:N:SEED` or `rlscheduler:N:SEED` (module docstring); validated."""
    if length < 1:
        raise ValueError(f"--length must be >= 1, got {length}")
    if n_jobs < length:
        raise ValueError(f"the trace has {n_jobs} jobs, fewer than --length {length}")
    if isinstance(spec, (list, tuple)):
        starts = [int(s) for s in spec]
    else:
        spec = str(spec).strip()
        kind, _, rest = spec.partition(":")
        if kind in ("random", "rlscheduler"):
            parts = rest.split(":")
            try:
                n, seed = int(parts[0]), int(parts[1])
                if len(parts) != 2:
                    raise IndexError
            except (ValueError, IndexError):
                raise ValueError(
                    f"--starts {spec!r}: expected '{kind}:N:SEED' with integers N and SEED"
                ) from None
            if n < 1 or seed < 0:
                raise ValueError(f"--starts {spec!r}: N must be >= 1 and SEED >= 0")
            if kind == "random":
                rng = np.random.default_rng(seed)
                starts = rng.integers(0, n_jobs - length, size=n, endpoint=True).tolist()
            else:
                low, high = length, n_jobs - length - 1
                if high <= low:
                    raise ValueError(
                        f"--starts {spec!r}: RLScheduler draws starts from [length, J - length - 1) = "
                        f"[{low}, {high}), empty for J = {n_jobs}"
                    )
                rng = _gym015_random_state(seed)
                starts = [int(rng.randint(low, high)) for _ in range(n)]
        else:
            try:
                starts = [int(tok) for tok in spec.split(",") if tok.strip()]
            except ValueError:
                raise ValueError(
                    f"--starts {spec!r}: expected comma-separated integers, 'random:N:SEED' or "
                    "'rlscheduler:N:SEED'"
                ) from None
    if not starts:
        raise ValueError("--starts: no starts given")
    for s in starts:
        if s < 0 or s + length > n_jobs:
            raise ValueError(
                f"start {s} out of range: a sequence of {length} jobs needs 0 <= start <= {n_jobs - length} "
                f"(the trace has {n_jobs} jobs)"
            )
    return [int(s) for s in starts]


def check_policies(policies) -> list[str]:
    if isinstance(policies, str):
        policies = [p for p in policies.split(",") if p.strip()]
    policies = [p.strip() for p in policies]
    if not policies:
        raise ValueError("no policies given")
    for p in policies:
        if p not in POLICIES:
            raise ValueError(f"unknown policy {p!r}; choose from {', '.join(POLICIES)}")
    return policies


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(METRICS)}")
    return metric


# --- driver ---------------------------------------------------------------------------------------------


def _lane_arrays(workload: Workload, starts: list[int], length: int):
    submit = np.asarray(workload.submit, dtype=np.int64)
    run = np.asarray(workload.run, dtype=np.int64)
    req = np.asarray(workload.req_time, dtype=np.int64)
    procs = np.asarray(workload.cores, dtype=np.int64)
    total, nodes = machine_nodes(workload)
    sl = np.stack([np.arange(s, s + length) for s in starts])  # [S, L]
    # Every time the loop forms (starts, ends, requested ends) is below this bound: keep it in int32.
    for row in sl:
        bound = int(submit[row].max()) + int(np.maximum(run[row], req[row]).sum()) + int(req[row].max())
        if bound >= NEVER:
            raise ValueError(
                f"sequence at start {row[0]}: times could exceed int32 seconds ({bound}); shift the trace's "
                "submit times towards 0"
            )
    return dict(submit=submit[sl], run=run[sl], req=req[sl], procs=procs[sl], nodes=nodes[sl], total=total)


def simulate_lanes(workload: Workload, starts: list[int], length: int, policies: list[str], backfill: bool):
    """Run every (policy, start) pair. Returns `{policy: (start_time i64[S, L], order i32[S, L],
    last_start i64[S])}` with absolute times; `order[i]` is job i's place in the start order."""
    policies = check_policies(policies)
    a = _lane_arrays(workload, starts, length)
    S, L = a["submit"].shape
    capacity = int(min(a["total"], L))
    static = [p for p in policies if p in STATIC_POLICIES]
    dynamic = [p for p in policies if p in DYNAMIC_POLICIES]
    results = {}

    def tile(x, k):
        return np.concatenate([x] * k, axis=0)

    def lanes_done(names, start_t, order, last, ok):
        start_t, order, last, ok = (np.asarray(v) for v in (start_t, order, last, ok))
        if not ok.all():
            bad = int(np.argmin(ok))
            raise RuntimeError(
                f"simulation did not finish for policy {names[bad // S]} at start {starts[bad % S]} "
                "(internal error: stuck or running-table overflow)"
            )
        for k, name in enumerate(names):
            lanes = slice(k * S, (k + 1) * S)
            results[name] = (start_t[lanes].astype(np.int64), order[lanes], last[lanes].astype(np.int64))

    if static:
        ranks = np.concatenate(
            [
                np.stack([static_rank(p, a["submit"][i], a["procs"][i], a["req"][i]) for i in range(S)])
                for p in static
            ]
        )
        k = len(static)
        out = run_static(
            jnp.asarray(tile(a["submit"], k), _I32),
            jnp.asarray(tile(a["run"], k), _I32),
            jnp.asarray(tile(a["req"], k), _I32),
            jnp.asarray(tile(a["nodes"], k), _I32),
            jnp.asarray(ranks, _I32),
            jnp.full((k * S,), a["total"], _I32),
            backfill=bool(backfill),
            capacity=capacity,
        )
        lanes_done(static, *out)
    if dynamic:
        k = len(dynamic)
        req_f = a["req"].astype(np.float64)
        procs_f = a["procs"].astype(np.float64)
        uni_denom = np.log2(procs_f + 1e-15) * req_f  # RLScheduler's numpy float64 operations
        kind = np.repeat(np.array([DYNAMIC_POLICIES.index(p) for p in dynamic], np.int32), S)
        # x64 is scoped to this call: WFP3/UNI with the real waiting time compare float64 scores in the loop.
        with jax.enable_x64(True):
            out = run_dynamic(
                jnp.asarray(tile(a["submit"], k), _I32),
                jnp.asarray(tile(a["run"], k), _I32),
                jnp.asarray(tile(a["req"], k), _I32),
                jnp.asarray(tile(a["nodes"], k), _I32),
                jnp.asarray(tile(req_f, k), jnp.float64),
                jnp.asarray(tile(procs_f, k), jnp.float64),
                jnp.asarray(tile(uni_denom, k), jnp.float64),
                jnp.asarray(kind, _I32),
                jnp.full((k * S,), a["total"], _I32),
                backfill=bool(backfill),
                capacity=capacity,
            )
            out = jax.device_get(out)
        lanes_done(dynamic, *out)
    return {p: results[p] for p in policies}, a


def sequence_metrics(submit, run, procs, start_time, order, last_start, max_procs: int) -> dict[str, float]:
    """bsld and util of one sequence, float64, summed in start order like RLScheduler's `scheduled_logs`."""
    submit, run, procs, start_time = (np.asarray(x, dtype=np.int64) for x in (submit, run, procs, start_time))
    n = submit.shape[0]
    seq = np.argsort(np.asarray(order), kind="stable")
    wait = start_time - submit
    bsld = np.maximum(1.0, (wait + run).astype(np.float64) / np.maximum(run, 10).astype(np.float64))
    bsld_sum = float(np.add.accumulate(bsld[seq] / n)[-1])
    span = (int(last_start) - int(submit[0])) * int(max_procs)
    if span > 0:
        util = float(np.add.accumulate((run * procs).astype(np.float64)[seq] / span)[-1])
    else:  # every job started at the first submit time: RLScheduler divides by zero
        util = math.nan
    return {"bsld": bsld_sum, "util": util}


def per_start_table(
    workload: Workload, starts, length: int, policies, backfill: bool, metric: str
) -> dict[str, np.ndarray]:
    """`{policy: f64[S]}`: the metric of every start."""
    metric = check_metric(metric)
    starts = parse_starts(starts, workload.num_jobs, length)
    results, a = simulate_lanes(workload, starts, length, policies, backfill)
    table = {}
    for name, (start_t, order, last) in results.items():
        vals = [
            sequence_metrics(
                a["submit"][i], a["run"][i], a["procs"][i], start_t[i], order[i], last[i], workload.max_procs
            )[metric]
            for i in range(len(starts))
        ]
        table[name] = np.asarray(vals, dtype=np.float64)
    return table


def compute_table(
    workload: Workload, starts, length: int, policies, backfill: bool, metric: str
) -> dict[str, float]:
    """`{policy: mean metric over the starts}` (RLScheduler's table cell)."""
    return {
        k: float(np.mean(v))
        for k, v in per_start_table(workload, starts, length, policies, backfill, metric).items()
    }


def simulate_sequence(workload: Workload, start: int, length: int, policy: str, backfill: bool) -> dict:
    """One sequence in detail: `start_time` (absolute, i64[L]), `wait`, `order` (place in the start order),
    `last_start`, `bsld`, `util`."""
    starts = parse_starts([start], workload.num_jobs, length)
    results, a = simulate_lanes(workload, starts, length, [policy], backfill)
    start_t, order, last = results[policy]
    m = sequence_metrics(
        a["submit"][0], a["run"][0], a["procs"][0], start_t[0], order[0], last[0], workload.max_procs
    )
    return {
        "start_time": start_t[0],
        "wait": start_t[0] - a["submit"][0],
        "order": np.asarray(order[0]),
        "last_start": int(last[0]),
        **m,
    }
