"""The `Workload` pytree: a batch-job trace as device arrays, and its validation.

Times are integer seconds (`int32`), as in the Standard Workload Format: event arithmetic stays exact
(no float drift between the JAX simulators and their reference event loops) for traces up to 68 years.
Jobs are sorted by submit time; `validate_workload` checks that and every other field, raising a
`ValueError` that names the field and the first offending job.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct

INT_FIELDS = ("job_id", "submit", "run", "req_time", "cores", "user", "queue")


@struct.dataclass
class Workload:
    """A trace of rigid batch jobs, sorted by `submit`.

    Arrays are `i32[J]`:
      job_id    original id (SWF column 1), for reporting only
      submit    submit time, seconds
      run       actual run time, seconds (> 0)
      req_time  requested (wall-clock limit) time, seconds (> 0; = run when the trace has none)
      cores     requested processors (>= 1)
      user      user id (-1 unknown)
      queue     queue / job class (SWF column 15; Lublin: 0 interactive, 1 batch; -1 unknown)
    Static: `max_procs` (machine size in processors), `max_nodes`, `name`.
    """

    job_id: jnp.ndarray
    submit: jnp.ndarray
    run: jnp.ndarray
    req_time: jnp.ndarray
    cores: jnp.ndarray
    user: jnp.ndarray
    queue: jnp.ndarray
    max_procs: int = struct.field(pytree_node=False, default=0)
    max_nodes: int = struct.field(pytree_node=False, default=0)
    name: str = struct.field(pytree_node=False, default="")

    @property
    def num_jobs(self) -> int:
        return int(self.submit.shape[-1])

    @property
    def procs_per_node(self) -> int:
        """Processors per node (SWF `MaxProcs / MaxNodes`); 1 when the header gives no nodes."""
        if self.max_nodes <= 0:
            return 1
        return max(1, self.max_procs // self.max_nodes)

    def slice(self, start: int, stop: int) -> Workload:
        """Jobs `[start, stop)` as a new workload (host-side helper, not for jitted code)."""
        return self.replace(**{f: getattr(self, f)[start:stop] for f in INT_FIELDS})


def make_workload(
    submit,
    run,
    cores,
    req_time=None,
    user=None,
    queue=None,
    job_id=None,
    max_procs: int = 0,
    max_nodes: int = 0,
    name: str = "",
    validate: bool = True,
) -> Workload:
    """Build a `Workload` from array-likes; missing optional columns get their documented defaults.

    `req_time` defaults to `run` (a trace without requested times), `user`/`queue` to -1,
    `job_id` to 1..J. `max_procs` defaults to the widest job. Validated unless `validate=False`.
    """
    submit = np.asarray(submit)
    n = submit.shape[0]
    run = np.asarray(run)
    cols = {
        "submit": submit,
        "run": run,
        "cores": np.asarray(cores),
        "req_time": run if req_time is None else np.asarray(req_time),
        "user": np.full(n, -1) if user is None else np.asarray(user),
        "queue": np.full(n, -1) if queue is None else np.asarray(queue),
        "job_id": np.arange(1, n + 1) if job_id is None else np.asarray(job_id),
    }
    for field, col in cols.items():
        if col.shape != (n,):
            raise ValueError(f"workload field '{field}' has shape {col.shape}, expected ({n},) like 'submit'")
        _check_integral(field, col)
    if max_procs <= 0:
        max_procs = int(cols["cores"].max()) if n else 1
    w = Workload(
        **{f: jnp.asarray(cols[f], dtype=jnp.int32) for f in INT_FIELDS},
        max_procs=int(max_procs),
        max_nodes=int(max_nodes),
        name=name,
    )
    if validate:
        validate_workload(w)
    return w


def _check_integral(field: str, col: np.ndarray) -> None:
    if col.dtype.kind == "f":
        bad = ~np.isfinite(col)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"workload field '{field}' is not finite at job index {i}: {col[i]}")
        frac = col != np.round(col)
        if frac.any():
            i = int(np.argmax(frac))
            raise ValueError(
                f"workload field '{field}' must hold whole seconds/counts; job index {i}: {col[i]}"
            )
    elif col.dtype.kind not in "iub":
        raise ValueError(f"workload field '{field}' has non-numeric dtype {col.dtype}")
    if col.size and (np.abs(col.astype(np.int64)) > np.iinfo(np.int32).max).any():
        raise ValueError(f"workload field '{field}' exceeds int32 range")


def validate_workload(w: Workload, n_cores: int | None = None) -> None:
    """Raise `ValueError` naming the field and job index of the first problem.

    Checks: submit non-negative and sorted; run and req_time > 0; cores >= 1; every job's
    `submit + max(run, req_time)` within the int32 clock; and, when `n_cores` is given (or `w.max_procs`
    is set), no job wider than the machine.
    """
    submit = np.asarray(w.submit)
    checks = [
        ("submit", submit < 0, "is negative"),
        ("run", np.asarray(w.run) <= 0, "must be > 0 seconds"),
        ("req_time", np.asarray(w.req_time) <= 0, "must be > 0 seconds"),
        ("cores", np.asarray(w.cores) < 1, "must be >= 1"),
    ]
    for field, bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"workload field '{field}' {what}: job index {i} (job_id {int(w.job_id[i])}) has "
                f"{int(np.asarray(getattr(w, field))[i])}"
            )
    if submit.size > 1:
        back = np.diff(submit) < 0
        if back.any():
            i = int(np.argmax(back)) + 1
            raise ValueError(
                f"workload field 'submit' is not sorted: job index {i} (job_id {int(w.job_id[i])}) "
                f"submits at "
                f"{int(submit[i])} after {int(submit[i - 1])}; sort the trace by submit time first"
            )
    # The simulators keep int32 seconds: a job's own end must be representable, or it wraps negative
    # and its cores look free. (Waiting pushes real ends later still; rebase submits near 0 for margin.)
    end = submit.astype(np.int64) + np.maximum(np.asarray(w.run), np.asarray(w.req_time)).astype(np.int64)
    over = end > np.iinfo(np.int32).max
    if over.any():
        i = int(np.argmax(over))
        raise ValueError(
            f"workload field 'submit': job index {i} (job_id {int(w.job_id[i])}) would end at "
            f"{int(end[i])} s, past the int32 clock (2^31 - 1 s); subtract the first submit from every submit"
        )
    limit = n_cores if n_cores is not None else (w.max_procs or None)
    if limit is not None:
        wide = np.asarray(w.cores) > limit
        if wide.any():
            i = int(np.argmax(wide))
            raise ValueError(
                f"workload field 'cores': job index {i} (job_id {int(w.job_id[i])}) requests "
                f"{int(w.cores[i])} cores, more than the machine's {limit}"
            )
