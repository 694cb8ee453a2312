"""`workloads.dl_traces`: Philly's `cluster_job_log` (JSON) and Helios's `cluster_log.csv` read from small
files written in their published formats (the repositories' READMEs), jobs and drop counts by hand,
malformed entries refused with one line naming file, line or entry, and field; both wired into the
configs (`workload.source: philly_log` for SCED², `helios` for DAS)."""

# ruff: noqa: E501  (trace rows and entries are quoted whole, in their formats)

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxsched.workloads.ddl import UNKNOWN_MODEL
from jaxsched.workloads.dl_traces import load_helios, load_philly_log
from jaxsched.workloads.dlt import DLT_MODELS


def _attempt(start, end, *machines):
    return {"start_time": start, "end_time": end,
            "detail": [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]} for i, n in enumerate(machines)]}  # fmt: skip


def _job(jobid, submitted, attempts, status="Pass"):
    return {"status": status, "vc": "ee9e8c", "jobid": jobid, "attempts": attempts,
            "submitted_time": submitted, "user": "ce2f4c"}  # fmt: skip


# The README's example entry (two attempts on one 8-GPU server), a 1-GPU job submitted earlier, a job retried
# from 4 GPUs onto two 8-GPU servers, and three that cannot be scheduled.
PHILLY = [
    _job("application_1506638472019_14199", "2017-10-07 01:11:39", [
        _attempt("2017-10-07 01:12:09", "2017-10-07 01:13:23", 8),
        _attempt("2017-10-07 01:13:30", "2017-10-09 06:53:12", 8),
    ]),
    _job("application_2", "2017-10-07 01:01:39", [_attempt("2017-10-07 01:02:00", "2017-10-07 01:03:40", 1)],
         status="Killed"),
    _job(
        "application_3",
        "2017-10-07 02:00:00",
        [  # a first attempt on 4 GPUs, retried on two 8-GPU servers: the last attempt's GPUs count
            _attempt("2017-10-07 02:00:00", "2017-10-07 02:05:00", 4),
            _attempt("2017-10-07 02:06:00", "2017-10-07 03:00:00", 8, 8),
        ],
        status="Failed",
    ),
    _job("application_4", "2017-10-07 02:10:00", []),                                          # no attempt
    _job("application_5", "2017-10-07 02:20:00", [_attempt("2017-10-07 02:20:05", None, 2)]),  # running
    _job("application_6", "2017-10-07 02:30:00", [_attempt("2017-10-07 02:30:05", "2017-10-07 02:31:00")]),
]  # fmt: skip


def _write(tmp_path, entries, name="cluster_job_log"):
    path = tmp_path / name
    path.write_text(json.dumps(entries, indent=4))
    return path


def test_philly_jobs_by_hand(tmp_path):
    w, report = load_philly_log(_write(tmp_path, PHILLY), model="vgg16")
    # sorted by submission, from the first: application_2 (01:01:39), the README's job, application_3
    np.testing.assert_array_equal(w.job_id, [1, 0, 2])
    np.testing.assert_array_equal(w.submit, [0, 600, 3501])
    np.testing.assert_array_equal(w.gpus, [1, 8, 16])
    # wall time from the first attempt's start to the last attempt's end: 2 d 5 h 41 m 3 s for the README's
    np.testing.assert_array_equal(w.duration, [100, 2 * 86400 + 5 * 3600 + 41 * 60 + 3, 3600])
    assert set(np.asarray(w.model).tolist()) == {DLT_MODELS.index("vgg16")}
    assert report.dropped == {"no_attempt": 1, "missing_time": 1, "no_gpu": 1}
    assert (report.n_rows, report.n_jobs, report.was_sorted) == (6, 3, False)
    assert "3 dropped (no_attempt)" not in report.changes() and "1 dropped (no_attempt)" in report.changes()
    assert "3 no model → vgg16" in report.changes()


def test_philly_jobs_wider_than_the_cluster(tmp_path):
    path = _write(tmp_path, PHILLY)
    with pytest.raises(
        ValueError, match=r"job 2 \(application_3\): asks for 16 GPUs, more than the cluster's 8"
    ):
        load_philly_log(path, cluster_gpus=8)
    w, report = load_philly_log(path, cluster_gpus=8, drop_too_wide=True)
    assert w.n_jobs == 2 and report.n_dropped_too_wide == 1


@pytest.mark.parametrize(
    "entry,message",
    [
        ("not a job", r"job 6: a job must be a JSON object, got str"),
        ({"jobid": "a7", "attempts": []}, r"job 6 \(a7\): no 'submitted_time' key"),
        (_job("a7", "07/10/2017", []), r"job 6 \(a7\): submitted_time '07/10/2017' is not a time"),
        (_job("a7", "2017-10-07 01:00:00", {"x": 1}), r"job 6 \(a7\): attempts must be a list, got dict"),
        (_job("a7", "2017-10-07 01:00:00", [_attempt("2017-10-07 1 pm", "2017-10-07 02:00:00", 1)]),
         r"job 6 \(a7\): attempts\[0\].start_time '2017-10-07 1 pm' is not a time"),
        (_job("a7", "2017-10-07 01:00:00", [{"start_time": "2017-10-07 01:00:00",
                                             "end_time": "2017-10-07 02:00:00", "detail": [{"gpus": 4}]}]),
         r"job 6 \(a7\): attempts\[0\].detail\[0\].gpus must be a list"),
        (_job("application_2", "2017-10-07 01:00:00", [_attempt("2017-10-07 01:00:00", "2017-10-07 02:00:00", 1)]),
         r"job 6 \(application_2\): jobid repeats job 1"),
    ],
)  # fmt: skip
def test_philly_malformed_entries_are_one_line(tmp_path, entry, message):
    with pytest.raises(ValueError, match=message) as err:
        load_philly_log(_write(tmp_path, [*PHILLY, entry]))
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


def test_philly_whole_file_errors(tmp_path):
    bad = tmp_path / "log"
    bad.write_text("[{")
    with pytest.raises(ValueError, match=r"not JSON \(.* at line 1, column 3\)"):
        load_philly_log(bad)
    with pytest.raises(ValueError, match=r"a JSON list of jobs, got dict"):
        load_philly_log(_write(tmp_path, {"jobs": PHILLY}))
    with pytest.raises(ValueError, match=r"every job dropped \(1 no_attempt, 1 missing_time\)"):
        load_philly_log(_write(tmp_path, PHILLY[3:5]))
    with pytest.raises(ValueError, match=r"model must be one of transformer, .* got 'bert'"):
        load_philly_log(_write(tmp_path, PHILLY), model="bert")


HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
# The README's three rows, a CPU job, a two-node job, a job of 3 GPUs on 2 nodes and one wider than 8 machines.
HELIOS_ROWS = [
    "1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0",
    "1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0",
    "1425513,uzqls,vcpDC,1,1,1,CANCELLED,2020-06-09 18:41:28,2020-06-09 18:41:28,2020-06-17 14:15:21,675233,0",
    "1425514,uzqls,vcpDC,0,8,1,COMPLETED,2020-06-09 18:41:00,2020-06-09 18:41:30,2020-06-09 18:42:30,60,30",
    "1425515,uXBbc,vcJkd,16,32,2,COMPLETED,2020-06-09 18:42:00,2020-06-09 18:43:00,2020-06-09 19:43:00,3600,60",
    "1425516,uXBbc,vcJkd,3,4,2,TIMEOUT,2020-06-09 18:43:00,2020-06-09 18:43:00,2020-06-09 18:53:00,600,0",
    "1425517,uVMrF,vchbv,80,80,10,COMPLETED,2020-06-09 18:44:00,2020-06-09 18:44:00,2020-06-09 18:45:00,60,0",
]


def _helios(tmp_path, rows, header=HELIOS_HEADER):
    path = tmp_path / "Venus" / "cluster_log.csv"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_helios_jobs_by_hand(tmp_path):
    path = _helios(tmp_path, HELIOS_ROWS)
    with pytest.raises(
        ValueError, match=r"line 8: job 1425517 \(10 node\(s\), 80 GPUs, 80 CPUs\) does not fit"
    ):
        load_helios(path)
    w, report = load_helios(path, drop_too_large=True)
    np.testing.assert_array_equal(w.job_id, [1425511, 1425512, 1425513, 1425515, 1425516])
    np.testing.assert_array_equal(w.submit, [0, 26, 27, 59, 119])  # from 18:41:01, the first kept submission
    np.testing.assert_array_equal(w.n_inst, [1, 1, 1, 2, 2])
    np.testing.assert_array_equal(w.gpu, [100, 400, 100, 800, 150])  # per instance, 1/100 GPU
    np.testing.assert_array_equal(w.cpu, [100, 1600, 100, 1600, 200])
    np.testing.assert_array_equal(w.mem, np.array([1, 4, 1, 8, 1.5]) * 49152)  # a V100 machine's per GPU
    np.testing.assert_array_equal(w.work, [36848, 249, 675233, 3600, 600])
    assert set(np.asarray(w.model).tolist()) == {UNKNOWN_MODEL}
    assert report["dropped"] == {"no_gpu": 1, "too_large": 1} and report["rounded_up"] == 0
    assert report["states"] == {"COMPLETED": 2, "FAILED": 1, "CANCELLED": 1, "TIMEOUT": 1}
    w, report = load_helios(path, drop_too_large=True, states=["completed"])
    assert w.num_jobs == 2 and report["dropped"]["state"] == 3  # FAILED, CANCELLED, TIMEOUT


@pytest.mark.parametrize(
    "row,message",
    [
        ("1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,x,y,10", r"line 9: 11 fields, the header has 12"),
        ("1,u,vc,four,1,1,COMPLETED,2020-06-09 18:41:01,x,y,10,0", r"line 9: gpu_num 'four' is not a number"),
        (
            "1,u,vc,-2,1,1,COMPLETED,2020-06-09 18:41:01,x,y,10,0",
            r"line 9: gpu_num must be a whole number >= 0",
        ),
        ("1,u,vc,1.5,1,1,COMPLETED,2020-06-09 18:41:01,x,y,10,0", r"line 9: gpu_num must be a whole number"),
        ("1,u,vc,1,1,1,COMPLETED,June 9,x,y,10,0", r"line 9: submit_time 'June 9' is not a time"),
        (
            "1425511,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,x,y,10,0",
            r"line 9: job_id 1425511 repeats line 2",
        ),
        ("1,u,vc,2,1,0,COMPLETED,2020-06-09 18:41:01,x,y,10,0", r"line 9: node_num must be >= 1"),
    ],
)
def test_helios_malformed_rows_are_one_line(tmp_path, row, message):
    with pytest.raises(ValueError, match=message) as err:
        load_helios(_helios(tmp_path, [*HELIOS_ROWS, row]), drop_too_large=True)
    assert "\n" not in str(err.value) and "cluster_log.csv" in str(err.value)


def test_helios_whole_file_errors(tmp_path):
    with pytest.raises(ValueError, match=r"the header has no gpu_num, node_num column\(s\)"):
        load_helios(_helios(tmp_path, HELIOS_ROWS, header=HELIOS_HEADER.replace("gpu_num", "gpus").replace(
            "node_num", "nodes")))  # fmt: skip
    with pytest.raises(ValueError, match=r"no job kept \(1 no_gpu\)"):
        load_helios(_helios(tmp_path, HELIOS_ROWS[3:4]))
    with pytest.raises(FileNotFoundError, match="Helios cluster log not found"):
        load_helios(tmp_path / "nope.csv")


def test_both_traces_through_the_configs(tmp_path):
    """`workload.source: philly_log` builds SCED²'s episodes from the log; `helios` DAS's job bank."""
    from jaxsched.envs.gpu_cloud.setup import ClusterSection, job_bank
    from jaxsched.envs.gpu_cloud.setup import WorkloadSection as CloudWorkload
    from jaxsched.envs.gpu_locality.setup import EnvSection, build
    from jaxsched.envs.gpu_locality.setup import WorkloadSection as LocalityWorkload

    log = _write(tmp_path, PHILLY)
    w = LocalityWorkload(
        source="philly_log", path=str(log), train_episodes=1, test_episodes=1, jobs_per_episode=1
    )
    env, train, test = build(EnvSection(), w)
    assert int(train.gpus[0]) == 1 and int(test.gpus[0]) == 8  # in arrival order: train, then test
    with pytest.raises(ValueError, match=r"workload.path is required when workload.source is 'philly_log'"):
        LocalityWorkload(source="philly_log")

    helios = CloudWorkload(
        source="helios", helios_csv=str(_helios(tmp_path, HELIOS_ROWS)), max_dropped_frac=0.5
    )
    bank, note = job_bank(ClusterSection(), helios)
    assert bank.num_jobs == 5 and "1 of 6 jobs" in note
    with pytest.raises(ValueError, match=r"workload.source 'helios' needs workload.helios_csv"):
        CloudWorkload(source="helios")
