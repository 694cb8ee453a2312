"""The DLT trace CSV loader (`workloads.dlt.load_dlt_csv`) for SCED²'s cluster: both layouts read to the
same jobs, arrival order, and a one-line error naming the line and the column for every bad input."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.workloads.dlt import DLT_MODELS, check_model_map, load_dlt_csv

TIRESIAS = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
10,4,0,1000,vgg16,3600,0
11,1,30.0,500,Transformer,120,30
12,8,15,800,InceptionV3,7200.5,15
"""
PLAIN = """submit,gpus,duration,model
0,4,3600,vgg16
30,1,120,transformer
15,8,7200.5,inception3
"""


def write(tmp_path, text, name="trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_both_layouts_read_the_same_jobs_in_arrival_order(tmp_path):
    w, report = load_dlt_csv(write(tmp_path, TIRESIAS))
    np.testing.assert_array_equal(np.asarray(w.submit), [0.0, 15.0, 30.0])  # sorted by submit
    np.testing.assert_array_equal(np.asarray(w.job_id), [10, 12, 11])
    np.testing.assert_array_equal(np.asarray(w.gpus), [4, 8, 1])
    np.testing.assert_allclose(np.asarray(w.duration), [3600.0, 7200.5, 120.0])
    names = [DLT_MODELS[i] for i in np.asarray(w.model)]
    assert names == ["vgg16", "inception3", "transformer"]  # aliases and case folded
    assert report.layout == "tiresias" and report.n_jobs == 3 and not report.was_sorted
    p, plain_report = load_dlt_csv(write(tmp_path, PLAIN, "plain.csv"))
    for field in ("submit", "gpus", "duration", "model"):
        np.testing.assert_array_equal(np.asarray(getattr(p, field)), np.asarray(getattr(w, field)))
    np.testing.assert_array_equal(np.asarray(p.job_id), [0, 2, 1])  # plain: the row numbers
    assert plain_report.layout == "plain"


def test_too_wide_jobs_are_an_error_or_dropped_and_counted(tmp_path):
    path = write(tmp_path, TIRESIAS)
    with pytest.raises(ValueError, match=r"line 4: job 12 asks for 8 GPUs, more than the cluster's 4"):
        load_dlt_csv(path, cluster_gpus=4)
    w, report = load_dlt_csv(path, cluster_gpus=4, drop_too_wide=True)
    assert w.n_jobs == 2 and report.n_dropped_too_wide == 1 and report.n_rows == 3


@pytest.mark.parametrize(
    "row,message",
    [
        ("13,two,5,1,vgg16,60,0", r"line 5: num_gpu is not a number: 'two'"),
        ("13,1.5,5,1,vgg16,60,0", r"line 5: num_gpu must be a whole number"),
        ("13,0,5,1,vgg16,60,0", r"line 5: num_gpu must be >= 1, got 0"),
        ("13,1,5,1,vgg16,0,0", r"line 5: duration must be > 0"),
        ("13,1,-5,1,vgg16,60,0", r"line 5: submit_time must be >= 0"),
        ("13,1,nan,1,vgg16,60,0", r"line 5: submit_time must be finite"),
        ("10,1,5,1,vgg16,60,0", r"line 5: job_id 10 repeats line 2"),
        ("13,1,5,1,vgg16,60", r"line 5: 6 fields, the header has 7"),
    ],
)
def test_bad_rows_name_the_file_line_and_column(tmp_path, row, message):
    path = write(tmp_path, TIRESIAS + row + "\n")
    with pytest.raises(ValueError, match=message) as err:
        load_dlt_csv(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="DLT trace file not found"):
        load_dlt_csv(tmp_path / "none.csv")
    with pytest.raises(ValueError, match="empty file"):
        load_dlt_csv(write(tmp_path, "\n\n"))
    with pytest.raises(ValueError, match="line 1: the header 'a,b' is neither a Tiresias-style"):
        load_dlt_csv(write(tmp_path, "a,b\n1,2\n"))
    with pytest.raises(ValueError, match="no jobs"):
        load_dlt_csv(write(tmp_path, "submit,gpus,duration,model\n"))
    with pytest.raises(ValueError, match="cluster_gpus must be >= 1"):
        load_dlt_csv(write(tmp_path, PLAIN), cluster_gpus=0)


# Tiresias's simulator format (SymbioticLab/Tiresias `60_job.csv`: its header, its ten model names), rows
# of our own.
TIRESIAS_NAMES = """job_id,num_gpu,submit_time,iterations,model_name,duration,interval
0,1,0,600,vgg19,160,30
1,8,30,130,vgg11,150,20
2,2,50,150,inception4,130,25
3,1,80,500,vgg16,120,20
4,4,100,140,resnet152,120,30
5,2,130,190,resnet101,120,20
6,1,150,890,googlenet,130,30
7,1,180,3300,alexnet,180,40
8,1,220,820,resnet50,130,30
9,8,250,290,inception3,140,40
10,1,290,100,mobilenet,100,30
"""


def test_a_tiresias_trace_reads_through_the_model_map(tmp_path):
    """The default map takes every name of Tiresias's trace to the paper's model of its locality class
    and drops (and counts) one it does not know; no map is strict; a map's target must be a model."""
    path = write(tmp_path, TIRESIAS_NAMES)
    w, report = load_dlt_csv(path)
    names = [DLT_MODELS[i] for i in np.asarray(w.model)]
    assert names == ["vgg16", "vgg16", "inception3", "vgg16", "resnet50", "resnet50", "inception3", "alexnet",
                     "resnet50", "inception3"]  # fmt: skip
    assert report.n_rows == 11 and report.n_jobs == 10 and report.dropped_models == {"mobilenet": 1}
    pairs = ("vgg19 → vgg16", "vgg11 → vgg16", "inception4 → inception3", "resnet152 → resnet50",
             "resnet101 → resnet50", "googlenet → inception3")  # fmt: skip
    assert report.mapped == dict.fromkeys(pairs, 1)
    line = report.changes()
    assert line.startswith(f"{path}: of 11 jobs, 1 vgg19 → vgg16;") and line.endswith("1 mobilenet dropped")
    with pytest.raises(
        ValueError, match=r"line 2: model_name 'vgg19' is not a known model.*workload.model_map"
    ):
        load_dlt_csv(path, model_map=())
    w, report = load_dlt_csv(path, model_map=[("*", "vgg16")])  # everything else: one class
    assert report.n_jobs == 11 and report.mapped["mobilenet → vgg16"] == 1
    with pytest.raises(ValueError, match="model_map: 'x' maps to 'lenet', which is neither one of"):
        check_model_map([("x", "lenet")])
    assert load_dlt_csv(write(tmp_path, TIRESIAS))[1].changes() == ""  # nothing mapped: nothing said
