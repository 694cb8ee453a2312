"""The reference's per-stage counters read off the DAG env's packed `state.counts` (`StageCounts`)."""

from __future__ import annotations

import numpy as np


def unpacked_counts(env, state, n_tasks) -> dict[str, np.ndarray]:
    """`{dispatched, done, moving, delayed, selected}` `[J, S]` of `state` (`n_tasks` i32[T, S] of the
    bank's templates): dispatched = n_tasks − left, done = dispatched − running. Stale in free slots."""
    c = {f: np.asarray(x) for f, x in env.stage_counts(state).items()}
    dispatched = np.asarray(n_tasks)[np.asarray(state.slot_tmpl)] - c["left"]
    return {"dispatched": dispatched, "done": dispatched - c["running"], "moving": c["moving"],
            "delayed": c["delayed"], "selected": c["selected"]}  # fmt: skip
