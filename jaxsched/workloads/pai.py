"""Load DDL jobs from the Alibaba PAI 2020 GPU trace (alibaba/clusterdata, cluster-trace-gpu-v2020).

Tables are headerless CSVs (column names in the trace's `*.header` files); a first row equal to the
column names is accepted and skipped. Used columns:
  pai_job_table:  job_name, inst_id, user, status, start_time, end_time
  pai_task_table: job_name, task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem,
                  plan_gpu, gpu_type
  pai_group_tag_table (optional): inst_id, user, gpu_type_spec, group, workload

Rules:
  * a job is a row of the job table; `job_id` = its 0-based data-row index there (to trace it back);
  * its GPU task is the task with the largest `inst_num * plan_gpu` among those with `round(plan_gpu) >= 1`
    (ties: the first in the file); `n_inst = inst_num`, `gpu = round(plan_gpu)` (per instance, 100 = one
    GPU), `cpu = round(plan_cpu)` (100 = one core), `mem = round(plan_mem * 1024)` (GB -> MiB),
    `submit = round(job start_time)`, `work = task end_time - task start_time` (round = half up);
  * kept: job status Terminated (case-insensitive) with a GPU task. Dropped and counted in
    `report["dropped"]`, checked in this order: `not_terminated`, `no_gpu_task`, `missing_time` (empty/NaN
    job start or task start/end), `missing_resource` (empty/NaN inst_num, plan_cpu or plan_mem),
    `zero_duration` (end == start), then `too_large` (does not fit the empty cluster of `n_machines`
    identical `machine`s; only with `drop_too_large=True`, else a `ValueError`);
  * a malformed trace is a `ValueError` naming the file and line (and job_name and field where there is
    one): a row with fewer or more fields than the header, a non-numeric value in a used numeric column,
    infinity, a negative inst_num/plan_cpu/plan_mem/plan_gpu or a negative duration (task end < start) in
    any task row, a non-integer or zero inst_num on a kept job's GPU task, a duplicate job_name, a submit
    time outside int32; and no job left (an empty job table, or every row dropped: the counts are named);
  * model: the job's `inst_id` looked up in the group tag table (first row wins); its `workload` is matched
    case-insensitively by substring against `MODEL_ALIASES` (e.g. "ResNet50" -> resnet-50, "vgg" -> vgg-16),
    else "unknown";
  * jobs are sorted by submit (stable).
Plain `csv` + numpy: no pandas.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from jaxsched.workloads import ddl
from jaxsched.workloads.ddl import MODEL_NAMES, UNKNOWN_MODEL, V100_MACHINE, DDLWorkload, make_ddl_workload

__all__ = ["JOB_COLUMNS", "TASK_COLUMNS", "GROUP_TAG_COLUMNS", "MODEL_ALIASES", "load_pai", "model_index"]

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
    "plan_gpu", "gpu_type",
)  # fmt: skip
GROUP_TAG_COLUMNS = ("inst_id", "user", "gpu_type_spec", "group", "workload")

#: Substrings (lower case) that identify each DL2 model in a PAI `workload` tag; checked in this order.
MODEL_ALIASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("resnext-110", ("resnext",)),
    ("resnet-50", ("resnet",)),
    ("vgg-16", ("vgg",)),
    ("inception-bn", ("inception",)),
    ("seq2seq", ("seq2seq",)),
    ("cnn-text-classification", ("cnn-text", "text-classification", "textcnn")),
    ("dssm", ("dssm",)),
    ("wlm", ("wlm",)),
)
DROP_REASONS = (
    "not_terminated",
    "no_gpu_task",
    "missing_time",
    "missing_resource",
    "zero_duration",
    "too_large",
)
_INT32_MAX = int(np.iinfo(np.int32).max)


def _round(x: float) -> int:
    """Round half up (so `plan_gpu >= 0.5` is exactly `_round(plan_gpu) >= 1`)."""
    return int(math.floor(x + 0.5))


def model_index(workload: str) -> int:
    """Index into `MODEL_NAMES` of a PAI workload tag (case-insensitive substring match), else unknown."""
    s = workload.strip().lower()
    if s:
        for name, keys in MODEL_ALIASES:
            if any(k in s for k in keys):
                return MODEL_NAMES.index(name)
    return UNKNOWN_MODEL


def _rows(path: Path, columns: tuple[str, ...]):
    """Yield (line number, row) of a headerless CSV (a header row equal to `columns` is skipped); a row with
    a different field count is a `ValueError` naming the file, the line and the first missing column."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        first = True
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if first:
                first = False
                if tuple(c.strip() for c in row) == columns:
                    continue
            if len(row) < len(columns):
                raise ValueError(
                    f"{path}: line {reader.line_num}: missing column '{columns[len(row)]}' (found {len(row)} "
                    f"fields, the table has {len(columns)}: {','.join(columns)})"
                )
            if len(row) > len(columns):
                raise ValueError(
                    f"{path}: line {reader.line_num}: found {len(row)} fields, the table has {len(columns)}: "
                    f"{','.join(columns)}"
                )
            yield reader.line_num, row


def _num(path: Path, line: int, column: str, tok: str) -> float:
    """A numeric field; empty or 'nan' -> NaN (missing). Non-numbers and infinities are errors."""
    tok = tok.strip()
    if not tok:
        return math.nan
    try:
        v = float(tok)
    except ValueError:
        raise ValueError(f"{path}: line {line}: column '{column}' is not a number: {tok!r}") from None
    if math.isinf(v):
        raise ValueError(f"{path}: line {line}: column '{column}' is not finite: {tok!r}")
    return v


def _read_jobs(job_csv: Path) -> tuple[dict[str, int], list[tuple]]:
    """`(job_name -> index, jobs)`: the job table's rows as `(line, job_name, inst_id, status, start)`;
    a repeated job_name is an error."""
    names: dict[str, int] = {}
    jobs = []  # (line, job_name, inst_id, status, start)
    for line, row in _rows(job_csv, JOB_COLUMNS):
        name = row[0].strip()
        if name in names:
            raise ValueError(
                f"{job_csv}: line {line}: duplicate job_name {name!r} (first at line {jobs[names[name]][0]})"
            )
        names[name] = len(jobs)
        jobs.append((line, name, row[1].strip(), row[3].strip(), _num(job_csv, line, "start_time", row[4])))
    return names, jobs


def _task_values(task_csv: Path, line: int, name: str, row: list[str]) -> dict[str, float]:
    """A task row's numeric fields by name (NaN: missing); a negative amount or duration is an error."""
    v = {
        c: _num(task_csv, line, c, row[TASK_COLUMNS.index(c)])
        for c in ("inst_num", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu")
    }
    for c in ("inst_num", "plan_cpu", "plan_mem", "plan_gpu"):
        if v[c] < 0:  # NaN compares False: missing is not negative
            raise ValueError(f"{task_csv}: line {line}: job_name {name!r}: field '{c}' is negative: {v[c]:g}")
    if v["end_time"] < v["start_time"]:
        raise ValueError(
            f"{task_csv}: line {line}: job_name {name!r}: field 'end_time' {v['end_time']:g} is before "
            f"start_time {v['start_time']:g} (negative duration)"
        )
    return v


def _pick_gpu_tasks(task_csv: Path, names: dict[str, int]) -> tuple[dict[int, tuple], int, int]:
    """`(job index -> its GPU task (score, line, inst_num, start, end, cpu, mem, gpu), task rows, orphan
    tasks)`: each job's task with the largest `inst_num * plan_gpu` (ties: the first in the file)."""
    best: dict[int, tuple] = {}  # job index -> (score, line, inst_num, start, end, cpu, mem, gpu)
    n_tasks = orphans = 0
    for line, row in _rows(task_csv, TASK_COLUMNS):
        n_tasks += 1
        name = row[0].strip()
        v = _task_values(task_csv, line, name, row)
        j = names.get(name)
        if j is None:
            orphans += 1
            continue
        if not (v["plan_gpu"] >= 0.5):  # round(plan_gpu) >= 1; NaN is no GPU
            continue
        score = v["inst_num"] * v["plan_gpu"] if not math.isnan(v["inst_num"]) else -1.0
        if j not in best or score > best[j][0]:
            best[j] = (
                score,
                line,
                v["inst_num"],
                v["start_time"],
                v["end_time"],
                v["plan_cpu"],
                v["plan_mem"],
                v["plan_gpu"],
            )
    return best, n_tasks, orphans


def _drop_reason(status: str, start: float, t: tuple | None) -> str | None:
    """Why a job (its status, start and GPU task `t`) is dropped, in `DROP_REASONS` order; None: kept."""
    if status.lower() != "terminated":
        return "not_terminated"
    if t is None:
        return "no_gpu_task"
    if math.isnan(start) or math.isnan(t[3]) or math.isnan(t[4]):
        return "missing_time"
    if math.isnan(t[2]) or math.isnan(t[5]) or math.isnan(t[6]):
        return "missing_resource"
    if t[4] == t[3]:
        return "zero_duration"
    return None


def _kept_submit(job_csv: Path, task_csv: Path, jline: int, name: str, start: float, t: tuple) -> int:
    """The kept job's submit time (rounded start, s); its GPU task's fields must be whole and fit int32."""
    _, tline, inst_num, _, _, cpu, mem, _ = t
    if inst_num < 1 or inst_num != math.floor(inst_num):
        raise ValueError(
            f"{task_csv}: line {tline}: job_name {name!r}: field 'inst_num' must be a whole number >= 1, "
            f"got {inst_num:g}"
        )
    submit = _round(start)
    if not -_INT32_MAX <= submit <= _INT32_MAX:
        raise ValueError(
            f"{job_csv}: line {jline}: job_name {name!r}: field 'start_time' {start:g} "
            "is outside int32 seconds"
        )
    for field, val in (
        ("plan_cpu", _round(cpu)),
        ("plan_mem", _round(mem * 1024)),
        ("inst_num", inst_num),
    ):
        if val > _INT32_MAX:
            raise ValueError(f"{task_csv}: line {tline}: job_name {name!r}: field '{field}' overflows int32")
    return submit


def _keep_jobs(
    job_csv: Path, task_csv: Path, jobs: list[tuple], best: dict[int, tuple]
) -> tuple[dict[str, list], dict[str, int]]:
    """The kept jobs' columns by name (job_id, submit, n_inst, gpu, cpu, mem, work, inst: lists `[J]` in
    file order) and the drop count per reason."""
    dropped = dict.fromkeys(DROP_REASONS, 0)
    cols: dict[str, list] = {
        k: [] for k in ("job_id", "submit", "n_inst", "gpu", "cpu", "mem", "work", "inst")
    }
    for j, (jline, name, inst_id, status, start) in enumerate(jobs):
        t = best.get(j)
        reason = _drop_reason(status, start, t)
        if reason is not None:
            dropped[reason] += 1
            continue
        submit = _kept_submit(job_csv, task_csv, jline, name, start, t)
        _, _, inst_num, t_start, t_end, cpu, mem, gpu = t
        cols["job_id"].append(j)
        cols["submit"].append(submit)
        cols["n_inst"].append(int(inst_num))
        cols["gpu"].append(_round(gpu))
        cols["cpu"].append(_round(cpu))
        cols["mem"].append(_round(mem * 1024))
        cols["work"].append(t_end - t_start)
        cols["inst"].append(inst_id)
    return cols, dropped


def _models(group_tag_csv, inst_ids: list[str]) -> list[int]:
    """The `MODEL_NAMES` index of each job (by its `inst_id`) from the group tag table (first row wins)."""
    tags: dict[str, str] = {}
    if group_tag_csv is not None:
        for _, row in _rows(Path(group_tag_csv), GROUP_TAG_COLUMNS):
            tags.setdefault(row[0].strip(), row[4])
    return [model_index(tags.get(i, "")) for i in inst_ids]


def _sorted_workload(cols: dict[str, list], model: list[int], name: str) -> tuple[DDLWorkload, bool]:
    """`(the kept jobs as a DDLWorkload sorted by submit (stable), were they already in submit order)`."""
    submit = np.asarray(cols["submit"], dtype=np.int64)
    order = np.argsort(submit, kind="stable")
    was_sorted = bool(np.all(np.diff(submit) >= 0)) if submit.size else True
    arrays = {k: np.asarray(v)[order] for k, v in cols.items()}
    w = make_ddl_workload(
        **{k: arrays[k] for k in ("job_id", "submit", "n_inst", "gpu", "cpu", "mem")},
        work=arrays["work"].astype(np.float32),
        model=np.asarray(model, dtype=np.int64)[order],
        name=name,
    )
    return w, was_sorted


def load_pai(
    job_csv,
    task_csv,
    group_tag_csv=None,
    *,
    machine: dict = V100_MACHINE,
    n_machines: int = 8,
    drop_too_large: bool = True,
) -> tuple[DDLWorkload, dict]:
    """Read PAI 2020 job and task tables (rules in the module docstring) into a sorted `DDLWorkload` and a
    report: `n_job_rows`, `n_task_rows`, `n_jobs`, `dropped` (count per reason), `orphan_tasks` (tasks of
    jobs not in the job table), `models` (count per model name), `was_sorted`, `machine`, `n_machines`."""
    job_csv, task_csv = Path(job_csv), Path(task_csv)
    if isinstance(n_machines, bool) or not isinstance(n_machines, (int, np.integer)) or n_machines < 1:
        raise ValueError(f"n_machines must be an int >= 1, got {n_machines!r}")
    for k in ("gpu", "cpu", "mem"):
        if k not in machine:
            raise ValueError(f"machine must give 'gpu', 'cpu' and 'mem' capacities, got {machine!r}")

    names, jobs = _read_jobs(job_csv)
    best, n_tasks, orphans = _pick_gpu_tasks(task_csv, names)
    cols, dropped = _keep_jobs(job_csv, task_csv, jobs, best)
    model = _models(group_tag_csv, cols.pop("inst"))

    # ---- sort, build, drop too large ---------------------------------------------------------------------
    w, was_sorted = _sorted_workload(cols, model, job_csv.name.removesuffix(".csv"))
    caps = {f"{k}_cap": np.full(n_machines, int(machine[k]), dtype=np.int64) for k in ("gpu", "cpu", "mem")}
    if drop_too_large:
        w, dropped["too_large"] = ddl.drop_too_large(w, **caps)
    else:
        ddl.validate_ddl_workload(w, **caps)
    if w.num_jobs == 0:  # a 0-job workload would only fail later, far from its cause
        why = ", ".join(f"{k} {v}" for k, v in dropped.items() if v) or "none"
        raise ValueError(
            f"{job_csv}: no jobs to schedule: {len(jobs)} job rows ({n_tasks} task rows in {task_csv.name}); "
            f"dropped: {why}"
        )
    counts = np.bincount(np.asarray(w.model), minlength=len(MODEL_NAMES))
    report = {
        "n_job_rows": len(jobs),
        "n_task_rows": n_tasks,
        "n_jobs": w.num_jobs,
        "dropped": dropped,
        "orphan_tasks": orphans,
        "models": {n: int(c) for n, c in zip(MODEL_NAMES, counts, strict=True)},
        "was_sorted": was_sorted,
        "machine": dict(machine),
        "n_machines": int(n_machines),
    }
    return w, report
