"""DDL workloads: the PAI-like generator (jit, determinism, vmap, documented statistics), validation
errors, cluster-fit pruning, episode helpers, the PAI 2020 loader on small CSVs, and the calibration
script against the shared data (skipped when `shared/data` is absent)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxsched.workloads.ddl import (
    DIURNAL_PROFILE,
    FLUCT_STD,
    MEAN_INTERARRIVAL_S,
    MODEL_COMM,
    MODEL_NAMES,
    PERF_CV,
    SIZE_TABLE,
    V100_MACHINE,
    WORK_LOG_MU,
    WORK_LOG_SIGMA,
    PAILikeConfig,
    drop_too_large,
    episode_starts,
    fits_empty_cluster,
    generate_pai_like,
    make_ddl_workload,
    pai_like_config,
    scale_load,
    tilted_sizes,
    train_test_split,
    validate_ddl_workload,
)
from jaxsched.workloads.pai import load_pai, model_index

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "calibrate_gpu_cloud.py"
N = 20_000
SMALL = {k: np.full(8, V100_MACHINE[k.split("_")[0]]) for k in ("gpu_cap", "cpu_cap", "mem_cap")}
FIELDS = ("job_id", "submit", "n_inst", "gpu", "cpu", "mem", "work", "model")


@pytest.fixture(scope="module")
def big():
    return generate_pai_like(jax.random.PRNGKey(0), N)


def arrays(w):
    return {f: np.asarray(getattr(w, f)) for f in FIELDS}


def jobs(**over):
    """Three valid jobs (job_ids 10, 77, 12), with fields overridden."""
    base = dict(
        submit=[0, 5, 9],
        n_inst=[1, 2, 1],
        gpu=[100, 400, 800],
        cpu=[400, 800, 0],
        mem=[1024, 2048, 0],
        work=[60.0, 120.0, 30.0],
        model=[0, 1, 8],
        job_id=[10, 77, 12],
    )
    base.update(over)
    return base


# ---- generator ---------------------------------------------------------------------------------------------


def test_generator_jit_determinism_validity(big):
    key = jax.random.PRNGKey(3)
    a = generate_pai_like(key, 300)
    b = jax.jit(lambda k: generate_pai_like(k, 300))(key)
    c = generate_pai_like(jax.random.PRNGKey(4), 300)
    for f in FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)), err_msg=f)
    assert not np.array_equal(np.asarray(a.submit), np.asarray(c.submit))
    w = arrays(big)
    assert big.num_jobs == N and w["work"].dtype == np.float32 and w["gpu"].dtype == np.int32
    np.testing.assert_array_equal(w["job_id"], np.arange(N))
    assert np.all(np.diff(w["submit"]) >= 0)
    validate_ddl_workload(big, **SMALL)  # every job fits the Small cluster by construction
    assert fits_empty_cluster(big, **SMALL).all()


def test_generator_vmap_equals_loop():
    keys = jax.random.split(jax.random.PRNGKey(7), 4)
    v = jax.vmap(lambda k: generate_pai_like(k, 128))(keys)
    for i, k in enumerate(keys):
        one = generate_pai_like(k, 128)
        for f in FIELDS:
            np.testing.assert_array_equal(
                np.asarray(getattr(v, f))[i], np.asarray(getattr(one, f)), err_msg=f
            )


def test_generator_statistics(big):
    w = arrays(big)
    gpus = w["n_inst"] * w["gpu"] // 100
    assert set(np.unique(w["gpu"])) <= {100, 200, 400, 800}
    assert set(np.unique(w["n_inst"])) <= {1, 2, 4, 8, 16}
    assert gpus.max() <= 64
    assert 0.47 < (gpus == 1).mean() < 0.53  # 1 GPU the most common (table: 0.50)
    assert 0.71 < (gpus <= 4).mean() < 0.77  # table: 0.74
    assert 0.04 < (gpus > 32).mean() < 0.06  # the > 32-GPU tail (table: 0.05)
    per_gpu = w["gpu"] / 100
    assert np.all(w["cpu"] >= np.floor(400 * per_gpu) - 1) and np.all(w["cpu"] <= 1200 * per_gpu)
    assert np.all(w["mem"] >= np.floor(16 * 1024 * per_gpu) - 1) and np.all(w["mem"] <= 48 * 1024 * per_gpu)
    assert w["work"].min() >= 60 and w["work"].max() <= 7 * 86400
    assert abs(np.log(np.median(w["work"])) - WORK_LOG_MU) < 0.05
    share = np.bincount(w["model"], minlength=len(MODEL_NAMES)) / N
    assert share[-1] == 0 and np.all(np.abs(share[:-1] - 0.125) < 0.015)
    mean_gap = (w["submit"][-1] - w["submit"][0]) / (N - 1)
    assert abs(mean_gap / MEAN_INTERARRIVAL_S - 1) < 0.05
    hours = np.bincount((w["submit"] % 86400) // 3600, minlength=24)
    assert np.corrcoef(hours, DIURNAL_PROFILE)[0, 1] > 0.95
    assert hours[2:7].sum() / N < 0.5 * 5 / 24  # quiet at night


def test_default_offered_load_is_09_on_small_cluster():
    """E[total GPUs] E[clipped work] / (64 GPUs x mean inter-arrival) = 0.9, independently of the script."""
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    mu, s, lo, hi = WORK_LOG_MU, WORK_LOG_SIGMA, 60.0, 7 * 86400.0
    a, b = (math.log(lo) - mu) / s, (math.log(hi) - mu) / s
    e_w = lo * phi(a) + hi * (1 - phi(b)) + math.exp(mu + s * s / 2) * (phi(b - s) - phi(a - s))
    e_g = sum(c * g * p for c, g, p in SIZE_TABLE)
    assert abs(e_g * e_w / (64 * MEAN_INTERARRIVAL_S) - 0.9) < 0.002
    assert abs(sum(p for *_, p in SIZE_TABLE) - 1) < 1e-9


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (dict(size_table=((1, 1, 0.5),)), "size_table"),
        (dict(size_table=((1, 16, 1.0),)), "size_table"),
        (dict(cpu_per_gpu=(12.0, 4.0)), "cpu_per_gpu"),
        (dict(work_log_sigma=-1.0), "work_log_sigma"),
        (dict(mean_interarrival_s=0.0), "mean_interarrival_s"),
        (dict(hourly_weights=(1.0,) * 23), "hourly_weights"),
        (dict(model_weights=(1.0,) * 9), "model_weights"),
        (dict(start_hour=24), "start_hour"),
    ],
)
def test_config_errors_name_the_field(change, field):
    with pytest.raises(ValueError, match=f"PAILikeConfig.{field}"):
        PAILikeConfig(**change)


def test_generator_custom_config_start_hour():
    cfg = PAILikeConfig(start_hour=12, mean_interarrival_s=60.0)
    w = generate_pai_like(jax.random.PRNGKey(1), 50, cfg)
    assert 12 * 3600 <= int(w.submit[0]) < 14 * 3600
    with pytest.raises(ValueError, match="n_jobs"):
        generate_pai_like(jax.random.PRNGKey(1), 0)


# ---- validation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("over", "caps", "pattern"),
    [
        (
            dict(gpu=[100, 1600, 800]),
            SMALL,
            r"'gpu'.*job 1 \(job_id 77\).*1600 \(16 GPUs\).*largest machine's 800",
        ),
        (dict(cpu=[400, 9700, 0]), SMALL, r"'cpu'.*job 1 \(job_id 77\).*9700"),
        (dict(work=[60.0, -5.0, 30.0]), None, r"'work'.*negative duration.*job 1 \(job_id 77\)"),
        (dict(work=[60.0, 0.0, 30.0]), None, r"'work'.*> 0.*job 1 \(job_id 77\)"),
        (dict(work=[60.0, np.nan, 30.0]), None, r"'work'.*not finite.*job 1 \(job_id 77\)"),
        (dict(submit=[0, 9, 5]), None, r"'submit'.*not sorted.*job 2 \(job_id 12\)"),
        (dict(n_inst=[1, 0, 1]), None, r"'n_inst'.*job 1 \(job_id 77\)"),
        (dict(gpu=[100, 0, 800]), None, r"'gpu'.*job 1 \(job_id 77\)"),
        (dict(mem=[1024, -1, 0]), None, r"'mem'.*job 1 \(job_id 77\)"),
        (dict(model=[0, 9, 8]), None, r"'model'.*job 1 \(job_id 77\)"),
        (dict(n_inst=[1, 17, 1]), SMALL, r"'n_inst'.*job 1 \(job_id 77\).*17 instances.*holds only 16"),
    ],
)
def test_validate_errors_name_field_and_job(over, caps, pattern):
    w = make_ddl_workload(**jobs(**over), validate=False)
    with pytest.raises(ValueError, match=pattern):
        validate_ddl_workload(w, **(caps or {}))


def test_make_workload_checks_shapes_and_integers():
    with pytest.raises(ValueError, match="'gpu' has shape"):
        make_ddl_workload(**jobs(gpu=[100, 200]))
    with pytest.raises(ValueError, match="'cpu'.*whole"):
        make_ddl_workload(**jobs(cpu=[400.5, 800, 0]))
    w = make_ddl_workload(**jobs(model=None, job_id=None), name="t")
    assert w.num_jobs == 3 and w.name == "t" and list(np.asarray(w.job_id)) == [0, 1, 2]
    assert int(w.model[0]) == len(MODEL_NAMES) - 1  # unknown
    np.testing.assert_allclose(np.asarray(w.total_gpus), [1.0, 8.0, 8.0])
    assert w.slice(1, 3).num_jobs == 2 and int(w.slice(1, 3).submit[0]) == 5


def test_fits_and_drop_too_large():
    # job 0 fits; job 1 (16 x 1 GPU, no cpu/mem: zero demand does not constrain) fits 2 machines of 8 GPUs
    # only as 16 instances (exactly); job 2 (3 x 8 GPUs) needs 3 machines; job 3 (cpu 6000 each x 2)
    # fits one instance per machine.
    w = make_ddl_workload(
        submit=[0, 1, 2, 3],
        n_inst=[1, 16, 3, 2],
        gpu=[100, 100, 800, 100],
        cpu=[100, 0, 0, 6000],
        mem=[0, 0, 0, 0],
        work=[1.0] * 4,
        job_id=[5, 6, 7, 8],
    )
    caps = dict(gpu_cap=[800, 800], cpu_cap=[9600, 9600], mem_cap=[1024, 1024])
    np.testing.assert_array_equal(fits_empty_cluster(w, **caps), [True, True, False, True])
    kept, n = drop_too_large(w, **caps)
    assert n == 1 and list(np.asarray(kept.job_id)) == [5, 6, 8]
    validate_ddl_workload(kept, **caps)
    with pytest.raises(ValueError, match=r"'n_inst'.*job 2 \(job_id 7\).*holds only 2"):
        validate_ddl_workload(w, **caps)
    # heterogeneous machines; ints describe one machine
    np.testing.assert_array_equal(fits_empty_cluster(w, [800, 400], None, None), [True, False, False, True])
    np.testing.assert_array_equal(fits_empty_cluster(w, 800, 9600, 1024), [True, False, False, False])


# ---- host helpers ---------------------------------------------------------------------------------------


def test_scale_load():
    w = make_ddl_workload(**jobs(submit=[100, 110, 130]))
    assert list(np.asarray(scale_load(w, 2.0).submit)) == [100, 105, 115]
    assert list(np.asarray(scale_load(w, 0.5).submit)) == [100, 120, 160]
    assert list(np.asarray(scale_load(w, 3.0).submit)) == [100, 103, 110]
    with pytest.raises(ValueError, match="factor"):
        scale_load(w, 0.0)


def test_train_test_split_and_episode_starts(big):
    train, test = train_test_split(big)
    assert train.num_jobs == 16_000 and test.num_jobs == 4_000
    assert int(test.job_id[0]) == 16_000 and int(train.submit[-1]) <= int(test.submit[0])
    with pytest.raises(ValueError, match="train_frac"):
        train_test_split(big, 1.0)
    assert list(episode_starts(10, 4)) == list(range(7))
    assert list(episode_starts(10, 5, 5)) == [0, 5]
    assert list(episode_starts(12, 5, 5)) == [0, 5]
    assert episode_starts(5, 5, 5).dtype == np.int32
    with pytest.raises(ValueError, match="cannot hold"):
        episode_starts(4, 5, 1)
    with pytest.raises(ValueError, match="stride"):
        episode_starts(10, 5, 0)


# ---- PAI loader -----------------------------------------------------------------------------------------

JOB_HEADER = "job_name,inst_id,user,status,start_time,end_time"
TASK_HEADER = "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type"
TAG_HEADER = "inst_id,user,gpu_type_spec,group,workload"
JOBS = """j1,i1,u1,Terminated,100,500
j2,i2,u2,Failed,50,60
j3,i3,u1,Terminated,,
j4,i4,u3,Terminated,200,300
j5,i5,u3,Terminated,30,90
j6,i6,u1,Terminated,10,20
j7,i7,u1,Terminated,400,900
j8,i8,u1,Terminated,5,9
j9,i9,u1,Terminated,7,9
"""
TASKS = """j1,ps,1,Terminated,100,400,600,29.296875,,
j1,worker,4,Terminated,110,410,1200,30,100,V100
j1,evaluator,1,Terminated,110,300,400,10,50,V100
j2,worker,1,Failed,50,60,100,1,100,V100
j3,worker,1,Terminated,1,2,100,1,100,V100
j4,worker,2,Terminated,,300,100,1,100,V100
j5,ps,2,Terminated,30,90,100,1,,
j5,worker,2,Terminated,30,90,100,1,0,
j6,worker,1,Terminated,10,70.5,9600,100,800,V100
j7,worker,16,Terminated,400,900,100,1,800,V100
j8,worker,1,Terminated,5,5,100,1,100,V100
orphan,worker,1,Terminated,1,2,100,1,100,V100
"""
TAGS = """i6,u1,V100,g1,ResNet50
i1,u1,V100,g2,vgg
"""


def write(tmp_path, jobs_text=JOBS, tasks_text=TASKS, tags_text=TAGS, header=False):
    paths = []
    for name, text, head in (
        ("job", jobs_text, JOB_HEADER),
        ("task", tasks_text, TASK_HEADER),
        ("tag", tags_text, TAG_HEADER),
    ):
        p = tmp_path / f"pai_{name}_table.csv"
        p.write_text((head + "\n" if header else "") + text)
        paths.append(p)
    return paths


@pytest.mark.parametrize("header", [False, True])
def test_load_pai(tmp_path, header):
    job, task, tag = write(tmp_path, header=header)
    w, rep = load_pai(job, task, tag)
    a = arrays(w)
    assert list(a["job_id"]) == [5, 0]  # j6 (submit 10) sorts before j1 (submit 100)
    assert list(a["submit"]) == [10, 100]
    assert list(a["n_inst"]) == [1, 4] and list(a["gpu"]) == [800, 100]  # j1: the 4 x 1-GPU worker task
    assert list(a["cpu"]) == [9600, 1200] and list(a["mem"]) == [102400, 30720]
    np.testing.assert_allclose(a["work"], [60.5, 300.0])
    assert [MODEL_NAMES[m] for m in a["model"]] == ["resnet-50", "vgg-16"]
    assert rep["dropped"] == dict(
        not_terminated=1, no_gpu_task=2, missing_time=2, missing_resource=0, zero_duration=1, too_large=1
    )
    assert rep["n_job_rows"] == 9 and rep["n_task_rows"] == 12 and rep["orphan_tasks"] == 1
    assert rep["n_jobs"] == 2 and rep["was_sorted"] is False and rep["models"]["vgg-16"] == 1
    with pytest.raises(ValueError, match=r"'n_inst'.*job_id 6\)"):
        load_pai(job, task, tag, drop_too_large=False)
    w2, _ = load_pai(job, task)  # no group tags: unknown models
    assert set(np.asarray(w2.model)) == {len(MODEL_NAMES) - 1}
    w3, rep3 = load_pai(job, task, n_machines=16)  # j7's 16 x 8 GPUs fit 16 machines
    assert w3.num_jobs == 3 and rep3["dropped"]["too_large"] == 0


def test_load_pai_errors(tmp_path):
    job, task, _ = write(tmp_path, tasks_text=TASKS + "j9,worker,1,Terminated,9,7,100,1,100,V100\n")
    with pytest.raises(
        ValueError, match=r"pai_task_table.csv: line 13: job_name 'j9': field 'end_time'.*negative"
    ):
        load_pai(job, task)
    job, task, _ = write(tmp_path, tasks_text=TASKS + "j9,worker,1,Terminated,7,9,-100,1,100,V100\n")
    with pytest.raises(ValueError, match=r"line 13: job_name 'j9': field 'plan_cpu' is negative"):
        load_pai(job, task)
    job, task, _ = write(tmp_path, jobs_text=JOBS + "j10,i10,u1,Terminated,100\n", header=True)
    with pytest.raises(ValueError, match=r"pai_job_table.csv: line 11: missing column 'end_time'"):
        load_pai(job, task)
    job, task, _ = write(tmp_path, tasks_text=TASKS.replace("1200,30,100,V100", "1200,30,abc,V100"))
    with pytest.raises(
        ValueError, match=r"pai_task_table.csv: line 2: column 'plan_gpu' is not a number: 'abc'"
    ):
        load_pai(job, task)
    job, task, _ = write(tmp_path, jobs_text=JOBS + "j1,i1,u1,Terminated,1,2\n")
    with pytest.raises(ValueError, match="duplicate job_name 'j1'"):
        load_pai(job, task)


def test_load_pai_no_jobs_left_names_the_file_and_why(tmp_path):
    # the header row only: an empty table
    job, task, _ = write(tmp_path, jobs_text="", header=True)
    with pytest.raises(
        ValueError, match=r"pai_job_table.csv: no jobs to schedule: 0 job rows \(12 task rows"
    ):
        load_pai(job, task)
    # every row filtered: j2 not terminated, j8 zero duration
    job, task, _ = write(tmp_path, jobs_text="j2,i2,u2,Failed,50,60\nj8,i8,u1,Terminated,5,9\n")
    with pytest.raises(
        ValueError,
        match=r"pai_job_table.csv: no jobs to schedule: 2 job rows .*not_terminated 1, zero_duration 1$",
    ):
        load_pai(job, task)
    # the only job (j7, 16 x 8 GPUs) does not fit 8 machines
    job, task, _ = write(tmp_path, jobs_text="j7,i7,u1,Terminated,400,900\n")
    with pytest.raises(ValueError, match=r"no jobs to schedule: 1 job rows .*dropped: too_large 1$"):
        load_pai(job, task)
    assert load_pai(job, task, n_machines=16)[0].num_jobs == 1


def test_model_index():
    names = [
        MODEL_NAMES[model_index(s)] for s in ("resnet", "ResNeXt-110", "VGG16", "inception_v3", "bert", "")
    ]
    assert names == ["resnet-50", "resnext-110", "vgg-16", "inception-bn", "unknown", "unknown"]


# ---- calibration ------------------------------------------------------------------------------------------


def test_calibration_script_matches_constants(shared_data):
    gpu_data = shared_data("gpu")
    spec = importlib.util.spec_from_file_location("calibrate_gpu_cloud", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    res = mod.calibrate(gpu_data, gen_jobs=0)
    np.testing.assert_allclose(res["MODEL_COMM"], MODEL_COMM, atol=1e-4)
    assert abs(res["mini_batch"]["PERF_CV"] - PERF_CV) < 1e-4
    assert abs(res["mini_batch"]["FLUCT_STD"] - FLUCT_STD) < 1e-4
    assert res["machine"]["V100_MACHINE"] == V100_MACHINE
    assert (
        abs(res["runtime"]["mu"] - WORK_LOG_MU) < 1e-4
        and abs(res["runtime"]["sigma"] - WORK_LOG_SIGMA) < 1e-4
    )
    assert abs(res["load"]["MEAN_INTERARRIVAL_S"] - MEAN_INTERARRIVAL_S) < 0.1


def test_long_banks_stay_inside_int32_seconds_and_the_guard_names_the_limit():
    """The submission clock is int32 seconds: a bank whose mean span (jobs × mean gap) fits is generated in
    order and ends near that span; the DAS Small preset's 288,000 jobs at 2,500 s (7.2e8 s) fit; a bank
    whose mean span alone is near the limit is refused, naming the sizes."""
    cfg = PAILikeConfig(mean_interarrival_s=200_000.0, interarrival_shape=0.4)  # bursty, 2.4e8 s on average
    w = generate_pai_like(jax.random.PRNGKey(3), 1200, cfg)
    submit = np.asarray(w.submit, np.int64)
    assert (np.diff(submit) >= 0).all() and submit[0] >= 0
    assert 0.5 < submit[-1] / (1200 * 200_000.0) < 1.5
    big = jax.eval_shape(
        lambda k: generate_pai_like(k, 288_000, PAILikeConfig(mean_interarrival_s=2500.0)),
        jax.random.PRNGKey(0),
    )
    assert big.submit.shape == (288_000,)
    with pytest.raises(ValueError, match="2100 jobs at mean inter-arrival 1000000.0 s may overflow int32"):
        generate_pai_like(jax.random.PRNGKey(3), 2100, PAILikeConfig(mean_interarrival_s=1e6))


def test_the_size_tilt_and_the_size_duration_exponent_shape_the_jobs_as_specified():
    """`size_tilt` τ: each size's probability × GPUs^τ, renormalised (by hand: 1 and 4 GPUs at 1/2 each,
    τ = 1 → 1/5 and 4/5); `work_gpu_exponent` β: a job's work × GPUs^β / E[GPUs^β], so the mean work
    stays while a 16-GPU job's median work is 16^β times a 1-GPU job's."""
    probs = [p for _, _, p in tilted_sizes(((1, 1, 0.5), (1, 4, 0.5)), 1.0)]
    np.testing.assert_allclose(probs, [0.2, 0.8])
    assert tilted_sizes(SIZE_TABLE, 0.0) is SIZE_TABLE
    with pytest.raises(ValueError, match="size_tilt must be finite"):
        tilted_sizes(SIZE_TABLE, float("nan"))

    n, beta, tau = 60_000, 0.5, 0.5
    plain = generate_pai_like(jax.random.key(0), n, pai_like_config())
    shaped = generate_pai_like(jax.random.key(0), n, pai_like_config(work_gpu_exponent=beta, size_tilt=tau))
    g0, g = np.asarray(plain.total_gpus), np.asarray(shaped.total_gpus)
    tab = np.asarray(tilted_sizes(SIZE_TABLE, tau))
    want_one = tab[tab[:, 0] * tab[:, 1] == 1, 2].sum()
    assert abs((g == 1).mean() - want_one) < 0.01 and want_one < (g0 == 1).mean() - 0.1  # fewer 1-GPU jobs
    w0, w = np.asarray(plain.work, np.float64), np.asarray(shaped.work, np.float64)
    ratio = np.median(w[g == 16]) / np.median(w[g == 1])
    assert abs(math.log(ratio) - beta * math.log(16)) < 0.15  # 16^0.5 = 4: a third of that in log terms
    assert abs(w.mean() / w0.mean() - 1.0) < 0.1  # the mean work stays (the clip bounds aside)
