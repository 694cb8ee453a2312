"""The Azure packing-trace loader (`workloads.azure_packing`) on a crafted trace whose episodes are worked
out by hand, in both input forms (SQLite, CSV directory), and its errors on malformed input. The real
trace is not in ../shared/data: every file here is written by the test."""

from __future__ import annotations

import csv
import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml

from jaxsched.workloads.azure_packing import AzurePackingConfig, load_azure_packing

H = 1 / 24  # one hour in the trace's days
# vmType: (id, vmTypeId, machineId, core). Type 1 lists two machines: the lowest machineId's 0.5 is used.
VM_TYPES = [(1, 1, 2, 0.25), (2, 1, 1, 0.5), (3, 2, 1, 0.125), (4, 3, 1, 0.05)]
# vm: (vmId, tenantId, vmTypeId, priority, starttime, endtime); priority 0 high (on-demand), 1 low.
VMS = [
    (10, 1, 1, 0, -1 * H, 2.5 * H),  # on-demand, 4 cores, alive at steps 0-2
    (11, 1, 2, 0, 1.5 * H, None),  # on-demand, 1 core, from step 2 on (NULL end)
    (20, 2, 1, 1, 0.5 * H, 2.2 * H),  # job: 4 cores, e = 0, 1.7 h -> 2 steps
    (21, 2, 3, 1, 3.0 * H, 3.0 * H),  # job: 0.4 cores -> 1, e = 3, zero lifetime -> 1 step
    (22, 3, 2, 1, 5.9 * H, 9.0 * H),  # job: 1 core, e = 5 (episode 1's step 1), 3.1 h -> 4 steps
    (23, 3, 2, 1, -0.5 * H, 1.0 * H),  # created before the loaded days
    (24, 3, 2, 1, 6.0 * H, None),  # no known end
    (25, 3, 2, 1, 8.5 * H, 9.0 * H),  # created after the loaded days
]
BASE = AzurePackingConfig(horizon=4, days=8 * H, machine_cores=8, total_cores=20.0, max_lead=0, max_window=0)


def write_sqlite(path, vms=VMS, vm_types=VM_TYPES, vm_columns=None):
    con = sqlite3.connect(path)
    cols = (
        vm_columns
        or "vmId INTEGER, tenantId INTEGER, vmTypeId INTEGER, priority INTEGER, starttime REAL, endtime REAL"
    )
    con.execute(f"CREATE TABLE vm ({cols})")
    con.execute(
        "CREATE TABLE vmType (id INTEGER, vmTypeId INTEGER, machineId INTEGER, core REAL, memory REAL)"
    )
    con.executemany(f"INSERT INTO vm VALUES ({', '.join('?' * len(vms[0]))})", vms)
    con.executemany("INSERT INTO vmType VALUES (?, ?, ?, ?, 0.1)", vm_types)
    con.commit()
    con.close()
    return path


def write_csv_dir(d, vms=VMS, vm_types=VM_TYPES):
    d.mkdir()
    with open(d / "vm.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["vmId", "tenantId", "vmTypeId", "priority", "starttime", "endtime"])
        w.writerows([["" if v is None else v for v in row] for row in vms])
    with open(d / "vmType.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "vmTypeId", "machineId", "core", "memory"])
        w.writerows([[*row, 0.1] for row in vm_types])
    return d


def as_numpy(bank):
    return {f: np.asarray(getattr(bank, f)) for f in ("cores", "duration", "earliest", "latest", "submit",
                                                       "capacity", "n_jobs")}  # fmt: skip


def test_hand_worked_trace(tmp_path):
    """Two disjoint 4-step episodes. On-demand load U = [4, 4, 5, 1, 1, 1, 1, 1] cores, so C = 20 − U;
    episode 0 holds jobs 20 and 21, episode 1 job 22 (rebased); the other three are counted, not loaded."""
    bank, report = load_azure_packing(write_sqlite(tmp_path / "trace.sqlite"), BASE)
    b = as_numpy(bank)
    np.testing.assert_array_equal(b["capacity"], [[16, 16, 15, 19], [19, 19, 19, 19]])
    np.testing.assert_array_equal(b["n_jobs"], [2, 1])
    np.testing.assert_array_equal(b["cores"], [[4, 1], [1, 0]])
    np.testing.assert_array_equal(b["duration"], [[2, 1], [4, 0]])
    np.testing.assert_array_equal(b["earliest"], [[0, 3], [1, 0]])
    np.testing.assert_array_equal(b["latest"], [[0, 3], [1, 0]])
    np.testing.assert_array_equal(b["submit"][:, 0], [0, 1])
    assert b["submit"][0, 1] == 3
    counts = {"episodes": 2, "steps": 8, "jobs": 3, "low_priority": 6, "before_start": 1, "open_end": 1,
              "subsampled": 0, "straddling": 0}  # fmt: skip
    assert {k: report[k] for k in counts} == counts
    assert report["peak_on_demand"] == pytest.approx(5.0)


def test_csv_directory_equals_sqlite(tmp_path):
    a, ra = load_azure_packing(write_sqlite(tmp_path / "t.sqlite"), BASE)
    b, rb = load_azure_packing(write_csv_dir(tmp_path / "csv"), BASE)
    for f, v in as_numpy(a).items():
        np.testing.assert_array_equal(v, as_numpy(b)[f], err_msg=f)
    assert ra == rb


def test_defaults_size_the_cluster_by_the_on_demand_peak(tmp_path):
    cfg = dataclasses.replace(BASE, total_cores=None)
    bank, report = load_azure_packing(write_sqlite(tmp_path / "t.sqlite"), cfg)
    assert report["total_cores"] == pytest.approx(5.5)  # 1.1 × the peak of U
    np.testing.assert_array_equal(np.asarray(bank.capacity), [[1, 1, 0, 4], [4, 4, 4, 4]])  # ⌊5.5 − U⌋


def test_synthesised_windows_are_seeded_and_inside_their_episode(tmp_path):
    """With lead and window draws: g <= e <= l, e − g <= max_lead, l − e <= max_window, every window
    inside the episode; the same seed gives the same bank; realtime gives g = e = l."""
    path = write_sqlite(tmp_path / "t.sqlite")
    cfg = dataclasses.replace(BASE, horizon=6, max_lead=2, max_window=3, days=None)
    a, _ = load_azure_packing(path, cfg)
    again, _ = load_azure_packing(path, cfg)
    for f, v in as_numpy(a).items():
        np.testing.assert_array_equal(v, as_numpy(again)[f], err_msg=f)
    b = as_numpy(a)
    for ep in range(b["n_jobs"].shape[0]):
        n = b["n_jobs"][ep]
        g, e, lat = b["submit"][ep, :n], b["earliest"][ep, :n], b["latest"][ep, :n]
        assert (g >= 0).all() and (e - g <= 2).all() and (e >= g).all() and (lat >= e).all()
        assert (lat - e <= 3).all() and (lat <= 5).all() and (np.diff(g) >= 0).all()
    rt, _ = load_azure_packing(path, dataclasses.replace(cfg, realtime=True))
    r = as_numpy(rt)
    assert (r["submit"][:, :1] == r["earliest"][:, :1]).all() and (r["earliest"] == r["latest"]).all()


def test_fraction_subsamples_jobs_and_scales_capacity(tmp_path):
    vms = VMS + [(100 + i, 4, 2, 1, (0.2 + i % 6) * H, (1.2 + i % 6) * H) for i in range(60)]
    path = write_sqlite(tmp_path / "t.sqlite", vms=vms)
    full, rf = load_azure_packing(path, BASE)
    half, rh = load_azure_packing(path, dataclasses.replace(BASE, fraction=0.5))
    np.testing.assert_array_equal(np.asarray(half.capacity), np.floor(0.5 * np.asarray(full.capacity) + 1e-9))
    assert rh["jobs"] + rh["subsampled"] == rf["jobs"] and 10 < rh["jobs"] < rf["jobs"] - 10


def test_loaded_bank_runs_in_the_env(tmp_path):
    import jax

    from jaxsched.envs.deferrable import DeferrableConfig, DeferrableEnv
    from jaxsched.policies.deferrable import make_heuristic

    bank, _ = load_azure_packing(write_sqlite(tmp_path / "t.sqlite"), BASE)
    env = DeferrableEnv(DeferrableConfig(pending_slots=4, running_slots=20, history=2))
    params = env.make_params(bank, day=24)
    fifo = make_heuristic(env, "fifo")
    state = env.start_episode(0, params)
    obs = env.observe(state, params)
    for _ in range(4):
        obs, state, *_ = env.step_env(jax.random.PRNGKey(0), state, fifo(None, obs, None), params)
    assert int(state.started) == 2 and int(state.utilization) == 4 * 2 + 1 * 1


BAD = [
    ("priority", lambda vms: [(*vms[0][:3], 2, *vms[0][4:]), *vms[1:]], "vm row 0 (vmId 10): priority"),
    (
        "endtime",
        lambda vms: [*vms[:2], (20, 2, 1, 1, 0.5 * H, 0.1 * H), *vms[3:]],
        "vm row 2 (vmId 20): endtime",
    ),
    ("vmTypeId", lambda vms: [*vms[:2], (20, 2, 9, 1, 0.5 * H, 2.2 * H), *vms[3:]], "vmTypeId 9 has no row"),
    (
        "starttime",
        lambda vms: [*vms[:2], (20, 2, 1, 1, None, 2.2 * H), *vms[3:]],
        "starttime must be a finite",
    ),
]


@pytest.mark.parametrize("field,edit,message", BAD, ids=[b[0] for b in BAD])
def test_malformed_vm_rows_name_the_row_and_field(tmp_path, field, edit, message):
    path = write_sqlite(tmp_path / "t.sqlite", vms=edit(VMS))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_azure_packing(path, BASE)


def test_malformed_tables_and_files(tmp_path):
    with pytest.raises(
        ValueError, match=r"vmType row 0 .*core must be a machine fraction in \(0, 1\], got 1.5"
    ):
        load_azure_packing(
            write_sqlite(tmp_path / "a.sqlite", vm_types=[(1, 1, 2, 1.5), *VM_TYPES[1:]]), BASE
        )
    cols = "vmId INTEGER, tenantId INTEGER, vmTypeId INTEGER, priority INTEGER, starttime REAL, stop REAL"
    with pytest.raises(ValueError, match="table vm has no column 'endtime'"):
        load_azure_packing(write_sqlite(tmp_path / "b.sqlite", vm_columns=cols), BASE)
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 50)
    with pytest.raises(ValueError, match="not a SQLite database"):
        load_azure_packing(tmp_path / "junk.sqlite", BASE)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_azure_packing(tmp_path / "missing.sqlite", BASE)
    d = write_csv_dir(tmp_path / "csv")
    (d / "vm.csv").write_text((d / "vm.csv").read_text().replace("0.0625", "soon", 1))
    with pytest.raises(ValueError, match=r"vm.csv line \d+: starttime must be a number, got 'soon'"):
        load_azure_packing(d, BASE)
    with pytest.raises(ValueError, match="no low-priority VM falls inside an episode"):
        load_azure_packing(write_sqlite(tmp_path / "c.sqlite", vms=VMS[:2] + VMS[5:]), BASE)
    with pytest.raises(ValueError, match="fewer than one episode's horizon"):
        load_azure_packing(write_sqlite(tmp_path / "d.sqlite"), dataclasses.replace(BASE, days=2 * H))


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="fraction must be in"):
        AzurePackingConfig(fraction=0.0)
    with pytest.raises(ValueError, match=r"horizon \(4\) must exceed max_lead \+ max_window"):
        AzurePackingConfig(horizon=4, max_lead=2, max_window=2)


def test_osdec_config_splits_the_trace_in_time(tmp_path):
    """`workload.trace` (relative to the YAML) replaces the generator: training episodes from the days
    before `trace_test_from_day`, test episodes from it on, with their own window draws."""
    from config_edit import config_with

    from jaxsched.systems import load_run_config
    from jaxsched.systems.osdec.config import build_osdec
    from jaxsched.workloads.azure_packing import AzurePackingConfig

    root = Path(__file__).resolve().parents[1]
    jobs = [(1000 + i, 5, 2, 1, i * 2 / 96, i * 2 / 96 + 2 * H) for i in range(96)]  # 2 days, 1 core, 2 h
    write_sqlite(tmp_path / "t.sqlite", vms=VMS[:2] + jobs + [(9, 1, 2, 0, 2.0, None)])
    workload = {
        "trace": "t.sqlite",
        "trace_test_from_day": 1.0,
        "horizon": 12,
        "trace_total_cores": 30.0,
        "trace_machine_cores": 8,
    }
    (tmp_path / "c.yaml").write_text(
        yaml.safe_dump(config_with(root / "configs/osdec/quick.yaml", workload=workload))
    )
    _, cfg = load_run_config(tmp_path / "c.yaml")
    assert cfg.workload.trace == str(tmp_path / "t.sqlite") and cfg.workload.day == 24
    env, train, test = build_osdec(cfg)
    assert train.bank.capacity.shape == (2, 12) and test.bank.capacity.shape == (2, 12)
    # the same episodes as the loader gives for each side of the split
    for params, start, days, seed in (
        (train, 0.0, 1.0, cfg.workload.bank_seed),
        (test, 1.0, None, cfg.workload.test_seed),
    ):
        want, _ = load_azure_packing(
            tmp_path / "t.sqlite",
            AzurePackingConfig(
                horizon=12, start_day=start, days=days, total_cores=30.0, machine_cores=8, seed=seed
            ),
        )
        for f, v in as_numpy(want).items():
            np.testing.assert_array_equal(v, np.asarray(getattr(params.bank, f)), err_msg=f)
    np.testing.assert_array_equal(np.asarray(train.bank.capacity)[0, :3], [26, 26, 25])  # 30 − U, U = 4, 4, 5
    np.testing.assert_array_equal(np.asarray(test.bank.capacity), 29)  # only the 1-core on-demand VM 11
    bad = config_with(root / "configs/osdec/quick.yaml", workload=workload | {"trace_fraction": 0})
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ValueError, match=r"workload.trace_fraction must be in \(0, 1\]"):
        load_run_config(tmp_path / "bad.yaml")
