"""Read and write Standard Workload Format (SWF) traces, following RLScheduler's rules.

RLScheduler = DIR-LAB/deep-batch-scheduler, whose numbers we reproduce.

SWF (Parallel Workloads Archive) is plain text: header lines start with `;` (`; MaxNodes: 256`,
`; MaxProcs: 4392`; keys case-insensitive), blank lines are skipped, and each job is one line of 18
whitespace-separated numbers, -1 meaning unknown: 1 job id, 2 submit, 3 wait, 4 run time, 5 allocated
procs, 6 avg cpu, 7 used mem, 8 requested procs, 9 requested time, 10 requested mem, 11 status, 12 user,
13 group, 14 executable, 15 queue, 16 partition, 17 preceding job, 18 think time.

Rules (each violation is a `ValueError` naming the file, its 1-based line number and the column):
  * machine size = `MaxProcs`, else `MaxNodes`; a file with neither needs `n_cores=`, which also
    overrides the header when given. A `MaxProcs`/`MaxNodes` line whose value is < 1 is not a machine
    size: an error naming its line (not reported as a missing header), unless `n_cores=` is given.
  * a line with fewer than 18 columns is an error; extra trailing columns are ignored only when every data
    line has the same count (ALCF theta_walltime.swf carries a 19th all-zero column), else an error.
  * numbers may be written as floats ("12.0"); times are rounded to integers, while job ids and processor
    counts (columns 1, 5, 8) must be whole numbers. Non-numbers are errors. Job ids must be unique.
  * run time 0 -> the job is dropped; negative -> 10 s. Both are counted in the `SWFReport`
    (`SWFReport.changes()` says it in a line); a trace whose every kept run time is negative is an error
    (10 s for every job would be a made-up workload). The remaining rules apply to the jobs kept.
  * cores = max(allocated procs, requested procs); both <= 0 is an error.
  * requested time -1 (unknown: e.g. the Lublin model's traces) -> the run time (counted in the report),
    as RLScheduler does; 0 or another negative value is an error. Negative submit time is an error.
  * user = column 12, queue = column 15, job_id = column 1.
  * a job wider than the machine is an error unless `drop_too_wide=True` (dropped and counted).
  * order: `sort="submit"` (default) sorts stably by (submit, job id); `sort="job_id"` sorts by job id
    (RLScheduler's order) and `sort="none"` keeps file order -- both raise if submits then decrease,
    since the simulators need arrival order. `SWFReport.was_sorted` says if the file was in submit order.
Files ending in `.gz` are read and written through gzip.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxsched.workloads.base import Workload, make_workload, validate_workload

__all__ = [
    "SWFHeader",
    "SWFReport",
    "load_swf",
    "load_swf_with_report",
    "parse_swf_text",
    "parse_swf_text_with_report",
    "write_swf",
]

N_COLUMNS = 18
COLUMN_NAMES = (
    "job id",
    "submit time",
    "wait time",
    "run time",
    "allocated procs",
    "average cpu time",
    "used memory",
    "requested procs",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
)
# 0-based indices of the columns we use.
_JOB_ID, _SUBMIT, _RUN, _ALLOC, _REQ_PROCS, _REQ_TIME, _USER, _QUEUE = 0, 1, 3, 4, 7, 8, 11, 14
_USED = (_JOB_ID, _SUBMIT, _RUN, _ALLOC, _REQ_PROCS, _REQ_TIME, _USER, _QUEUE)
_INT32_MAX = int(np.iinfo(np.int32).max)
_HEADER_RE = re.compile(r"^;\s*([A-Za-z][\w ]*?)\s*:\s*(.*?)\s*$")
_SORTS = ("submit", "job_id", "none")


@dataclass(frozen=True)
class SWFHeader:
    """The `;` header: machine size and every `; Key: value` line (`fields`, raw strings, keys as written).

    `max_nodes` is `MaxNodes` (0 if absent or < 1); `max_procs` is `MaxProcs`, else `MaxNodes`, else 0
    (values < 1 count as absent here; the parser rejects them unless `n_cores=` is given).
    """

    max_nodes: int = 0
    max_procs: int = 0
    fields: dict[str, str] = field(default_factory=dict)

    def get(self, key: str, default: str | None = None) -> str | None:
        """A header field by case-insensitive key."""
        key = key.lower()
        for k, v in self.fields.items():
            if k.lower() == key:
                return v
        return default


@dataclass(frozen=True)
class SWFReport:
    """What `load_swf_with_report` did to the file's rows.

    n_rows: data lines in the file; n_jobs: jobs returned (n_rows minus the drops);
    n_dropped_zero_runtime, n_negative_runtime_fixed (set to 10 s), n_dropped_too_wide;
    n_req_time_from_run: jobs whose requested time was -1 (unknown) and became the run time; n_columns:
    columns per data line (18, or more when the file carries ignored extra columns); was_sorted: file rows
    (kept jobs) were already in non-decreasing submit order; max_procs: the machine size used.
    """

    source: str
    header: SWFHeader
    n_rows: int
    n_jobs: int
    n_dropped_zero_runtime: int
    n_negative_runtime_fixed: int
    n_dropped_too_wide: int
    n_req_time_from_run: int
    n_columns: int
    was_sorted: bool
    max_procs: int

    def counts(self) -> dict:
        """The rows read, the jobs kept and every drop and repair, as plain numbers (e.g. for JSON)."""
        return {"source": self.source, "rows": self.n_rows, "jobs": self.n_jobs,
                "dropped_zero_runtime": self.n_dropped_zero_runtime,
                "dropped_too_wide": self.n_dropped_too_wide,
                "negative_runtime_set_to_10s": self.n_negative_runtime_fixed,
                "req_time_from_run": self.n_req_time_from_run}  # fmt: skip

    def changes(self) -> str:
        """One line of what was dropped or repaired (RLScheduler's rules), "" when nothing was."""
        done = [(self.n_dropped_zero_runtime, "dropped with run time 0"),
                (self.n_dropped_too_wide, "dropped as wider than the machine"),
                (self.n_negative_runtime_fixed, "had a negative run time, set to 10 s"),
                (self.n_req_time_from_run, "had no requested time, set to the run time")]  # fmt: skip
        said = [f"{n:,} {what}" for n, what in done if n]
        return f"{self.source}: of {self.n_rows:,} jobs, " + "; ".join(said) if said else ""


def _read_text(path: Path) -> str:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    return path.read_text(encoding="utf-8", errors="replace")


def _header_int(source: str, lineno: int, key: str, value: str) -> int:
    m = re.match(r"^[+-]?\d+(\.0*)?", value)
    if m is None or (len(value) > m.end() and not value[m.end()].isspace()):
        raise ValueError(f"{source}: line {lineno}: header field '{key}' is not an integer: {value!r}")
    return int(float(m.group(0)))


def _bad_token(source: str, lines: np.ndarray, rows: list[list[str]]) -> ValueError:
    """Find the first token `float` rejects and describe it."""
    for lineno, toks in zip(lines.tolist(), rows, strict=True):
        for c, tok in enumerate(toks[:N_COLUMNS]):
            try:
                float(tok)
            except ValueError:
                return ValueError(
                    f"{source}: line {lineno}: column {c + 1} ({COLUMN_NAMES[c]}) is not a number: {tok!r}"
                )
    return ValueError(f"{source}: could not parse the data lines as numbers")


def _split_lines(
    text: str, source: str
) -> tuple[dict[str, str], dict[str, int], dict[str, tuple[int, str]], list[list[str]], list[int]]:
    """`(header fields, MaxNodes/MaxProcs values, their (line, key as written), data rows' tokens, data
    rows' 1-based line numbers)`; blank lines are skipped, `;` lines that are not `Key: value` ignored."""
    fields: dict[str, str] = {}
    header_ints: dict[str, int] = {}
    header_lines: dict[str, tuple[int, str]] = {}  # maxnodes/maxprocs -> (line, key as written)
    rows: list[list[str]] = []
    linenos: list[int] = []
    for lineno, raw in enumerate(text.split("\n"), 1):
        s = raw.strip()
        if not s:
            continue
        if s[0] == ";":
            m = _HEADER_RE.match(s)
            if m is not None:
                key, value = m.group(1), m.group(2)
                fields[key] = value
                low = key.lower()
                if low in ("maxnodes", "maxprocs"):
                    header_ints[low] = _header_int(source, lineno, key, value)
                    header_lines[low] = (lineno, key)
            continue
        rows.append(s.split())
        linenos.append(lineno)
    return fields, header_ints, header_lines, rows, linenos


def _machine_size(
    source: str,
    n_cores: int | None,
    fields: dict[str, str],
    header_ints: dict[str, int],
    header_lines: dict[str, tuple[int, str]],
) -> tuple[SWFHeader, int, str, int]:
    """`(header, machine size, what gave the size (for messages), max_nodes)`: `n_cores` if given, else
    the header's MaxProcs, else its MaxNodes."""
    if n_cores is None:  # the header gives the machine size: a value < 1 is not "no header"
        for low in ("maxprocs", "maxnodes"):
            if header_ints.get(low, 1) < 1:
                lineno, key = header_lines[low]
                raise ValueError(
                    f"{source}: line {lineno}: header field '{key}' is {header_ints[low]}, not a machine "
                    "size (must be >= 1); fix the line or pass n_cores= (CLI: --n-cores)"
                )
    max_nodes = max(header_ints.get("maxnodes", 0), 0)
    header_procs = max(header_ints.get("maxprocs", 0), 0) or max_nodes
    header = SWFHeader(max_nodes=max_nodes, max_procs=header_procs, fields=fields)
    if n_cores is not None:
        limit = int(n_cores)
        limit_what = f"n_cores={limit}"
        # The header's node count only describes the machine when n_cores does not resize it.
        if header_procs and header_procs != limit:
            max_nodes = 0
    elif header_procs > 0:
        limit = header_procs
        limit_what = f"{'MaxProcs' if 'maxprocs' in header_ints else 'MaxNodes'} {limit}"
    else:
        raise ValueError(
            f"{source}: the file has no 'MaxNodes'/'MaxProcs' header giving the machine size; "
            "pass n_cores= (CLI: --n-cores) to supply it"
        )
    return header, limit, limit_what, max_nodes


def _column_count(source: str, lines: np.ndarray, rows: list[list[str]]) -> int:
    """Columns per data line: 18, or more when every line carries the same extra trailing columns."""
    n_rows = len(rows)
    ncols = np.fromiter(map(len, rows), dtype=np.int64, count=n_rows)
    short = ncols < N_COLUMNS
    if short.any():
        i = int(np.argmax(short))
        raise ValueError(
            f"{source}: line {lines[i]}: found {ncols[i]} columns, SWF needs {N_COLUMNS} "
            "(whitespace-separated, -1 for unknown)"
        )
    n_columns = int(ncols[0])
    if (ncols > N_COLUMNS).any() and (ncols != n_columns).any():
        i = int(np.argmax(ncols > N_COLUMNS))
        raise ValueError(
            f"{source}: line {lines[i]}: found {ncols[i]} columns, SWF has {N_COLUMNS} (extra trailing "
            "columns are only accepted when every data line has the same number of them)"
        )
    return n_columns


def _number_table(source: str, lines: np.ndarray, rows: list[list[str]], n_columns: int) -> np.ndarray:
    """`f64[J, 18]`: each data row's first 18 tokens as numbers (a non-number is an error)."""
    if n_columns > N_COLUMNS:
        flat = [t for toks in rows for t in toks[:N_COLUMNS]]
    else:
        flat = [t for toks in rows for t in toks]
    try:
        return np.array(flat, dtype=np.float64).reshape(len(rows), N_COLUMNS)
    except ValueError:
        raise _bad_token(source, lines, rows) from None


def _used_values(source: str, lines: np.ndarray, rows: list[list[str]], data: np.ndarray) -> np.ndarray:
    """`i64[J, 8]`: the used columns (`_USED` order) rounded to integers; each must be a finite int32."""
    used = data[:, _USED]
    bad = ~np.isfinite(used) | (np.abs(used) > _INT32_MAX)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        c = _USED[j]
        raise ValueError(
            f"{source}: line {lines[i]}: column {c + 1} ({COLUMN_NAMES[c]}) is not a finite int32 "
            f"number: {rows[i][c]!r}"
        )
    return np.rint(used).astype(np.int64)


def _check_whole_numbers(source: str, lines: np.ndarray, rows: list[list[str]], data: np.ndarray) -> None:
    """Raise unless the job ids and processor counts (columns 1, 5, 8) are whole numbers."""
    for c in (_JOB_ID, _ALLOC, _REQ_PROCS):  # an id or a processor count is never fractional
        frac = data[:, c] != np.floor(data[:, c])
        if frac.any():
            i = int(np.argmax(frac))
            which = "" if c == _JOB_ID else f"job id {rows[i][_JOB_ID]}: "
            raise ValueError(
                f"{source}: line {lines[i]}: {which}column {c + 1} ({COLUMN_NAMES[c]}) is not a whole "
                f"number: {rows[i][c]!r}"
            )


def _check_unique_ids(source: str, lines: np.ndarray, job_id: np.ndarray) -> None:
    """Raise at the first line that repeats an earlier job id (`job_id` `i64[J]`, file order)."""
    n_rows = job_id.shape[0]
    by_id = np.argsort(job_id, kind="stable")
    repeat = np.zeros(n_rows, dtype=bool)
    repeat[by_id[1:]] = job_id[by_id[1:]] == job_id[by_id[:-1]]
    if repeat.any():
        i = int(np.argmax(repeat))  # the first line that repeats an earlier job id
        first = int(np.argmax(job_id == job_id[i]))
        raise ValueError(
            f"{source}: line {lines[i]}: column 1 (job id) {job_id[i]} is a duplicate (first at line "
            f"{lines[first]})"
        )


def _parse_columns(
    source: str, rows: list[list[str]], linenos: list[int]
) -> tuple[np.ndarray, np.ndarray, int]:
    """`(line numbers i64[J], used columns i64[J, 8] in `_USED` order, columns per line)`, all checked."""
    lines = np.asarray(linenos, dtype=np.int64)
    if len(rows) == 0:
        raise ValueError(f"{source}: no job lines (only header/blank lines)")
    n_columns = _column_count(source, lines, rows)
    data = _number_table(source, lines, rows, n_columns)
    vals = _used_values(source, lines, rows, data)
    _check_whole_numbers(source, lines, rows, data)
    _check_unique_ids(source, lines, vals[:, 0])
    return lines, vals, n_columns


def _check_kept_jobs(source, lines, job_id, submit, alloc, req_procs, cores, req_time) -> None:
    """Raise at the first kept job (`i64[J]` columns) with a negative submit, no processor count, or a
    requested time that is neither > 0 nor -1."""
    neg_submit = submit < 0
    if neg_submit.any():
        i = int(np.argmax(neg_submit))
        raise ValueError(
            f"{source}: line {lines[i]}: column 2 ({COLUMN_NAMES[_SUBMIT]}) is negative: {submit[i]} "
            f"(job id {job_id[i]})"
        )
    no_cores = cores <= 0
    if no_cores.any():
        i = int(np.argmax(no_cores))
        raise ValueError(
            f"{source}: line {lines[i]}: job id {job_id[i]} has no processor count: column 5 "
            f"({COLUMN_NAMES[_ALLOC]}) = {alloc[i]} and column 8 ({COLUMN_NAMES[_REQ_PROCS]}) = "
            f"{req_procs[i]}"
        )
    bad_req = (req_time <= 0) & (req_time != -1)
    if bad_req.any():
        i = int(np.argmax(bad_req))
        raise ValueError(
            f"{source}: line {lines[i]}: job id {job_id[i]}: column 9 ({COLUMN_NAMES[_REQ_TIME]}) must be "
            f"> 0, or -1 for unknown, got {req_time[i]}"
        )


def _apply_rules(
    source: str, lines: np.ndarray, vals: np.ndarray, limit: int, limit_what: str, drop_too_wide: bool
) -> tuple[list[np.ndarray], tuple[int, int, int, int]]:
    """`([lines, job_id, submit, run, req_time, cores, user, queue], each i64[J'] in file order, (n_zero,
    n_neg, n_req_from_run, n_wide))`: RLScheduler's drops and fixes of the module docstring."""
    n_rows = vals.shape[0]
    job_id, submit, run, alloc, req_procs, req_time, user, queue = vals.T
    keep = run != 0
    n_zero = int(n_rows - keep.sum())
    lines, job_id, submit, run, alloc, req_procs, req_time, user, queue = (
        a[keep] for a in (lines, job_id, submit, run, alloc, req_procs, req_time, user, queue)
    )
    neg_run = run < 0
    n_neg = int(neg_run.sum())
    if n_neg and n_neg == run.size:
        raise ValueError(
            f"{source}: every run time (column 4) is negative ({n_neg:,} jobs, e.g. line {lines[0]}): "
            "no job says how long it ran; RLScheduler's repair (10 s) would make up the whole workload"
        )
    run = np.where(neg_run, 10, run)
    cores = np.maximum(alloc, req_procs)
    _check_kept_jobs(source, lines, job_id, submit, alloc, req_procs, cores, req_time)
    no_req = req_time == -1
    n_req_from_run = int(no_req.sum())
    req_time = np.where(no_req, run, req_time)
    wide = cores > limit
    n_wide = int(wide.sum())
    if n_wide and not drop_too_wide:
        i = int(np.argmax(wide))
        raise ValueError(
            f"{source}: line {lines[i]}: job id {job_id[i]} needs {cores[i]} cores, more than the machine's "
            f"{limit} ({limit_what}); {n_wide} job(s) are too wide -- pass drop_too_wide=True "
            "(CLI: --drop-too-wide) to drop them"
        )
    cols = [lines, job_id, submit, run, req_time, cores, user, queue]
    if n_wide:
        cols = [a[~wide] for a in cols]
    if cols[1].size == 0:
        raise ValueError(
            f"{source}: no jobs left ({n_rows} rows, {n_zero} dropped with zero run time, "
            f"{n_wide} dropped as too wide)"
        )
    return cols, (n_zero, n_neg, n_req_from_run, n_wide)


def _order_jobs(source: str, sort: str, cols: list[np.ndarray]) -> tuple[bool, list[np.ndarray]]:
    """`(were the rows in submit order, the columns `[lines, job_id, submit, ...]` i64[J'] in `sort`
    order)`; raises if submits then decrease (the simulators need arrival order)."""
    lines, job_id, submit = cols[0], cols[1], cols[2]
    was_sorted = bool((np.diff(submit) >= 0).all())
    if sort == "submit":
        order = np.lexsort((job_id, submit))
    elif sort == "job_id":
        order = np.argsort(job_id, kind="stable")
    else:
        order = np.arange(job_id.size)
    lines, job_id, submit, run, req_time, cores, user, queue = (a[order] for a in cols)
    back = np.diff(submit) < 0
    if back.any():
        i = int(np.argmax(back)) + 1
        by = "job id" if sort == "job_id" else "file order"
        raise ValueError(
            f"{source}: jobs in {by} are not in submit order: job id {job_id[i]} (line {lines[i]}) submits "
            f"at {submit[i]}, before job id {job_id[i - 1]} (line {lines[i - 1]}) at {submit[i - 1]}; "
            "the simulators need arrival order -- use sort='submit' (CLI: --order submit)"
        )
    return was_sorted, [lines, job_id, submit, run, req_time, cores, user, queue]


def parse_swf_text_with_report(
    text: str,
    *,
    source: str = "<string>",
    n_cores: int | None = None,
    drop_too_wide: bool = False,
    sort: str = "submit",
    name: str | None = None,
) -> tuple[Workload, SWFReport]:
    """Parse SWF text (rules in the module docstring) into a `Workload` (`i32[J]` arrays) and a report.

    `source` names the text in error messages; `name` defaults to `source`.
    """
    if sort not in _SORTS:
        raise ValueError(f"sort must be one of {_SORTS}, got {sort!r}")
    if n_cores is not None and int(n_cores) < 1:
        raise ValueError(f"n_cores must be >= 1, got {n_cores}")
    fields, header_ints, header_lines, rows, linenos = _split_lines(text, source)
    header, limit, limit_what, max_nodes = _machine_size(source, n_cores, fields, header_ints, header_lines)
    lines, vals, n_columns = _parse_columns(source, rows, linenos)
    cols, (n_zero, n_neg, n_req_from_run, n_wide) = _apply_rules(
        source, lines, vals, limit, limit_what, drop_too_wide
    )
    was_sorted, cols = _order_jobs(source, sort, cols)
    _, job_id, submit, run, req_time, cores, user, queue = cols

    w = make_workload(
        submit=submit,
        run=run,
        cores=cores,
        req_time=req_time,
        user=user,
        queue=queue,
        job_id=job_id,
        max_procs=limit,
        max_nodes=max_nodes,
        name=source if name is None else name,
        validate=False,
    )
    validate_workload(w, limit)
    report = SWFReport(
        source=source,
        header=header,
        n_rows=len(rows),
        n_jobs=int(job_id.size),
        n_dropped_zero_runtime=n_zero,
        n_negative_runtime_fixed=n_neg,
        n_dropped_too_wide=n_wide,
        n_req_time_from_run=n_req_from_run,
        n_columns=n_columns,
        was_sorted=was_sorted,
        max_procs=limit,
    )
    return w, report


def parse_swf_text(
    text: str,
    *,
    source: str = "<string>",
    n_cores: int | None = None,
    drop_too_wide: bool = False,
    sort: str = "submit",
    name: str | None = None,
) -> Workload:
    """`parse_swf_text_with_report` without the report."""
    return parse_swf_text_with_report(
        text, source=source, n_cores=n_cores, drop_too_wide=drop_too_wide, sort=sort, name=name
    )[0]


def load_swf_with_report(
    path,
    *,
    n_cores: int | None = None,
    drop_too_wide: bool = False,
    sort: str = "submit",
    name: str | None = None,
) -> tuple[Workload, SWFReport]:
    """Load an SWF file (`.swf` or `.swf.gz`) as a `Workload` plus an `SWFReport`; `name` defaults to
    the file name without `.swf`/`.gz`."""
    path = Path(path)
    if name is None:
        name = path.name.removesuffix(".gz").removesuffix(".swf")
    return parse_swf_text_with_report(
        _read_text(path), source=str(path), n_cores=n_cores, drop_too_wide=drop_too_wide, sort=sort, name=name
    )


def load_swf(
    path,
    *,
    n_cores: int | None = None,
    drop_too_wide: bool = False,
    sort: str = "submit",
    name: str | None = None,
) -> Workload:
    """Load an SWF file as a `Workload` (`i32[J]` arrays, sorted by submit); see the module docstring."""
    return load_swf_with_report(path, n_cores=n_cores, drop_too_wide=drop_too_wide, sort=sort, name=name)[0]


_WRITTEN_KEYS = ("maxjobs", "maxrecords", "maxnodes", "maxprocs")


def write_swf(path, workload: Workload, header_extra: dict | None = None) -> None:
    """Write `workload` as an 18-column SWF file (`.gz` -> gzip) that `load_swf` reads back unchanged.

    Header: `header_extra` items as `; Key: value` lines, then MaxJobs, MaxRecords, MaxNodes (when
    `max_nodes > 0`) and MaxProcs. Rows: allocated = requested procs = cores, status 1, -1 for the
    columns a `Workload` does not hold (wait, cpu, memory, group, executable, partition, ...).
    """
    w = workload
    n = w.num_jobs
    max_procs = int(w.max_procs) or (int(np.asarray(w.cores).max()) if n else 1)
    header: list[tuple[str, object]] = []
    for key, value in (header_extra or {}).items():
        key, value = str(key), str(value)
        if not re.fullmatch(r"[A-Za-z][\w ]*", key) or key != key.strip():
            raise ValueError(f"header_extra key {key!r} must be a word (letters, digits, '_', spaces)")
        if "\n" in value or "\r" in value:
            raise ValueError(f"header_extra value for {key!r} must be a single line")
        if key.lower() in _WRITTEN_KEYS:
            raise ValueError(f"header_extra may not set {key!r}: write_swf writes it from the workload")
        header.append((key, value))
    header += [("MaxJobs", n), ("MaxRecords", n)]
    if w.max_nodes > 0:
        header.append(("MaxNodes", int(w.max_nodes)))
    header.append(("MaxProcs", max_procs))

    table = np.full((n, N_COLUMNS), -1, dtype=np.int64)
    table[:, _JOB_ID] = np.asarray(w.job_id)
    table[:, _SUBMIT] = np.asarray(w.submit)
    table[:, _RUN] = np.asarray(w.run)
    table[:, _ALLOC] = np.asarray(w.cores)
    table[:, _REQ_PROCS] = np.asarray(w.cores)
    table[:, _REQ_TIME] = np.asarray(w.req_time)
    table[:, 10] = 1  # status: completed
    table[:, _USER] = np.asarray(w.user)
    table[:, _QUEUE] = np.asarray(w.queue)

    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8", newline="\n") as f:
        for key, value in header:
            f.write(f"; {key}: {value}\n")
        np.savetxt(f, table, fmt="%d", delimiter=" ")
