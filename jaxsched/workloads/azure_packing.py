"""Deferrable-job episodes from the Azure packing trace (Azure Trace for Packing 2020, Hadary et al.,
"Protean", OSDI '20; CC-BY: cite it), the public Azure dataset OSDEC's paper evaluates on (§5.1; its own
processed version was never released). The package never ships the trace: `load_azure_packing(path)`.

Input, either form of the published schema:
  * the SQLite file (`*.sqlite` / `*.db`), tables `vm` and `vmType`;
  * a directory with `vm.csv` and `vmType.csv` (a header row, the columns named as in the tables; an empty
    `endtime` is NULL), as `sqlite3 -header -csv` exports them.
Used columns: vm (vmId, vmTypeId, priority, starttime, endtime), vmType (vmTypeId, machineId, core). Times
are fractional days from the start of the 14-day collection (negative: alive before it; NULL end: alive
past the 90-day cap); priority 0 is high, 1 low (evictable); `core` is a fraction of one machine's cores.

How a VM becomes part of an episode (the paper says only that it processed the data; each rule is ours):
  * **on-demand load**: the high-priority VMs. U_t = the cores of those alive at the start of step t
    (start <= τ_t < end; NULL end = never ends), in cores = `core` × `machine_cores`.
  * **capacity** C_t = ⌊fraction · (total_cores − U_t)⌋, clipped at 0 (Eq. 2's capacity: the cluster
    minus the on-demand usage); `total_cores` defaults to 1.1 × the peak of U_t over the loaded days.
    The env holds at most `running_slots` running jobs and refuses a bank whose capacity exceeds them: on
    the whole zone choose `fraction` (or `machine_cores`) so that C_t is a few dozen cores; `report`
    gives the peak and the jobs per episode to choose by.
  * **deferrable jobs**: the low-priority VMs created inside the loaded days (start >= `start_day`) with
    a known end, each kept with probability `fraction` (a seeded draw; the capacity is scaled by the same
    factor, so demand and capacity keep their ratio at a size the env's slots hold). Cores c =
    max(1, round(core × machine_cores)); duration d = max(1, ⌈lifetime / step⌉) steps, capped at
    `max_duration` if set (a low-priority lifetime ends at its eviction, so it is what ran, not what
    was asked: the trace's note).
  * **windows, synthesised**: the trace holds when a VM started, not when it could have. The start step
    is the earliest start e; the submit is g = e − U{0..max_lead} and the latest start l = e +
    U{0..max_window} (the generator's laws, `workloads.deferrable`); `realtime` sets g = e = l.
  * **episodes**: windows of `horizon` steps every `stride` steps (default `horizon`: disjoint) over the
    loaded days; an episode holds the jobs with g >= its first step and l <= its last (as the generator:
    every window ends inside the episode), times rebased to its first step and sorted by (submit, start,
    vm row). Jobs whose window straddles an episode boundary are in no episode (counted in the report).

A malformed trace is a one-line `ValueError` naming the file, the row and the field: a missing table or
column, a non-numeric value, a priority other than 0/1, a non-finite start, an end before its start, a
`core` outside (0, 1], a VM type with no `vmType` row; and no deferrable job in any episode. Plain `csv`,
`sqlite3` and numpy: no pandas.
"""

from __future__ import annotations

import csv
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxsched.workloads.deferrable import DeferrableBank, make_bank

__all__ = ["AzurePackingConfig", "VM_COLUMNS", "VMTYPE_COLUMNS", "load_azure_packing", "read_azure_tables"]

VM_COLUMNS = ("vmId", "vmTypeId", "priority", "starttime", "endtime")
VMTYPE_COLUMNS = ("vmTypeId", "machineId", "core")
MINUTES_PER_DAY = 24 * 60


@dataclass(frozen=True)
class AzurePackingConfig:
    """How the trace becomes episodes (module docstring). Times in steps of `step_minutes`."""

    step_minutes: float = 60.0  # one env step (the generator's steps read as hours)
    horizon: int = 48  # steps per episode
    stride: int | None = None  # steps between episode starts (None: `horizon`, disjoint episodes)
    start_day: float = 0.0  # the loaded days: [start_day, start_day + days)
    days: float | None = None  # None: up to the last VM creation in the trace
    machine_cores: int = 64  # cores of the machine `core` is a fraction of
    total_cores: float | None = None  # None: 1.1 × the peak on-demand load
    fraction: float = 1.0  # share of the deferrable VMs kept (and of the capacity)
    max_lead: int = 4  # e − g uniform on 0..max_lead
    max_window: int = 4  # l − e uniform on 0..max_window
    max_duration: int | None = None  # cap on a job's steps (None: none)
    realtime: bool = False  # §5.3.4: g = e = l
    seed: int = 0  # the subsample and the windows

    def __post_init__(self):
        where = "azure trace config"
        if not self.step_minutes > 0:
            raise ValueError(f"{where}: step_minutes must be > 0, got {self.step_minutes}")
        for name in ("horizon", "machine_cores"):
            if getattr(self, name) < 1:
                raise ValueError(f"{where}: {name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_lead", "max_window"):
            if getattr(self, name) < 0:
                raise ValueError(f"{where}: {name} must be >= 0, got {getattr(self, name)}")
        for name in ("stride", "max_duration"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{where}: {name} must be >= 1 or None, got {getattr(self, name)}")
        if not 0 < self.fraction <= 1:
            raise ValueError(f"{where}: fraction must be in (0, 1], got {self.fraction}")
        if self.days is not None and not self.days > 0:
            raise ValueError(f"{where}: days must be > 0 or None, got {self.days}")
        if self.total_cores is not None and not self.total_cores > 0:
            raise ValueError(f"{where}: total_cores must be > 0 or None, got {self.total_cores}")
        if self.horizon <= self.max_lead + self.max_window:
            raise ValueError(
                f"{where}: horizon ({self.horizon}) must exceed max_lead + max_window "
                f"({self.max_lead + self.max_window}): no job's window would fit in an episode"
            )


# ---- reading ---------------------------------------------------------------------------------------
def read_azure_tables(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
    """`(vm, vm_type, source)`: the used columns as float64 arrays (NULL / empty = NaN) from the SQLite
    file or the directory of CSVs at `path`, with `source` the file names for messages."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"azure trace: no such file or directory: {path}")
    if path.is_dir():
        return (
            _read_csv(path / "vm.csv", VM_COLUMNS),
            _read_csv(path / "vmType.csv", VMTYPE_COLUMNS),
            str(path),
        )
    return *_read_sqlite(path), str(path)


def _read_sqlite(path: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{path}: not a SQLite database ({e})") from None
    try:
        out = []
        for table, columns in (("vm", VM_COLUMNS), ("vmType", VMTYPE_COLUMNS)):
            have = [r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall()]
            if not have:
                raise ValueError(f"{path}: no table {table!r} (the packing trace has vm and vmType)")
            for c in columns:
                if c not in have:
                    raise ValueError(f"{path}: table {table} has no column {c!r} (has {', '.join(have)})")
            rows = con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            out.append(_columns(rows, columns, f"{path} table {table}"))
        return out[0], out[1]
    finally:
        con.close()


def _read_csv(path: Path, columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise FileNotFoundError(f"azure trace: no file {path} (a CSV directory holds vm.csv and vmType.csv)")
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        missing = [c for c in columns if c not in header]
        if missing:
            raise ValueError(f"{path}: no column {missing[0]!r} in the header (has {', '.join(header)})")
        idx = [header.index(c) for c in columns]
        rows = []
        for line, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise ValueError(f"{path} line {line}: {len(row)} fields, the header has {len(header)}")
            rows.append([row[i].strip() or None for i in idx])
    return _columns(rows, columns, str(path), first_line=2)


def _columns(rows, columns, where: str, first_line: int | None = None) -> dict[str, np.ndarray]:
    """Rows of values (None = NULL) → float64 column arrays; a non-numeric value is an error naming the
    row (or the CSV line) and the column."""
    out = {c: np.full(len(rows), np.nan) for c in columns}
    for i, row in enumerate(rows):
        for c, v in zip(columns, row, strict=True):
            if v is None:
                continue
            try:
                out[c][i] = float(v)
            except (TypeError, ValueError):
                at = f"line {first_line + i}" if first_line is not None else f"row {i}"
                raise ValueError(f"{where} {at}: {c} must be a number, got {v!r}") from None
    return out


def _validate(vm: dict, vm_type: dict, source: str) -> None:
    def fail(table, i, ids, what):
        raise ValueError(f"{source}: {table} row {i} ({ids}): {what}")

    for c in ("vmId", "vmTypeId", "priority", "starttime"):
        bad = ~np.isfinite(vm[c])
        if bad.any():
            i = int(np.argmax(bad))
            fail("vm", i, f"vmId {vm['vmId'][i]:g}", f"{c} must be a finite number, got {vm[c][i]}")
    bad = ~np.isin(vm["priority"], (0, 1))
    if bad.any():
        i = int(np.argmax(bad))
        fail(
            "vm",
            i,
            f"vmId {vm['vmId'][i]:g}",
            f"priority must be 0 (high) or 1 (low), got {vm['priority'][i]:g}",
        )
    bad = vm["endtime"] < vm["starttime"]  # NaN (NULL) compares False
    if bad.any():
        i = int(np.argmax(bad))
        fail(
            "vm", i, f"vmId {vm['vmId'][i]:g}", f"endtime {vm['endtime'][i]} < starttime {vm['starttime'][i]}"
        )
    for c in VMTYPE_COLUMNS:
        bad = ~np.isfinite(vm_type[c])
        if bad.any():
            i = int(np.argmax(bad))
            fail("vmType", i, f"vmTypeId {vm_type['vmTypeId'][i]:g}", f"{c} must be a finite number")
    bad = ~((vm_type["core"] > 0) & (vm_type["core"] <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        fail("vmType", i, f"vmTypeId {vm_type['vmTypeId'][i]:g}",
             f"core must be a machine fraction in (0, 1], got {vm_type['core'][i]}")  # fmt: skip
    unknown = ~np.isin(vm["vmTypeId"], vm_type["vmTypeId"])
    if unknown.any():
        i = int(np.argmax(unknown))
        fail("vm", i, f"vmId {vm['vmId'][i]:g}", f"vmTypeId {vm['vmTypeId'][i]:g} has no row in vmType")


def _type_cores(vm: dict, vm_type: dict) -> np.ndarray:
    """`f64[V]`: each VM's core fraction, from its type's row on the lowest `machineId` (a type lists one
    row per machine generation it runs on)."""
    order = np.lexsort((vm_type["machineId"], vm_type["vmTypeId"]))
    types, first = np.unique(vm_type["vmTypeId"][order], return_index=True)
    core = vm_type["core"][order][first]
    return core[np.searchsorted(types, vm["vmTypeId"])]


# ---- episodes ---------------------------------------------------------------------------------------
def _on_demand_load(
    vm: dict, cores: np.ndarray, start_day: float, step_days: float, n_steps: int
) -> np.ndarray:
    """`f64[T]`: U_t, the cores of the high-priority VMs alive at the start τ_t of each of the T steps."""
    # on-demand load U_t at τ_t = start_day + t·step: +cores from the first step at or after the start,
    # −cores from the first step at or after the end (NULL end: never)
    high = vm["priority"] == 0
    rel_start = (vm["starttime"][high] - start_day) / step_days
    rel_end = (np.nan_to_num(vm["endtime"][high], nan=np.inf) - start_day) / step_days
    delta = np.zeros(n_steps + 1)
    np.add.at(delta, np.clip(np.ceil(rel_start - 1e-9), 0, n_steps).astype(np.int64), cores[high])
    np.add.at(delta, np.clip(np.ceil(rel_end - 1e-9), 0, n_steps).astype(np.int64), -cores[high])
    return np.cumsum(delta)[:n_steps]


def _deferrable_jobs(
    vm: dict, cores: np.ndarray, cfg: AzurePackingConfig, step_days: float, n_steps: int
) -> tuple[dict[str, int], tuple[np.ndarray, ...]]:
    """`(report counts, (submit g, earliest e, latest l, duration, cores), each i64[N])`: the sampled
    low-priority VMs created in the loaded days with a known end, sorted by (submit, start, vm row)."""
    rng = np.random.default_rng(cfg.seed)
    low = np.flatnonzero(vm["priority"] == 1)
    keep = rng.random(len(low)) < cfg.fraction  # drawn for every low-priority VM: stable subsamples
    start = (vm["starttime"][low] - cfg.start_day) / step_days
    in_days = (start >= 0) & (start < n_steps)
    known = np.isfinite(vm["endtime"][low])
    report = {
        "low_priority": int(len(low)),
        "before_start": int((start < 0).sum()),
        "open_end": int((in_days & ~known).sum()),
        "subsampled": int((in_days & known & ~keep).sum()),
    }
    chosen = in_days & known & keep
    rows = low[chosen]
    e = np.floor(start[chosen] + 1e-9).astype(np.int64)
    life = (vm["endtime"][rows] - vm["starttime"][rows]) / step_days
    duration = np.maximum(np.ceil(life - 1e-9), 1).astype(np.int64)
    if cfg.max_duration is not None:
        duration = np.minimum(duration, cfg.max_duration)
    job_cores = np.maximum(np.rint(cores[rows]), 1).astype(np.int64)
    lead = rng.integers(0, cfg.max_lead + 1, len(rows))
    window = rng.integers(0, cfg.max_window + 1, len(rows))
    g, lat = (e, e) if cfg.realtime else (e - lead, e + window)
    order = np.lexsort((rows, e, g))  # by submit, then start, then vm row
    return report, (g[order], e[order], lat[order], duration[order], job_cores[order])


def _episodes(
    jobs: tuple[np.ndarray, ...], capacity: np.ndarray, n_steps: int, horizon: int, stride: int
) -> tuple[list[dict[str, np.ndarray]], list[np.ndarray], np.ndarray]:
    """`(episodes: the fields of the jobs whose window lies inside each, rebased to its first step;
    capacities i64[H] per episode; placed bool[N]: the jobs some episode holds)`."""
    g, e, lat, duration, job_cores = jobs
    episodes, caps, placed = [], [], np.zeros(len(g), bool)
    for s in range(0, n_steps - horizon + 1, stride):
        inside = (g >= s) & (lat <= s + horizon - 1)
        placed |= inside
        fields = {
            "cores": job_cores,
            "duration": duration,
            "earliest": e - s,
            "latest": lat - s,
            "submit": g - s,
        }
        episodes.append({f: v[inside] for f, v in fields.items()})
        caps.append(capacity[s : s + horizon])
    return episodes, caps, placed


def load_azure_packing(
    path: str | Path, config: AzurePackingConfig | None = None
) -> tuple[DeferrableBank, dict]:
    """`(bank, report)`: the trace at `path` as deferrable-job episodes (module docstring). `report` counts
    what was kept and why the rest was not: {"episodes", "steps", "total_cores", "peak_on_demand",
    "low_priority", "before_start", "open_end", "subsampled", "straddling", "jobs"}."""
    cfg = AzurePackingConfig() if config is None else config
    vm, vm_type, source = read_azure_tables(path)
    if len(vm["vmId"]) == 0:
        raise ValueError(f"{source}: the vm table is empty")
    _validate(vm, vm_type, source)
    step_days = cfg.step_minutes / MINUTES_PER_DAY
    cores = _type_cores(vm, vm_type) * cfg.machine_cores
    days = cfg.days if cfg.days is not None else float(vm["starttime"].max()) - cfg.start_day
    n_steps = int(math.floor(days / step_days + 1e-9))
    stride = cfg.stride or cfg.horizon
    if n_steps < cfg.horizon:
        raise ValueError(
            f"{source}: the loaded days hold {n_steps} steps of {cfg.step_minutes:g} min, fewer than one "
            f"episode's horizon ({cfg.horizon})"
        )

    on_demand = _on_demand_load(vm, cores, cfg.start_day, step_days, n_steps)
    peak = float(on_demand.max())
    total = cfg.total_cores if cfg.total_cores is not None else 1.1 * peak
    if not total > 0:
        raise ValueError(f"{source}: no high-priority load to size the cluster by; set total_cores")
    capacity = np.maximum(np.floor(cfg.fraction * (total - on_demand) + 1e-9), 0).astype(np.int64)

    report, jobs = _deferrable_jobs(vm, cores, cfg, step_days, n_steps)
    episodes, caps, placed = _episodes(jobs, capacity, n_steps, cfg.horizon, stride)
    n_jobs = sum(len(ep["submit"]) for ep in episodes)
    if n_jobs == 0:
        raise ValueError(
            f"{source}: no low-priority VM falls inside an episode ({report['low_priority']} low-priority, "
            f"{report['before_start']} before start_day, {report['open_end']} with no end, "
            f"{report['subsampled']} not sampled)"
        )
    report |= {"episodes": len(episodes), "steps": n_steps, "total_cores": float(total),
               "peak_on_demand": peak, "straddling": int((~placed).sum()), "jobs": n_jobs}  # fmt: skip
    return make_bank(episodes, np.stack(caps), source=source), report
