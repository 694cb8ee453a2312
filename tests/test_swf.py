"""SWF reader/writer: header variants, RLScheduler's row rules, error messages, real traces, round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jaxsched.workloads.base import make_workload, validate_workload
from jaxsched.workloads.swf import (
    SWFHeader,
    SWFReport,
    load_swf,
    load_swf_with_report,
    parse_swf_text,
    parse_swf_text_with_report,
    write_swf,
)

HPC = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hpc"


def row(job_id, submit, run, alloc=1, req_procs=-1, req_time=-1, user=-1, queue=-1):
    """One 18-column SWF line."""
    cols = [
        job_id,
        submit,
        -1,
        run,
        alloc,
        -1,
        -1,
        req_procs,
        req_time,
        -1,
        1,
        user,
        -1,
        -1,
        queue,
        -1,
        -1,
        -1,
    ]
    return " ".join(str(c) for c in cols)


def swf(*rows, header="; MaxNodes: 8"):
    return "\n".join([header, *rows]) + "\n"


def arr(w, field):
    return np.asarray(getattr(w, field)).tolist()


# --- header ---------------------------------------------------------------------------------------------


def test_header_maxnodes_only():
    w, r = parse_swf_text_with_report(swf(row(1, 0, 5), header="; MaxNodes: 16"))
    assert (w.max_procs, w.max_nodes, w.procs_per_node) == (16, 16, 1)
    assert r.header == SWFHeader(max_nodes=16, max_procs=16, fields={"MaxNodes": "16"})


def test_header_maxprocs_only_case_and_spaces():
    w, r = parse_swf_text_with_report(swf(row(1, 0, 5), header=";   maxprocs :   32  "))
    assert (w.max_procs, w.max_nodes, w.procs_per_node) == (32, 0, 1)
    assert r.header.get("MAXPROCS") == "32"


def test_header_both_procs_per_node():
    text = swf(row(1, 0, 5, alloc=256), header="; Version: 2\n; MaxNodes: 64\n; MaxProcs: 256\n; Note: a: b")
    w, r = parse_swf_text_with_report(text)
    assert (w.max_procs, w.max_nodes, w.procs_per_node) == (256, 64, 4)
    assert r.header.fields["Version"] == "2" and r.header.fields["Note"] == "a: b"


def test_header_missing_is_error_unless_n_cores():
    text = "; just a comment\n" + row(1, 0, 5, alloc=4) + "\n"
    with pytest.raises(ValueError, match=r"no 'MaxNodes'/'MaxProcs' header.*n_cores="):
        parse_swf_text(text)
    w = parse_swf_text(text, n_cores=8)
    assert w.max_procs == 8 and w.num_jobs == 1


def test_n_cores_overrides_header():
    w = parse_swf_text(swf(row(1, 0, 5, alloc=4), header="; MaxNodes: 2\n; MaxProcs: 8"), n_cores=4)
    assert (w.max_procs, w.max_nodes) == (4, 0)  # resized machine: header nodes no longer apply
    w = parse_swf_text(swf(row(1, 0, 5, alloc=4), header="; MaxNodes: 2\n; MaxProcs: 8"), n_cores=8)
    assert (w.max_procs, w.max_nodes) == (8, 2)


def test_bad_header_value():
    with pytest.raises(ValueError, match=r"line 2: header field 'MaxNodes' is not an integer: 'lots'"):
        parse_swf_text("; Version: 2\n; MaxNodes: lots\n" + row(1, 0, 5) + "\n")


@pytest.mark.parametrize(
    "header,line,field,value",
    [
        ("; MaxNodes: 0", 1, "MaxNodes", 0),
        ("; Version: 2\n; MaxProcs: 0", 2, "MaxProcs", 0),
        ("; MaxNodes: 128\n; MaxProcs: 0", 2, "MaxProcs", 0),  # not silently MaxNodes instead
        ("; MaxProcs: 64\n; maxnodes: -1", 2, "maxnodes", -1),
    ],
)
def test_header_machine_size_below_one_is_an_error_not_a_missing_header(header, line, field, value):
    text = swf(row(1, 0, 5), header=header)
    with pytest.raises(ValueError) as err:
        parse_swf_text(text, source="t.swf")
    msg = str(err.value)
    assert msg.startswith(f"t.swf: line {line}: header field '{field}' is {value}, not a machine size")
    assert "no 'MaxNodes'/'MaxProcs' header" not in msg and "n_cores=" in msg
    w, r = parse_swf_text_with_report(text, n_cores=8)  # the machine size given: the header is not used
    assert w.max_procs == 8 and r.max_procs == 8


# --- row rules ------------------------------------------------------------------------------------------


def test_fields_and_unknowns():
    text = swf(row(7, 3, 100, alloc=2, req_time=-1, user=5, queue=1), row(9, 4, 50, alloc=4, req_time=60))
    w, r = parse_swf_text_with_report(text, name="t")
    assert arr(w, "job_id") == [7, 9]
    assert arr(w, "submit") == [3, 4]
    assert arr(w, "run") == [100, 50]
    assert arr(w, "req_time") == [100, 60]  # -1 -> run time
    assert arr(w, "cores") == [2, 4]
    assert arr(w, "user") == [5, -1]
    assert arr(w, "queue") == [1, -1]
    assert w.name == "t" and r.n_req_time_from_run == 1 and r.n_jobs == 2 and r.n_columns == 18
    validate_workload(w)


def test_cores_is_max_of_allocated_and_requested():
    text = swf(row(1, 0, 5, alloc=2, req_procs=6), row(2, 1, 5, alloc=-1, req_procs=3), row(3, 2, 5, alloc=4))
    assert arr(parse_swf_text(text), "cores") == [6, 3, 4]


def test_no_cores_is_error():
    with pytest.raises(ValueError, match=r"line 3: job id 2 has no processor count: column 5"):
        parse_swf_text(swf(row(1, 0, 5), row(2, 1, 5, alloc=-1, req_procs=0)))


def test_float_fields_rounded():
    text = swf("1 0.0 -1 12.0 2.0 -1 -1 -1 30.0 -1 1 -1 -1 -1 -1 -1 -1 -1")
    w = parse_swf_text(text)
    assert (arr(w, "run"), arr(w, "req_time"), arr(w, "cores")) == ([12], [30], [2])


@pytest.mark.parametrize("col,alloc,req_procs", [(5, "2.5", "-1"), (8, "1", "3.25")])
def test_fractional_cores_are_an_error_naming_job_and_column(col, alloc, req_procs):
    text = swf(row(1, 0, 5), row(7, 1, 5, alloc=alloc, req_procs=req_procs))
    name = "allocated procs" if col == 5 else "requested procs"
    with pytest.raises(ValueError) as err:
        parse_swf_text(text)
    assert str(err.value) == (
        f"<string>: line 3: job id 7: column {col} ({name}) is not a whole number: "
        f"'{alloc if col == 5 else req_procs}'"
    )


def test_fractional_job_id_is_an_error():
    with pytest.raises(ValueError, match=r"line 2: column 1 \(job id\) is not a whole number: '1.5'"):
        parse_swf_text(swf(row("1.5", 0, 5), row(2, 1, 5)))


def test_duplicate_job_id_is_an_error_naming_both_lines():
    text = swf(row(4, 0, 5), row(9, 1, 5), row(5, 2, 0), row(9, 3, 5), row(4, 4, 5))
    with pytest.raises(ValueError) as err:
        parse_swf_text(text, source="d.swf")
    assert str(err.value) == "d.swf: line 5: column 1 (job id) 9 is a duplicate (first at line 3)"
    # a dropped (zero run time) row still owns its id
    with pytest.raises(ValueError, match=r"line 3: column 1 \(job id\) 1 is a duplicate \(first at line 2\)"):
        parse_swf_text(swf(row(1, 0, 0), row(1, 1, 5)))


@pytest.mark.parametrize("req", [0, -2, -3600])
def test_requested_time_zero_or_below_minus_one_is_an_error(req):
    text = swf(row(1, 0, 5, req_time=-1), row(2, 1, 5, req_time=req))
    with pytest.raises(ValueError) as err:
        parse_swf_text(text)
    assert str(err.value) == (
        f"<string>: line 3: job id 2: column 9 (requested time) must be > 0, or -1 for unknown, got {req}"
    )


def test_requested_time_minus_one_is_the_run_time_counted():
    # the documented fallback, exactly -1 ("-1.0" too); dropped rows are not checked or counted
    text = swf(
        row(1, 0, 50, req_time=-1),
        row(2, 1, 7, req_time="-1.0"),
        row(3, 2, 9, req_time=20),
        row(4, 3, 0, req_time=0),
    )
    w, r = parse_swf_text_with_report(text)
    assert arr(w, "req_time") == [50, 7, 20] and r.n_req_time_from_run == 2


def test_negative_run_becomes_10_and_zero_run_dropped():
    text = swf(row(1, 0, -1), row(2, 1, 0), row(3, 2, 0), row(4, 3, 7), row(5, 4, -5, req_time=100))
    w, r = parse_swf_text_with_report(text)
    assert arr(w, "job_id") == [1, 4, 5]
    assert arr(w, "run") == [10, 7, 10]
    assert arr(w, "req_time") == [10, 7, 100]
    assert (r.n_rows, r.n_jobs, r.n_dropped_zero_runtime, r.n_negative_runtime_fixed) == (5, 3, 2, 2)


def test_negative_submit_is_error():
    with pytest.raises(ValueError, match=r"line 3: column 2 \(submit time\) is negative: -4 \(job id 2\)"):
        parse_swf_text(swf(row(1, 0, 5), row(2, -4, 5)))


def test_only_zero_runtime_rows_is_error():
    with pytest.raises(ValueError, match=r"no jobs left \(1 rows, 1 dropped with zero run time"):
        parse_swf_text(swf(row(1, 0, 0)))


def test_too_wide_error_and_drop():
    text = swf(
        row(1, 0, 5, alloc=4), row(2, 1, 5, alloc=9), row(3, 2, 5, alloc=8), row(4, 3, 5, req_procs=20)
    )
    with pytest.raises(
        ValueError, match=r"line 3: job id 2 needs 9 cores, more than the machine's 8.*drop_too_wide"
    ):
        parse_swf_text(text)
    w, r = parse_swf_text_with_report(text, drop_too_wide=True)
    assert arr(w, "job_id") == [1, 3] and r.n_dropped_too_wide == 2 and w.max_procs == 8
    with pytest.raises(ValueError, match=r"job id 3 needs 8 cores, more than the machine's 4 \(n_cores=4\)"):
        parse_swf_text(swf(row(3, 2, 5, alloc=8)), n_cores=4)


# --- ordering -------------------------------------------------------------------------------------------


UNSORTED = swf(row(1, 10, 5), row(2, 0, 5), row(4, 10, 5), row(3, 10, 5), row(5, 20, 5))


def test_unsorted_rows_sorted_by_submit_then_job_id():
    w, r = parse_swf_text_with_report(UNSORTED)
    assert arr(w, "job_id") == [2, 1, 3, 4, 5]
    assert arr(w, "submit") == [0, 10, 10, 10, 20]
    assert r.was_sorted is False
    validate_workload(w)
    assert parse_swf_text_with_report(swf(row(1, 0, 5), row(2, 0, 5)))[1].was_sorted is True


def test_sort_none_unsorted_is_error_naming_job():
    with pytest.raises(
        ValueError, match=r"file order are not in submit order: job id 2 \(line 3\) submits at 0"
    ):
        parse_swf_text(UNSORTED, sort="none")
    w = parse_swf_text(swf(row(3, 0, 5), row(1, 1, 5)), sort="none")
    assert arr(w, "job_id") == [3, 1]


def test_sort_job_id():
    w = parse_swf_text(swf(row(2, 5, 5), row(1, 0, 5)), sort="job_id")
    assert arr(w, "job_id") == [1, 2]
    with pytest.raises(
        ValueError, match=r"job id are not in submit order: job id 2 \(line 2\).*sort='submit'"
    ):
        parse_swf_text(swf(row(2, 0, 5), row(1, 5, 5)), sort="job_id")
    with pytest.raises(ValueError, match=r"sort must be one of"):
        parse_swf_text(UNSORTED, sort="arrival")


# --- malformed lines: messages carry the file's line numbers -----------------------------------------


def test_missing_columns_error_counts_header_and_blank_lines():
    text = "; MaxNodes: 8\n\n" + row(1, 0, 5) + "\n\n   \n1 2 -1 5 1\n"
    with pytest.raises(ValueError, match=r"<string>: line 6: found 5 columns, SWF needs 18"):
        parse_swf_text(text)


def test_extra_columns_mixed_is_error_uniform_is_ignored():
    with pytest.raises(ValueError, match=r"line 3: found 19 columns, SWF has 18"):
        parse_swf_text(swf(row(1, 0, 5), row(2, 1, 5) + " 0"))
    w, r = parse_swf_text_with_report(swf(row(1, 0, 5) + " 0", row(2, 1, 5) + " 0"))
    assert w.num_jobs == 2 and r.n_columns == 19


def test_text_in_number_field_names_line_and_column():
    text = "; MaxNodes: 8\n; c\n\n" + row(1, 0, 5) + "\n" + row(2, 1, 5).replace(" 5 ", " abc ", 1) + "\n"
    with pytest.raises(
        ValueError, match=r"mytrace.swf: line 5: column 4 \(run time\) is not a number: 'abc'"
    ):
        parse_swf_text(text, source="mytrace.swf")
    with pytest.raises(
        ValueError, match=r"line 2: column 12 \(user id\) is not a finite int32 number: 'nan'"
    ):
        parse_swf_text(swf(row(1, 0, 5, user="nan")))


def test_error_line_numbers_survive_filtering():
    # Row 2 (line 3) is dropped for zero run time; the too-wide error must still name line 5.
    text = swf(row(1, 0, 5), row(2, 1, 0), "", row(3, 2, 5, alloc=99))
    with pytest.raises(ValueError, match=r"line 5: job id 3 needs 99 cores"):
        parse_swf_text(text)


# --- files ----------------------------------------------------------------------------------------------


def test_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    n = 50
    w = make_workload(
        submit=np.sort(rng.integers(0, 10_000, n)),
        run=rng.integers(1, 5_000, n),
        cores=rng.integers(1, 65, n),
        req_time=rng.integers(1, 9_000, n),
        user=rng.integers(-1, 5, n),
        queue=rng.integers(-1, 2, n),
        job_id=np.arange(100, 100 + n),
        max_procs=64,
        max_nodes=16,
        name="rt",
    )
    for fname in ("rt.swf", "rt.swf.gz"):
        path = tmp_path / fname
        write_swf(path, w, header_extra={"Version": 2, "Note": "synthetic"})
        w2, r = load_swf_with_report(path)
        for f in ("job_id", "submit", "run", "req_time", "cores", "user", "queue"):
            assert arr(w2, f) == arr(w, f), f
        assert (w2.max_procs, w2.max_nodes, w2.name) == (64, 16, "rt")
        assert r.header.fields["Note"] == "synthetic" and r.was_sorted
    lines = (tmp_path / "rt.swf").read_text().splitlines()
    assert lines[0] == "; Version: 2" and "; MaxProcs: 64" in lines
    assert all(len(line.split()) == 18 for line in lines if not line.startswith(";"))
    with pytest.raises(ValueError, match=r"may not set 'MaxProcs'"):
        write_swf(tmp_path / "x.swf", w, header_extra={"MaxProcs": 3})


def _real(name):
    path = HPC / name
    if not path.exists():
        pytest.skip(f"sample trace {path} not available")
    return path


def test_lublin_256():
    w, r = load_swf_with_report(_real("lublin_256.swf"))
    assert isinstance(r, SWFReport)
    assert w.num_jobs == 10_000 - r.n_dropped_zero_runtime and r.n_rows == 10_000
    assert w.max_procs == 256 and w.name == "lublin_256"
    cores, run = np.asarray(w.cores), np.asarray(w.run)
    assert 4 <= np.median(cores) <= 16 and 15 <= cores.mean() <= 30
    assert (run > 0).all() and (np.asarray(w.req_time) == run).all()
    assert r.was_sorted


def test_lublin_256_new2():
    w = load_swf(_real("lublin_256_new2.swf"))
    assert w.max_procs == 256 and w.num_jobs > 9_000
    assert set(arr(w, "queue")) == {0, 1}


def test_theta_unsorted():
    w, r = load_swf_with_report(_real("theta_walltime.swf"))
    assert r.was_sorted is False and r.n_columns == 19
    assert w.max_procs == 4392 and w.num_jobs == r.n_rows - r.n_dropped_zero_runtime
    validate_workload(w, 4392)
    assert (np.asarray(w.req_time) != np.asarray(w.run)).mean() > 0.5
    with pytest.raises(ValueError, match=r"file order are not in submit order"):
        load_swf(_real("theta_walltime.swf"), sort="none")


def test_a_job_ending_past_the_int32_clock_is_rejected():
    """submit + run must fit the simulators' int32 seconds, or the end wraps negative and the job's cores
    look free (2^31 − 100 + 200 wraps); the error names the field and the job."""
    top = 2**31 - 1
    make_workload([0, top - 200], [100, 200], [1, 1])  # ends exactly at the last representable second
    with pytest.raises(ValueError, match=r"'submit': job index 1 \(job_id 2\) would end at 2147483748"):
        make_workload([0, top - 99], [100, 200], [1, 1])
    with pytest.raises(ValueError, match="int32 clock"):  # the requested time counts too
        make_workload([0, top - 200], [100, 200], [1, 1], req_time=[100, 201])
