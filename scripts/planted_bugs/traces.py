"""Planted bugs in the real DL-cluster trace readers (`jaxsched/workloads/dl_traces.py`), for
`scripts/planted_bugs.py` (docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

TRACES = "jaxsched/workloads/dl_traces.py"
T = "tests/test_dl_traces.py"

BUGS = [
    # Philly: the GPUs of the first attempt instead of the last
    ("T1", TRACES, 'for j, machine in enumerate(attempts[-1]["detail"]):', 'for j, machine in enumerate(attempts[0]["detail"]):', T),
    # Philly: the run time of the last attempt only, not the job's wall time
    ("T2", TRACES, 'start = _time(where, "attempts[0].start_time", times[0][0])', 'start = _time(where, "attempts[0].start_time", times[-1][0])', T),
    # Philly: submit times not shifted to the first submission
    ("T3", TRACES, "submit = submits[order] - submits.min()", "submit = submits[order] - submits[0]", T),
    # Helios: GPUs per instance the job's total
    ("T4", TRACES, "gpu, cpu = -(-gpus * 100 // nodes), -(-cpus * 100 // nodes)", "gpu, cpu = gpus * 100, -(-cpus * 100 // nodes)", T),
    # Helios: a job wider than the cluster kept
    ("T5", TRACES, "if not fits or nodes > n_machines:", "if not fits:", T),
    # Helios: CPU-only jobs kept
    ("T6", TRACES, "        if gpus == 0:\n            dropped[\"no_gpu\"] += 1\n            continue\n        if duration == 0:", "        if duration == 0:", T),
    # Helios: the state filter ignored
    ("T7", TRACES, "        if state not in keep_states:", "        if False:", T),
]
