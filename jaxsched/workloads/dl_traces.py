"""Readers of two public deep-learning cluster traces, in their published formats, for the GPU envs:

* **Philly** (Microsoft, msr-fiddle/philly-traces, ATC '19): `cluster_job_log`, one JSON list of jobs
  (`status`, `vc`, `jobid`, `attempts: [{start_time, end_time, detail: [{ip, gpus: [...]}]}]`,
  `submitted_time`, `user`; times "YYYY-MM-DD HH:MM:SS") → `DLTWorkload` (SCED²'s GPU-locality cluster;
  `load_philly_log`; config: `workload.source: philly_log`, `workload.path`).
* **Helios** (SenseTime, S-Lab-System-Group/HeliosData, SC '21): a cluster's `cluster_log.csv` (Venus,
  Earth, Saturn or Uranus) with the header `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,
  start_time,end_time,duration,queue` (any column order) → `DDLWorkload` (DAS's GPU cloud; `load_helios`;
  config: `workload.source: helios`, `workload.helios_csv`).

The package never ships them: download them from those repositories. Rules, as the other loaders':

* a malformed entry is a `ValueError` of one line naming the file, the line (Helios) or the entry's index
  and `jobid` (Philly: a JSON list has no rows), and the field: a missing key or column, a wrong type, a
  time that does not parse, a non-numeric or negative count, a row with more or fewer fields than the
  header, a repeated job id; an empty trace or one whose every job is dropped is an error naming the counts;
* jobs that cannot be scheduled are dropped and counted per reason in the report, never repaired:
  Philly `no_attempt` (no recorded scheduling attempt), `missing_time` (an attempt without a start or end
  time: a logging error, or still running at the snapshot), `no_gpu`, `zero_duration`; Helios `no_gpu`
  (CPU jobs, `gpu_num` 0), `zero_duration`, `state` (a state outside `states`, when given);
* a job wider than the cluster is an error naming it, unless `drop_too_wide` / `drop_too_large` (then
  dropped and counted);
* submit times count seconds from the trace's first kept submission; the jobs are sorted by them (stable).

What each trace leaves out, filled by a documented choice (an argument, never silent):
* Philly records no model: every job trains `model` (default resnet50, one of SCED²'s six). Its run time
  is the job's wall time, from its first attempt's start to its last attempt's end (the trace authors'
  definition in their analysis notebook); its GPUs are its last attempt's (`detail[*].gpus`).
* Helios records no memory and no model: each instance asks `mem_per_gpu_mib` per GPU (default a V100
  machine's memory over its 8 GPUs), and the model is DAS's `unknown`. A job's `node_num` nodes are its
  instances, each with `gpu_num / node_num` GPUs and `cpu_num / node_num` cores (in DAS's 1/100 units,
  rounded up when `node_num` does not divide them: counted as `rounded_up`). Its work is `duration`
  (end − start, s, at nominal speed).
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jaxsched.workloads.ddl import UNKNOWN_MODEL, V100_MACHINE, DDLWorkload, make_ddl_workload
from jaxsched.workloads.dlt import DLT_MODELS, DLTReport, DLTWorkload, model_index, wider_than_cluster

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
HELIOS_COLUMNS = (
    "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time",
    "end_time", "duration", "queue",
)  # fmt: skip
HELIOS_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")


def _time(where: str, field: str, text) -> float:
    """Seconds since the epoch of a trace time ("YYYY-MM-DD HH:MM:SS"), or a one-line error."""
    if not isinstance(text, str):
        raise ValueError(f'{where}: {field} must be a time string "YYYY-MM-DD HH:MM:SS", got {text!r}')
    try:
        # read as UTC: only differences matter, and no local clock change may bend them
        return datetime.strptime(text.strip(), TIME_FORMAT).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        raise ValueError(f'{where}: {field} {text!r} is not a time "YYYY-MM-DD HH:MM:SS"') from None


# ---- Philly ----------------------------------------------------------------------------------------------
def _philly_job(where: str, entry) -> tuple[str, float, int, float] | str:
    """`(jobid, submit, gpus, run time)` of one `cluster_job_log` entry, or the reason it is dropped."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: a job must be a JSON object, got {type(entry).__name__}")
    for key in ("jobid", "attempts", "submitted_time"):
        if key not in entry:
            raise ValueError(f"{where}: no {key!r} key")
    submit = _time(where, "submitted_time", entry["submitted_time"])
    attempts = entry["attempts"]
    if not isinstance(attempts, list):
        raise ValueError(f"{where}: attempts must be a list, got {type(attempts).__name__}")
    if not attempts:
        return "no_attempt"
    for i, a in enumerate(attempts):
        if not isinstance(a, dict) or "detail" not in a or not isinstance(a["detail"], list):
            raise ValueError(f"{where}: attempts[{i}] must be an object with a 'detail' list")
    times = [(a.get("start_time"), a.get("end_time")) for a in attempts]
    if any(t in (None, "", "None") for pair in times for t in pair):
        return "missing_time"
    start = _time(where, "attempts[0].start_time", times[0][0])
    end = _time(where, f"attempts[{len(attempts) - 1}].end_time", times[-1][1])
    gpus = 0
    for j, machine in enumerate(attempts[-1]["detail"]):
        if not isinstance(machine, dict) or not isinstance(machine.get("gpus"), list):
            raise ValueError(f"{where}: attempts[{len(attempts) - 1}].detail[{j}].gpus must be a list")
        gpus += len(machine["gpus"])
    if gpus == 0:
        return "no_gpu"
    if end - start <= 0:
        return "zero_duration"
    return str(entry["jobid"]), submit, gpus, end - start


def load_philly_log(
    path: str | Path, cluster_gpus: int | None = None, drop_too_wide: bool = False, model: str = "resnet50"
) -> tuple[DLTWorkload, DLTReport]:
    """Read a Philly `cluster_job_log` (module docstring) into a `DLTWorkload` in arrival order and its
    report (`dropped`: count per reason; `mapped`: the jobs given `model`)."""
    path = Path(path)
    index = model_index(model)
    if index is None:
        raise ValueError(f"model must be one of {', '.join(DLT_MODELS)} (Philly records none), got {model!r}")
    if cluster_gpus is not None and cluster_gpus < 1:
        raise ValueError(f"cluster_gpus must be >= 1, got {cluster_gpus}")
    if not path.is_file():
        raise FileNotFoundError(f"Philly job log not found: {path}")
    try:
        entries = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: a cluster_job_log is a JSON list of jobs, got {type(entries).__name__}")
    if not entries:
        raise ValueError(f"{path}: no jobs (an empty list)")
    jobs, dropped, seen, too_wide = [], Counter(), {}, 0
    for k, entry in enumerate(entries):
        named = isinstance(entry, dict) and "jobid" in entry
        where = f"{path}: job {k}" + (f" ({entry['jobid']})" if named else "")
        job = _philly_job(where, entry)
        if isinstance(job, str):
            dropped[job] += 1
            continue
        jobid, submit, gpus, duration = job
        if jobid in seen:
            raise ValueError(f"{where}: jobid repeats job {seen[jobid]}")
        seen[jobid] = k
        if wider_than_cluster(f"{where}:", gpus, cluster_gpus, drop_too_wide):
            too_wide += 1
            continue
        jobs.append((submit, k, gpus, duration))
    if not jobs:
        raise ValueError(f"{path}: every job dropped ({_counts(dropped, too_wide)})")
    submits = np.array([j[0] for j in jobs], np.float64)
    order = np.argsort(submits, kind="stable")
    submit = submits[order] - submits.min()
    workload = DLTWorkload(
        job_id=jnp.asarray([jobs[i][1] for i in order], jnp.int32),  # the entry's index in the log
        submit=jnp.asarray(submit, jnp.float32),
        gpus=jnp.asarray([jobs[i][2] for i in order], jnp.int32),
        duration=jnp.asarray([jobs[i][3] for i in order], jnp.float32),
        model=jnp.full(len(jobs), index, jnp.int32),
    )
    report = DLTReport(
        source=str(path), layout="philly_log", n_rows=len(entries), n_jobs=len(jobs),
        n_dropped_too_wide=too_wide, was_sorted=bool(np.all(np.diff(submits) >= 0)),
        mapped={f"no model → {DLT_MODELS[index]}": len(jobs)}, dropped=dict(dropped),
    )  # fmt: skip
    return workload, report


def _counts(dropped: Counter, too_wide: int = 0) -> str:
    parts = [f"{n:,} {reason}" for reason, n in dropped.items()]
    return ", ".join(parts + [f"{too_wide:,} too wide for the cluster"] * bool(too_wide)) or "none kept"


# ---- Helios ----------------------------------------------------------------------------------------------
def _count(path: Path, line: int, column: str, text: str) -> int:
    """A whole, non-negative count of a Helios row, or a one-line error."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}: {column} {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ValueError(f"{path}: line {line}: {column} must be a whole number >= 0, got {text!r}")
    return int(value)


def load_helios(
    path: str | Path, *, machine: dict = V100_MACHINE, n_machines: int = 8, drop_too_large: bool = False,
    mem_per_gpu_mib: int | None = None, states=None,
) -> tuple[DDLWorkload, dict]:  # fmt: skip
    """Read a Helios `cluster_log.csv` (module docstring) into a `DDLWorkload` sorted by submit and a
    report: `n_rows`, `n_jobs`, `dropped` (count per reason), `rounded_up`, `states` (kept jobs per state),
    `was_sorted`. `states`: the job states kept (default all of `HELIOS_STATES`)."""
    path = Path(path)
    mem = machine["mem"] // max(machine["gpu"] // 100, 1) if mem_per_gpu_mib is None else mem_per_gpu_mib
    keep_states = HELIOS_STATES if states is None else tuple(s.upper() for s in states)
    if not path.is_file():
        raise FileNotFoundError(f"Helios cluster log not found: {path}")
    if isinstance(n_machines, bool) or not isinstance(n_machines, int | np.integer) or n_machines < 1:
        raise ValueError(f"n_machines must be an int >= 1, got {n_machines!r}")
    with path.open(newline="") as f:
        rows = [(i + 1, r) for i, r in enumerate(csv.reader(f)) if any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"{path}: empty file (a Helios cluster_log.csv has a header and job rows)")
    header = [c.strip() for c in rows[0][1]]
    missing = [c for c in ("job_id", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "duration")
               if c not in header]  # fmt: skip
    if missing:
        raise ValueError(f"{path}: line {rows[0][0]}: the header has no {', '.join(missing)} column(s)")
    col = {name: header.index(name) for name in header}
    cols = {k: [] for k in ("job_id", "submit", "n_inst", "gpu", "cpu", "mem", "work")}
    dropped, kept_states, seen, rounded = Counter(), Counter(), {}, 0
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise ValueError(f"{path}: line {line}: {len(row)} fields, the header has {len(header)}")
        cell = {name: row[i].strip() for name, i in col.items()}
        job_id = _count(path, line, "job_id", cell["job_id"])
        if job_id in seen:
            raise ValueError(f"{path}: line {line}: job_id {job_id} repeats line {seen[job_id]}")
        seen[job_id] = line
        gpus, cpus, nodes, duration = (
            _count(path, line, c, cell[c]) for c in ("gpu_num", "cpu_num", "node_num", "duration")
        )
        submit = _time(f"{path}: line {line}", "submit_time", cell["submit_time"])
        state = cell["state"].upper()
        if state not in keep_states:
            dropped["state"] += 1
            continue
        if gpus == 0:
            dropped["no_gpu"] += 1
            continue
        if duration == 0:
            dropped["zero_duration"] += 1
            continue
        if nodes == 0:
            raise ValueError(f"{path}: line {line}: node_num must be >= 1 for a job with {gpus} GPUs")
        gpu, cpu = -(-gpus * 100 // nodes), -(-cpus * 100 // nodes)
        rounded += int(gpu * nodes != gpus * 100 or cpu * nodes != cpus * 100)
        fits = gpu <= machine["gpu"] and cpu <= machine["cpu"] and mem * gpu // 100 <= machine["mem"]
        if not fits or nodes > n_machines:
            if not drop_too_large:
                raise ValueError(
                    f"{path}: line {line}: job {job_id} ({nodes} node(s), {gpus} GPUs, {cpus} CPUs) does not "
                    f"fit the empty cluster of {n_machines} machines (drop_too_large=True drops such jobs)"
                )
            dropped["too_large"] += 1
            continue
        kept_states[state] += 1
        for k, v in zip(cols, (job_id, submit, nodes, gpu, cpu, mem * gpu // 100, duration), strict=True):
            cols[k].append(v)
    if not cols["job_id"]:
        raise ValueError(f"{path}: no job kept ({_counts(dropped) if dropped else 'only a header'})")
    submit = np.asarray(cols["submit"], np.float64)
    order = np.argsort(submit, kind="stable")
    arrays = {k: np.asarray(v)[order] for k, v in cols.items()}
    workload = make_ddl_workload(
        **{k: arrays[k] for k in ("job_id", "n_inst", "gpu", "cpu", "mem")},
        submit=np.round(arrays["submit"] - submit.min()).astype(np.int64),
        work=arrays["work"].astype(np.float32),
        model=np.full(len(order), UNKNOWN_MODEL, np.int64),
        name=path.parent.name or path.stem,
    )
    report = {
        "n_rows": len(rows) - 1, "n_jobs": workload.num_jobs, "dropped": dict(dropped),
        "rounded_up": rounded, "states": dict(kept_states), "was_sorted": bool(np.all(np.diff(submit) >= 0)),
    }  # fmt: skip
    return workload, report
