"""`jaxsched hpc-table`: RLScheduler's heuristic table as a jitted loop, checked job by job against a
plain-Python transliteration of RLScheduler's own event loop, on hand-computed cases and on the real
Lublin traces (where it must give the paper's published numbers)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import require_trace

from jaxsched.cli import main
from jaxsched.policies.rlscheduler import (
    DYNAMIC_POLICIES,
    POLICIES,
    compute_table,
    parse_starts,
    sequence_metrics,
    simulate_lanes,
    simulate_sequence,
)
from jaxsched.workloads.base import make_workload

HPC = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hpc"
LUBLIN_1 = HPC / "lublin_256.swf"
LUBLIN_2 = HPC / "lublin_256_new2.swf"


# --- RLScheduler's loop, transliterated (DIR-LAB/deep-batch-scheduler: HPCSimPickJobs, cluster, job)


class RefJob:
    def __init__(self, job_id, submit, run, req, procs):
        self.job_id = job_id
        self.submit_time = submit
        self.run_time = run
        self.request_time = req
        self.request_number_of_processors = procs
        self.request_number_of_nodes = -1
        self.scheduled_time = -1
        self.allocated_machines = None

    def __eq__(self, other):
        return self.job_id == other.job_id

    def __hash__(self):
        return hash(self.job_id)


class RefCluster:
    def __init__(self, node_num, num_procs_per_node):
        self.total_node = node_num
        self.free_node = node_num
        self.num_procs_per_node = num_procs_per_node
        self.node_free = [True] * node_num

    def can_allocated(self, job):
        if job.request_number_of_nodes != -1 and job.request_number_of_nodes > self.free_node:
            return False
        if job.request_number_of_nodes != -1 and job.request_number_of_nodes <= self.free_node:
            return True
        request_node = int(
            math.ceil(float(job.request_number_of_processors) / float(self.num_procs_per_node))
        )
        job.request_number_of_nodes = request_node
        return request_node <= self.free_node

    def allocate(self, job_id, request_num_procs):
        request_node = int(math.ceil(float(request_num_procs) / float(self.num_procs_per_node)))
        if request_node > self.free_node:
            return []
        taken = []
        for m, free in enumerate(self.node_free):
            if len(taken) == request_node:
                break
            if free:
                self.node_free[m] = False
                taken.append(m)
        self.free_node -= len(taken)
        return taken

    def release(self, releases):
        self.free_node += len(releases)
        for m in releases:
            self.node_free[m] = True


class RefSched:
    """`schedule_curr_sequence_reset` with its helpers; score functions as in RLScheduler."""

    def __init__(self, jobs, max_nodes, max_procs, backfill):
        self.loads = jobs
        self.cluster = RefCluster(max_nodes, max_procs / max_nodes)
        self.max_procs = max_procs
        self.backfil = backfill

    # scores (RLScheduler's; `lcfs` and the `_real` forms are ours, written in the same style)
    def fcfs_score(self, job):
        return job.submit_time

    def lcfs_score(self, job):
        return -job.submit_time

    def sjf_score(self, job):
        return (job.request_time, job.submit_time)

    def smallest_score(self, job):
        return (job.request_number_of_processors, job.submit_time)

    def f1_score(self, job):
        r, s, n = job.request_time, job.submit_time, job.request_number_of_processors
        return np.log10(r if r > 0 else 0.1) * n + 870 * np.log10(s if s > 0 else 0.1)

    def wfp3_score(self, job):
        waiting_time = job.scheduled_time - job.submit_time
        return -np.power(float(waiting_time) / job.request_time, 3) * job.request_number_of_processors

    def uni_score(self, job):
        waiting_time = job.scheduled_time - job.submit_time
        n, r = job.request_number_of_processors, job.request_time
        return -(waiting_time + 1e-15) / (np.log2(n + 1e-15) * r)

    def wfp3_real_score(self, job):
        x = float(self.current_timestamp - job.submit_time) / job.request_time
        return -(x * x * x) * job.request_number_of_processors

    def uni_real_score(self, job):
        waiting_time = self.current_timestamp - job.submit_time
        n, r = job.request_number_of_processors, job.request_time
        return -(waiting_time + 1e-15) / (np.log2(n + 1e-15) * r)

    def reset_for_test(self, num, start):
        for j in self.loads:
            j.scheduled_time = -1
        self.job_queue = []
        self.running_jobs = []
        self.start = start
        self.num_job_in_batch = num
        self.last_job_in_batch = start + num
        self.current_timestamp = self.loads[start].submit_time
        self.job_queue.append(self.loads[start])
        self.next_arriving_job_idx = start + 1

    def job_score(self, job):
        bsld = max(1.0, float(job.scheduled_time - job.submit_time + job.run_time) / max(job.run_time, 10))
        return bsld, float(job.run_time * job.request_number_of_processors)

    def _next_release(self):
        self.running_jobs.sort(key=lambda rj: rj.scheduled_time + rj.run_time)
        return self.running_jobs[0].scheduled_time + self.running_jobs[0].run_time, self.running_jobs[0]

    def _advance(self):
        next_time, first = self._next_release()
        if (
            self.next_arriving_job_idx < self.last_job_in_batch
            and self.loads[self.next_arriving_job_idx].submit_time <= next_time
        ):
            self.current_timestamp = max(
                self.current_timestamp, self.loads[self.next_arriving_job_idx].submit_time
            )
            self.job_queue.append(self.loads[self.next_arriving_job_idx])
            self.next_arriving_job_idx += 1
        else:
            self.current_timestamp = max(self.current_timestamp, next_time)
            self.cluster.release(first.allocated_machines)
            self.running_jobs.pop(0)

    def skip_for_resources_greedy(self, job, logs):
        assert not self.cluster.can_allocated(job)
        while not self.cluster.can_allocated(job):
            assert self.running_jobs
            self._advance()

    def moveforward_for_resources_backfill_greedy(self, job, logs):
        assert not self.cluster.can_allocated(job)
        earliest_start_time = self.current_timestamp
        self.running_jobs.sort(key=lambda rj: rj.scheduled_time + rj.request_time)
        free_processors = self.cluster.free_node * self.cluster.num_procs_per_node
        for rj in self.running_jobs:
            free_processors += len(rj.allocated_machines) * self.cluster.num_procs_per_node
            earliest_start_time = rj.scheduled_time + rj.request_time
            if free_processors >= job.request_number_of_processors:
                break
        while not self.cluster.can_allocated(job):
            self.job_queue.sort(key=lambda _j: self.fcfs_score(_j))
            for _j in list(self.job_queue):
                if (self.current_timestamp + _j.request_time) < earliest_start_time:
                    if self.cluster.can_allocated(_j):
                        self._start(_j, logs)
            assert self.running_jobs
            self._advance()

    def _start(self, job, logs):
        assert job.scheduled_time == -1
        job.scheduled_time = self.current_timestamp
        job.allocated_machines = self.cluster.allocate(job.job_id, job.request_number_of_processors)
        self.running_jobs.append(job)
        logs[job.job_id] = self.job_score(job)
        self.job_queue.remove(job)

    def moveforward_for_job(self):
        if self.job_queue:
            return True
        if self.next_arriving_job_idx >= self.last_job_in_batch:
            return False
        while not self.job_queue:
            if not self.running_jobs:
                next_time, first = math.inf, None
            else:
                next_time, first = self._next_release()
            if self.loads[self.next_arriving_job_idx].submit_time <= next_time:
                self.current_timestamp = max(
                    self.current_timestamp, self.loads[self.next_arriving_job_idx].submit_time
                )
                self.job_queue.append(self.loads[self.next_arriving_job_idx])
                self.next_arriving_job_idx += 1
                return True
            self.current_timestamp = max(self.current_timestamp, next_time)
            self.cluster.release(first.allocated_machines)
            self.running_jobs.pop(0)

    def schedule(self, policy, start, num):
        """Returns (scheduled times by sequence position, start order, bsld, util) for one sequence."""
        self.reset_for_test(num, start)
        self.cluster = RefCluster(self.cluster.total_node, self.cluster.num_procs_per_node)
        score_fn = getattr(self, f"{policy}_score")
        logs = {}
        while True:
            self.job_queue.sort(key=lambda j: score_fn(j))
            job = self.job_queue[0]
            if not self.cluster.can_allocated(job):
                if self.backfil:
                    self.moveforward_for_resources_backfill_greedy(job, logs)
                else:
                    self.skip_for_resources_greedy(job, logs)
            self._start(job, logs)
            if not self.moveforward_for_job():
                break
        seq = self.loads[start : start + num]
        times = [j.scheduled_time for j in seq]
        order = {job_id: k for k, job_id in enumerate(logs)}
        bsld = sum(b / num for b, _ in logs.values())
        total_cpu_hour = (self.current_timestamp - self.loads[start].submit_time) * self.max_procs
        util = sum(u / total_cpu_hour for _, u in logs.values()) if total_cpu_hour else math.nan
        return times, [order[j.job_id] for j in seq], bsld, util


# --- helpers --------------------------------------------------------------------------------------------


def random_workload(rng, n_jobs, max_nodes, ppn, tie_heavy):
    """Small-integer jobs with many ties (equal submits, equal ends); some requests shorter than the run."""
    gaps = rng.integers(0, 4 if tie_heavy else 30, n_jobs)
    gaps[0] = rng.integers(0, 5)
    submit = np.cumsum(gaps)
    run = rng.choice([1, 2, 3, 5, 8, 10, 12, 20, 40], n_jobs) if tie_heavy else rng.integers(1, 200, n_jobs)
    extra = rng.integers(-2, 6, n_jobs)
    req = np.maximum(run + extra, 1)
    max_procs = int(round(max_nodes * ppn))
    procs = rng.integers(1, max_procs + 1, n_jobs)
    small = rng.random(n_jobs) < 0.5
    procs = np.where(small, rng.integers(1, max(2, max_procs // 4) + 1, n_jobs), procs)
    procs = np.minimum(procs, max_procs)
    w = make_workload(submit, run, procs, req_time=req, max_procs=max_procs, max_nodes=max_nodes)
    jobs = [
        RefJob(i + 1, int(s), int(r), int(q), int(p))
        for i, (s, r, q, p) in enumerate(zip(submit, run, req, procs, strict=True))
    ]
    return w, jobs


# --- differential tests ---------------------------------------------------------------------------------

CASES = [
    # (max_nodes, ppn, tie_heavy); one node count, so all cases share compiled loops
    (8, 1.0, True),
    (8, 1.0, False),
    (8, 4.0, True),
    (8, 2.5, True),
]


@pytest.mark.parametrize("backfill", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_rlscheduler_transliteration(case, backfill):
    max_nodes, ppn, tie_heavy = CASES[case]
    rng = np.random.default_rng(100 + case)
    length, n_starts = 40, 3
    for _ in range(4):
        w, jobs = random_workload(rng, 90, max_nodes, ppn, tie_heavy)
        starts = sorted(rng.choice(90 - length + 1, n_starts, replace=False).tolist())
        results, _ = simulate_lanes(w, starts, length, list(POLICIES), backfill)
        ref = RefSched(jobs, max_nodes, w.max_procs, backfill)
        for policy in POLICIES:
            start_t, order, last = results[policy]
            for k, s in enumerate(starts):
                times, ref_order, bsld, util = ref.schedule(policy, s, length)
                where = f"policy {policy}, start {s}, case {CASES[case]}, backfill {backfill}"
                assert start_t[k].tolist() == times, where
                assert order[k].tolist() == ref_order, where
                m = sequence_metrics(
                    np.asarray(w.submit)[s : s + length],
                    np.asarray(w.run)[s : s + length],
                    np.asarray(w.cores)[s : s + length],
                    start_t[k],
                    order[k],
                    last[k],
                    w.max_procs,
                )
                assert m["bsld"] == bsld, where
                assert m["util"] == pytest.approx(util, rel=1e-12, nan_ok=True), where


# --- hand-computed --------------------------------------------------------------------------------------


def tiny():
    """4 nodes. Job 0 takes 3 nodes for 10 s; job 1 (2 nodes) arrives at 1 and is committed to; jobs 2
    and 3 (1 node, short) arrive at 2 and 3."""
    return make_workload(
        submit=[0, 1, 2, 3],
        run=[10, 5, 1, 2],
        cores=[3, 2, 1, 1],
        req_time=[10, 5, 1, 2],
        max_procs=4,
        max_nodes=4,
    )


def test_committed_choice_without_backfill():
    # SJF would prefer job 2 (1 s) once it arrives, and it would fit, but job 1 is already committed:
    # it waits for job 0's end at 10; jobs 2 and 3 follow at 10.
    out = simulate_sequence(tiny(), 0, 4, "sjf", backfill=False)
    assert out["start_time"].tolist() == [0, 10, 10, 10]
    assert out["bsld"] == pytest.approx((1 + 14 / 10 + 1 + 1) / 4)
    # util divides by (last start - first submit) * MaxProcs, not by the makespan
    assert out["util"] == pytest.approx((30 + 10 + 1 + 2) / (10 * 4))


def test_backfill_hand_computed():
    # Job 1 blocked at t=1: earliest start = job 0's requested end 10. Job 2 (2 + 1 < 10) back-fills at 2;
    # job 3 arrives at 3 (arrival before job 2's release at 3), finds no node, then back-fills at 3 after
    # job 2's release; job 1 starts at 10.
    out = simulate_sequence(tiny(), 0, 4, "fcfs", backfill=True)
    assert out["start_time"].tolist() == [0, 10, 2, 3]
    assert out["order"].tolist() == [0, 3, 1, 2]


def test_backfill_respects_earliest_start_strictly():
    # Earliest start of job 1 = 10. Job 2 would end exactly then (1 + 9 = 10): not back-filled (strict <);
    # job 3, arriving after it, ends at 9 and is.
    w = make_workload(
        submit=[0, 1, 1, 1],
        run=[10, 5, 9, 8],
        cores=[3, 2, 1, 1],
        req_time=[10, 5, 9, 8],
        max_procs=4,
        max_nodes=4,
    )
    out = simulate_sequence(w, 0, 4, "fcfs", backfill=True)
    assert out["start_time"].tolist() == [0, 10, 10, 1]


def test_quirk_and_real_wait_orders():
    # Job 0 fills the machine until 20; job 1 (4 nodes, 1 s) arrives at 5 and is committed to; jobs 2-4
    # arrive at 5 too and are ordered at 20/21 by the policy.
    # Job 2: r=4, n=1; job 3: r=40, n=1; job 4: r=4, n=2.
    w = make_workload(
        submit=[0, 5, 5, 5, 5],
        run=[20, 1, 4, 40, 4],
        cores=[4, 4, 1, 1, 2],
        req_time=[20, 1, 4, 40, 4],
        max_procs=4,
        max_nodes=4,
    )

    def order(policy):
        out = simulate_sequence(w, 0, 5, policy, False)
        assert out["start_time"].tolist() == [0, 20, 21, 21, 21]
        return out["order"].tolist()

    # WFP3 as published ranks ((1 + s) / r)^3 n ascending: 3 (0.0034), 2 (3.4), 4 (6.75)
    assert order("wfp3") == [0, 1, 3, 2, 4]
    # UNI as published: (1 + s) / (log2(n + 1e-15) r); log2(1 + 1e-15) ~ 1.6e-15 puts serial jobs last
    assert order("uni") == [0, 1, 4, 3, 2]
    # real waiting time 15 s at t=20: -(15/r)^3 n picks 4, then (t=21) 2, then 3
    assert order("wfp3_real") == [0, 1, 3, 4, 2]
    # -(w + 1e-15) / (log2(n + 1e-15) r): serial jobs first, the shorter one first
    assert order("uni_real") == [0, 1, 2, 3, 4]
    assert set(DYNAMIC_POLICIES) == {"wfp3_real", "uni_real"}


# --- API errors -----------------------------------------------------------------------------------------


def test_errors():
    w = tiny()
    with pytest.raises(ValueError, match="unknown policy"):
        compute_table(w, [0], 4, ["nope"], False, "bsld")
    with pytest.raises(ValueError, match="unknown metric"):
        compute_table(w, [0], 4, ["fcfs"], False, "wait")
    with pytest.raises(ValueError, match="out of range"):
        compute_table(w, [1], 4, ["fcfs"], False, "bsld")
    with pytest.raises(ValueError, match="random:N:SEED"):
        parse_starts("random:3", 4, 2)


def test_parse_starts():
    assert parse_starts("3, 5", 10, 5) == [3, 5]
    starts = parse_starts("random:50:7", 10, 4)
    assert len(starts) == 50 and min(starts) >= 0 and max(starts) <= 6
    assert starts == parse_starts("random:50:7", 10, 4)
    # RLScheduler's test sequences (gym 0.15 seeding, seed 1) on a 10000-job trace
    assert parse_starts("rlscheduler:10:1", 10000, 1024) == [
        1981,
        2756,
        4299,
        8850,
        3316,
        2714,
        5228,
        7762,
        4022,
        7085,
    ]


def test_cli_errors(tmp_path, capsys):
    assert main(["hpc-table", "--trace", str(tmp_path / "missing.swf")]) == 2
    assert "not found" in capsys.readouterr().err
    trace = tmp_path / "t.swf"
    trace.write_text(
        "; MaxNodes: 4\n"
        + "\n".join(f"{i} {i} -1 5 1 -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1" for i in range(1, 6))
    )
    assert main(["hpc-table", "--trace", str(trace), "--length", "3", "--starts", "3"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert main(["hpc-table", "--trace", str(trace), "--length", "3", "--starts", "0", "--metric", "x"]) == 2
    assert (
        main(["hpc-table", "--trace", str(trace), "--length", "3", "--starts", "0", "--policies", "fcfs,x"])
        == 2
    )
    assert main(["hpc-table", "--trace", str(trace), "--length", "3", "--starts", "0,2", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["means"]) == ["fcfs", "wfp3", "uni", "sjf", "f1"] and all(
        v == 1.0 for v in out["means"].values()
    )
    assert out["trace"]["jobs"] == out["trace"]["rows"] and out["starts"] == [0, 2]


# --- the real traces: RLScheduler's published Table V/VI numbers -----------------------------------------

# README of DIR-LAB/deep-batch-scheduler (= paper Tables V and VI): FCFS, WFP3, UNI, SJF, F1;
# 10 sequences of 1024 jobs drawn with seed 1.
PUBLISHED = {
    ("lublin_256.swf", "bsld", False): [7273.77, 19753.53, 22274.74, 277.35, 258.37],
    ("lublin_256.swf", "bsld", True): [235.82, 133.87, 307.23, 73.31, 75.07],
    ("lublin_256_new2.swf", "bsld", False): [7842.47, 9523.18, 11265.31, 787.89, 698.34],
    ("lublin_256_new2.swf", "bsld", True): [247.61, 318.35, 379.59, 91.99, 148.25],
    ("lublin_256.swf", "util", False): [0.657, 0.747, 0.691, 0.762, 0.816],
    ("lublin_256.swf", "util", True): [0.868, 0.864, 0.883, 0.778, 0.840],
    ("lublin_256_new2.swf", "util", False): [0.404, 0.543, 0.510, 0.562, 0.478],
    ("lublin_256_new2.swf", "util", True): [0.587, 0.583, 0.587, 0.593, 0.552],
}


def trace_outcome(path: Path) -> tuple[str, str]:
    """What `require_trace` does to a test: ("Failed" | "Skipped", message) or ("runs", "").
    Caught by hand: a skip raised inside `pytest.raises` would skip this test instead of failing it."""
    try:
        require_trace(path)
    except (pytest.fail.Exception, pytest.skip.Exception) as e:
        return type(e).__name__, str(e)
    return "runs", ""


@pytest.mark.parametrize("ci", ["true", "1"])
def test_missing_trace_fails_in_ci_and_skips_elsewhere(tmp_path, monkeypatch, ci):
    missing, present = tmp_path / "none.swf", tmp_path / "t.swf"
    present.write_text("; MaxNodes: 4\n")
    monkeypatch.setenv("CI", ci)
    assert trace_outcome(missing) == (
        "Failed",
        f"{missing} not available, and CI is set: CI must run this against ../shared/data",
    )
    assert trace_outcome(present) == ("runs", "")
    for unset in ("", "false"):
        monkeypatch.setenv("CI", unset)
        assert trace_outcome(missing) == ("Skipped", f"{missing} not available")
    monkeypatch.delenv("CI")
    assert trace_outcome(missing) == ("Skipped", f"{missing} not available")
    assert trace_outcome(present) == ("runs", "")


@pytest.mark.slow
@pytest.mark.parametrize("trace, metric, backfill", list(PUBLISHED))
def test_published_table(trace, metric, backfill, tmp_path):
    path = HPC / trace
    require_trace(path)
    out = tmp_path / "table.json"
    argv = ["hpc-table", "--trace", str(path), "--metric", metric, "--json", str(out)]
    assert main(argv + (["--backfill"] if backfill else [])) == 0
    table = json.loads(out.read_text())["means"]
    assert list(table) == ["fcfs", "wfp3", "uni", "sjf", "f1"]
    digits = 2 if metric == "bsld" else 3
    assert [round(v, digits) for v in table.values()] == PUBLISHED[(trace, metric, backfill)]
