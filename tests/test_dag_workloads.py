"""The DAG env's workloads: Decima's TPC-H files (`workloads.tpch`: the pickle opt-in, the restricted
unpickler against crafted payloads, malformed files, Decima's pre-processing, a round trip on the real
data), the generators and episodes (`workloads.dag_gen`: TPC-H-like statistics against the embedded tables
and the real data, the paper's synthetic lengths, Poisson and Decima arrivals, load, determinism).

Statistical bounds come from the sample size: five binomial standard deviations for a share, five
standard errors for a mean. Tests on the real data skip when `../shared/data` is absent (fail under CI)."""

from __future__ import annotations

import codecs
import collections
import importlib.util
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from jaxsched.workloads import tpch_tables as tab
from jaxsched.workloads.dag_bank import DAGTemplates, make_bank
from jaxsched.workloads.dag_gen import (
    decima_arrivals,
    gap_for_load,
    mixed_bank,
    poisson_arrivals,
    synthetic_bank,
    synthetic_templates,
    tpch_bank,
    tpch_like_bank,
    tpch_like_templates,
)
from jaxsched.workloads.tpch import convert_tpch, decima_stage, load_tpch, tpch_wave_table

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "tpch_stats.py"
ROLES = ("root", "inner", "sink")


def _script():
    spec = importlib.util.spec_from_file_location("tpch_stats", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _stage(first=None, rest=None, fresh=None) -> dict:
    first = {2: [100, 110], 5: [90]} if first is None else first
    return {
        "first_wave": first,
        "rest_wave": {k: [80] for k in first} if rest is None else rest,
        "fresh_durations": {k: [] for k in first} if fresh is None else fresh,
    }


def _write_job(root: Path, adj, td, size: str = "2g", q: int = 1) -> tuple[Path, Path]:
    d = root / size
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / f"adj_mat_{q}.npy", np.asarray(adj, np.float64))
    arr = np.empty((), object)
    arr[()] = td
    np.save(d / f"task_duration_{q}.npy", arr, allow_pickle=True)
    return d / f"adj_mat_{q}.npy", d / f"task_duration_{q}.npy"


CHAIN = [[0, 1, 0], [0, 0, 1], [0, 0, 0]]


def _one_line_error(fn, *words) -> str:
    with pytest.raises(ValueError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert str(w) in msg, (w, msg)
    return msg


# ---- the pickle opt-in and the restricted unpickler ----


def test_convert_refuses_a_pickle_without_the_opt_in(tmp_path):
    _, dur = _write_job(tmp_path / "src", CHAIN, {s: _stage() for s in range(3)})
    _one_line_error(
        lambda: convert_tpch(tmp_path / "src", tmp_path / "o.npz"), dur, "pickle", "allow_pickle=True"
    )
    assert not (tmp_path / "o.npz").exists()


class _Payload:
    """Pickles as a call of `target(*args)`; unpickling it would run that call."""

    def __init__(self, target, args):
        self.target, self.args = target, args

    def __reduce__(self):
        return self.target, self.args


def _payloads(marker: Path) -> dict:
    return {
        "posix.system": _Payload(os.system, (f"touch {marker}",)),
        "builtins.eval": _Payload(eval, (f"open({str(marker)!r}, 'w').close()",)),
        "subprocess.Popen": _Payload(subprocess.Popen, (["touch", str(marker)],)),
        "builtins.exec": _Payload(exec, (f"open({str(marker)!r}, 'w').close()",)),
        "_Payload": _Payload(_Payload, (print, ())),  # any class of ours, even harmless
        # numpy's own pickles call `_codecs.encode(text, "latin1")`: admitted for that encoding only
        "_codecs.encode": _Payload(codecs.encode, ("x", "rot13")),
    }


@pytest.mark.parametrize(
    "refused",
    ["posix.system", "builtins.eval", "subprocess.Popen", "builtins.exec", "_Payload", "_codecs.encode"],
)
def test_a_crafted_pickle_is_refused_even_with_the_opt_in(tmp_path, refused):
    marker = tmp_path / "pwned"
    payload = _payloads(marker)[refused]
    td = {
        0: _stage(),
        1: _stage(),
        2: {"first_wave": {2: [payload]}, "rest_wave": {2: []}, "fresh_durations": {2: []}},
    }
    _, dur = _write_job(tmp_path / "src", CHAIN, td)
    msg = _one_line_error(
        lambda: convert_tpch(tmp_path / "src", tmp_path / "o.npz", allow_pickle=True), dur, "refused global"
    )
    assert refused.split(".")[-1] in msg
    assert not marker.exists()
    assert not (tmp_path / "o.npz").exists()


def test_the_unpickler_reads_python3_pickles_of_numpy_values(tmp_path):
    """np.save's own pickles (protocol 3) with numpy scalars and arrays as durations are admitted."""
    st = _stage(first={2: [np.int64(100), np.float64(120.0)]}, rest={2: np.array([80, 90])}, fresh={2: []})
    _write_job(tmp_path / "src", [[0, 1], [0, 0]], {0: st, 1: _stage()})
    tm = load_tpch(convert_tpch(tmp_path / "src", tmp_path / "o.npz", allow_pickle=True))
    assert tm.n_tasks[0, :2].tolist() == [4, 3] and tm.duration[0, 0] == 98  # mean(100, 120, 80, 90) = 97.5


# ---- malformed files ----


def _convert(src, out):
    return lambda: convert_tpch(src, out, allow_pickle=True)


def test_a_cycle_names_the_adjacency_file(tmp_path):
    adj, _ = _write_job(tmp_path, [[0, 1, 0], [0, 0, 1], [1, 0, 0]], {s: _stage() for s in range(3)})
    _one_line_error(_convert(tmp_path, tmp_path / "o.npz"), adj, "adj", "cycle")


def test_a_stage_without_durations_names_the_file(tmp_path):
    _, dur = _write_job(tmp_path, CHAIN, {0: _stage(), 1: _stage()})
    _one_line_error(_convert(tmp_path, tmp_path / "o.npz"), dur, "stage 2", "missing duration")


def test_a_non_square_adjacency_names_the_file(tmp_path):
    adj, _ = _write_job(tmp_path, [[0, 1, 0], [0, 0, 1]], {s: _stage() for s in range(3)})
    _one_line_error(_convert(tmp_path, tmp_path / "o.npz"), adj, "adj_mat", "square")


def test_empty_waves_name_the_file_and_field(tmp_path):
    _, dur = _write_job(tmp_path, CHAIN, {0: _stage(), 1: _stage(first={}), 2: _stage()})
    _one_line_error(_convert(tmp_path, tmp_path / "o.npz"), dur, "stage 1", "first_wave", "empty")
    td = {0: _stage(), 1: _stage(), 2: _stage(first={2: [], 5: [7]}, rest={2: [], 5: []})}
    _, dur = _write_job(tmp_path, CHAIN, td)  # Decima counts tasks at the first key (2): none
    _one_line_error(_convert(tmp_path, tmp_path / "o.npz"), dur, "stage 2", "no durations")
    _, dur = _write_job(tmp_path, CHAIN, {0: _stage(), 1: _stage(rest={}), 2: _stage()})
    _one_line_error(
        _convert(tmp_path, tmp_path / "o.npz"), dur, "stage 1", "rest_wave", "lacks executor key 2"
    )


def test_a_job_wider_than_max_stages_names_the_file(tmp_path):
    n = 32
    adj = np.eye(n, k=1)
    a, _ = _write_job(tmp_path / "wide", adj, {s: _stage() for s in range(n)})
    _one_line_error(_convert(tmp_path / "wide", tmp_path / "w.npz"), a, "wider than max_stages = 31")
    _write_job(tmp_path / "ok", CHAIN, {s: _stage() for s in range(3)})
    npz = convert_tpch(tmp_path / "ok", tmp_path / "o.npz", allow_pickle=True)
    _one_line_error(lambda: load_tpch(npz, max_stages=2), npz, "tpch-2g-q1", "wider than max_stages = 2")


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("duration", [5, 0], ("job-x", "duration[1] = 0.0", ">= 1 ms")),
        ("duration", [5, float("nan")], ("job-x", "duration[1] = nan", "finite")),
        ("duration", [5], ("job-x", "duration has 1 entries for 2 stages")),
        ("n_tasks", [2, 0], ("job-x", "n_tasks[1] = 0", ">= 1 task")),
        ("adj", [[0, 1], [1, 0]], ("job-x", "cycle")),
        ("adj", [[1, 0], [0, 0]], ("job-x", "cycle")),  # a self-loop
        ("adj", [[0, 1, 0], [0, 0, 0]], ("job-x", "adj has shape (2, 3)")),
    ],
)
def test_hand_built_templates_name_the_job_and_field(field, value, words):
    """`DAGTemplates.from_lists` (what every generator and the TPC-H loader build on) refuses a malformed
    job with a one-line error naming it and the field: a duration below 1 ms or not finite, a stage
    without tasks, a cycle (a self-loop too), sizes that disagree."""
    job = dict(name="job-x", adj=[[0, 1], [0, 0]], n_tasks=[2, 3], duration=[5, 7])
    DAGTemplates.from_lists([job])  # the job as given is valid
    _one_line_error(lambda: DAGTemplates.from_lists([{**job, field: value}]), *words)


@pytest.mark.parametrize(
    "episode, words",
    [
        (dict(arrival=[[0, 5, 4]]), ("arrival[0] is not sorted", "job 2 arrives before job 1")),
        (dict(arrival=[[-1, 5, 6]]), ("arrival[0, 0] = -1",)),
        (dict(template=[[0, 1, 1]]), ("template[0, 1] = 1", "[0, 1)")),
        (dict(n_jobs=[0]), ("n_jobs[0] = 0",)),
        (dict(arrival=[[0, 5]]), ("template (1, 3) and arrival (1, 2)",)),
    ],
)
def test_bad_episodes_name_the_field(episode, words):
    """`make_bank` refuses episodes with unsorted or negative arrivals, a template index out of range, no
    jobs, or shapes that disagree, naming the episode and the job."""
    job = dict(name="j", adj=[[0]], n_tasks=[1], duration=[5])
    tm = DAGTemplates.from_lists([job])
    args = dict(template=[[0, 0, 0]], arrival=[[0, 5, 5]], n_jobs=None)  # valid: ties are allowed
    make_bank(tm, **args)
    _one_line_error(lambda: make_bank(tm, **{**args, **episode}), "episodes", *words)


# ---- Decima's pre-processing ----


def test_decima_preprocessing_on_a_hand_made_stage():
    stage = {  # keys out of order: the first key (5) counts the tasks
        "first_wave": {5: [30, 40], 2: [10, 20, 20], 10: [50]},
        "rest_wave": {5: [9], 2: [7, 8], 10: []},
        "fresh_durations": {5: [30, 40], 2: [20], 10: []},
    }
    n, rough, clean = decima_stage("hand", stage)
    assert n == 2 + 1
    # 2: one 20 removed; 5: emptied, takes key 2's cleaned list; 10 untouched
    assert clean == {5: [10, 20], 2: [10, 20], 10: [50]}
    every = [10, 20] + [10, 20] + [50] + [9, 7, 8] + [30, 40, 20]
    assert rough == pytest.approx(np.mean(every))
    # the smallest key, emptied, stays empty; a later empty key copies its predecessor (empty too)
    stage = {"first_wave": {2: [5], 5: [6]}, "rest_wave": {2: [], 5: []}, "fresh_durations": {2: [5], 5: [6]}}
    n, rough, clean = decima_stage("hand", stage)
    assert (n, clean, rough) == (1, {2: [], 5: []}, pytest.approx(5.5))
    assert stage["first_wave"] == {2: [5], 5: [6]}  # not modified


# ---- the real data ----


def _rough(st: dict) -> tuple[int, float]:
    """An independent reading of job_generator.py's load_job / pre_process_task_duration."""
    fw, rw, fr = st["first_wave"], st["rest_wave"], st["fresh_durations"]
    e = list(fw.keys())[0]
    n = len(fw[e]) + len(rw[e])
    clean = {}
    for k in fw:
        left = list(fr[k])
        clean[k] = []
        for d in fw[k]:
            if d in left:
                left.remove(d)
            else:
                clean[k].append(d)
    prev = []
    for k in sorted(clean):
        clean[k] = clean[k] or prev
        prev = clean[k]
    vals = sum(clean.values(), []) + sum(rw.values(), []) + sum(fr.values(), [])
    return n, sum(vals) / len(vals)


@pytest.fixture(scope="module")
def real(shared_data, tmp_path_factory):
    src = shared_data("dag/tpch")
    npz = convert_tpch(src, tmp_path_factory.mktemp("tpch") / "tpch.npz", allow_pickle=True)
    return src, npz


def test_real_round_trip(real):
    src, npz = real
    with np.load(npz, allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)
    tm = load_tpch(npz)
    assert tm.n_templates == 154 and tm.max_stages == 18
    assert (tm.n_stages.min(), tm.n_stages.max()) == (2, 18)
    assert tm.name[0] == "tpch-2g-q1" and tm.name[-1] == "tpch-100g-q22"
    for size, q in [("2g", 2), ("10g", 6), ("50g", 9), ("100g", 21)]:
        t = tm.name.index(f"tpch-{size}-q{q}")
        adj = np.load(src / size / f"adj_mat_{q}.npy")  # trusted files, Decima's own reading
        raw = np.load(src / size / f"task_duration_{q}.npy", allow_pickle=True).item()
        n = adj.shape[0]
        assert tm.n_stages[t] == n
        parents = [sum(1 << p for p in range(n) if adj[p, c] == 1) for c in range(n)]
        assert tm.parents[t, :n].tolist() == parents
        for s in range(n):
            tasks, rough = _rough(raw[s])
            assert tm.n_tasks[t, s] == tasks
            assert tm.duration[t, s] == max(1, round(rough))
    sel = load_tpch(npz, sizes=("10g",), queries=(3, 6))
    assert sel.name == ("tpch-10g-q3", "tpch-10g-q6") and sel.max_stages == 6
    _one_line_error(lambda: load_tpch(npz, sizes=("3g",)), npz, "size '3g' is not in the file")


def test_real_wave_table(real):
    src, npz = real
    w = tpch_wave_table(npz, sizes=("2g",), max_samples=16, seed=3)
    assert w.values.shape == (22, 18, 15, 3, 16)
    assert w.keys.tolist() == [2, 5, 10, 12, 13, 20, 29, 30, 40, 50, 58, 59, 60, 80, 100]
    assert w.count.max() == 16 and (w.values[..., 0] >= 0).all()
    again = tpch_wave_table(npz, sizes=("2g",), max_samples=16, seed=3)
    assert np.array_equal(w.values, again.values)
    raw = np.load(src / "2g" / "task_duration_1.npy", allow_pickle=True).item()
    k = w.keys.tolist().index(2)
    for kind, wave in ((1, "rest_wave"), (2, "fresh_durations")):
        got = w.values[0, 0, k, kind, : w.count[0, 0, k, kind]].tolist()
        full = raw[0][wave][2]
        assert len(got) == min(16, len(full)) and collections.Counter(got) <= collections.Counter(full)
    assert w.present[0, 0, k] and not w.present[0, 0, w.keys.tolist().index(12)]
    full = tpch_wave_table(npz, max_samples=16, seed=3)  # a list's sample does not depend on the selection
    assert np.array_equal(full.values[:22], w.values) and full.name[:22] == w.name


def test_embedded_tables_are_recomputed_from_the_data(real):
    src, _ = real
    names = ("SIZES", "LEVEL_PROFILES", "TASKS_PMF", "DURATION_Q", "RANK_CORR", "COPULA_R", "WORK_Q")
    assert _script().tables(src) == {k: getattr(tab, k) for k in names}


def test_real_bank_streams_like_decima(real):
    _, npz = real
    bank = tpch_bank(npz, 4, 50, seed=0)
    arr = np.asarray(bank.arrival)
    assert (arr[:, 0] == 0).all() and (np.diff(arr, axis=1) >= 0).all()
    assert bank.n_stages.shape == (154,)
    mixed = mixed_bank(2, 40, seed=0, alpha=0.5, n_executors=50, load=0.6, tpch_npz=npz)
    assert np.array_equal(np.asarray(mixed.n_stages)[:154], load_tpch(npz).n_stages)  # the real pool first


def test_decima_waves_on_real_tpch_match_the_reference(real):
    """The `decima` preset's sampling on the real wave lists (query 6 at 2g has the odd keys 12, 13): 50
    executors, moving and warm-up delays, random valid actions; every task end, count, JCT and reward equal to
    the plain-Python reference's."""
    import jax
    import jax.numpy as jnp
    from reference.dag import RefDAGEnv, random_valid_action
    from reference.dag_counts import unpacked_counts

    from jaxsched.envs.dag.env import DAGEnv
    from jaxsched.envs.dag.params import DAGConfig
    from jaxsched.workloads.dag_bank import make_bank

    _, npz = real
    sel = dict(sizes=("2g",), queries=(1, 2, 3, 6, 9))
    tm, waves = load_tpch(npz, **sel), tpch_wave_table(npz, **sel)
    j, k = 3, 50
    env = DAGEnv(DAGConfig(n_executors=k, max_slots=j, max_stages=tm.max_stages, task_waves=True))
    rng = np.random.default_rng(0)
    template = rng.integers(0, 5, 6)
    arrival = np.concatenate([[0], np.cumsum(rng.integers(0, 20000, 5))])
    knobs = dict(moving_delay=2000, warmup_delay=1000, reward_scale=100.0)
    params = env.make_params(make_bank(tm, template[None], arrival[None]), waves=waves, **knobs)
    step = jax.jit(lambda st, a: env.step_env(jax.random.PRNGKey(0), st, a, params))
    obs, state = env.reset_env(jax.random.PRNGKey(3), params)
    ref = RefDAGEnv(
        n_executors=k, max_slots=j, max_stages=tm.max_stages, idle_levels=env.config.idle_levels,
        n_stages=tm.n_stages, parents=tm.parents, n_tasks=tm.n_tasks, duration=tm.duration, template=template,
        arrival=arrival, waves=waves, wave_seed=int(state.seed), **knobs,
    )  # fmt: skip
    snap = ref.reset()
    for i in range(2000):
        occupied = np.asarray(state.slot_job)[:, None] >= 0  # a freed slot's counters are stale (masked)
        counts = unpacked_counts(env, state, tm.n_tasks)
        for key in ("ex_until", "ex_state", "done", "dispatched", "jct"):
            got = counts[key] if key in counts else np.asarray(getattr(state, key))
            got = np.where(occupied, got, 0) if key in ("done", "dispatched") else got
            np.testing.assert_array_equal(got, snap[key], err_msg=f"step {i}: {key}")
        a = random_valid_action(snap, ref, rng)
        snap, r_ref, term, _ = ref.step(*a)
        obs, state, r, *_ = step(state, jnp.asarray(a, jnp.int32))
        assert float(r) == pytest.approx(r_ref, rel=1e-5, abs=1e-5), f"step {i}"
        if term:
            break
    assert term and int(state.n_finished) == 6 and np.array_equal(np.asarray(state.jct), snap["jct"])


# ---- the TPC-H-like generator ----


@pytest.fixture(scope="module")
def like():
    """7 x 400 templates and, per template, its stage levels and roles."""
    tm = tpch_like_templates(7 * 400, seed=0)
    ts = _script()
    out = []
    for t in range(tm.n_templates):
        n = int(tm.n_stages[t])
        adj = np.array([[(tm.parents[t, c] >> p) & 1 for c in range(n)] for p in range(n)], bool)
        out.append((ts.levels(adj), ts.roles(adj)))
    return tm, out


def test_like_shapes_follow_the_level_profiles(like):
    tm, info = like
    profiles = collections.Counter(tab.LEVEL_PROFILES)
    seen = collections.Counter(tuple(np.bincount(lv).tolist()) for lv, _ in info)
    n = len(info)
    assert set(seen) <= set(profiles)  # levels exactly as a real profile
    for prof, c in profiles.items():
        p = c / len(tab.LEVEL_PROFILES)
        assert abs(seen[prof] - n * p) <= 5 * np.sqrt(n * p * (1 - p))
    assert all((ro == 2).sum() == 1 for _, ro in info)  # one sink, like every real DAG
    stages = tm.n_stages.astype(float)
    mean_n = np.mean([sum(p) for p in tab.LEVEL_PROFILES])
    assert abs(stages.mean() - mean_n) <= 5 * stages.std() / np.sqrt(n)
    assert tm.name[8] == "tpch_like-5g-8"


def test_like_stages_follow_the_tables(like):
    tm, info = like
    ts = _script()
    for si, size in enumerate(tab.SIZES):
        for r, role in enumerate(ROLES):
            tasks, dur = [], []
            for t in range(si, tm.n_templates, len(tab.SIZES)):
                m = info[t][1] == r
                n = m.size
                tasks += tm.n_tasks[t, :n][m].tolist()
                dur += tm.duration[t, :n][m].tolist()
            tasks, dur = np.array(tasks), np.array(dur)
            values, counts = np.array(tab.TASKS_PMF[size][role]).T
            assert set(np.unique(tasks)) <= set(values.tolist())
            for v, c in zip(values, counts, strict=True):
                p = c / counts.sum()
                assert abs((tasks == v).sum() - tasks.size * p) <= 5 * np.sqrt(tasks.size * p * (1 - p)) + 1
            q = np.asarray(tab.DURATION_Q[size][role])
            assert q[0] - 1 <= dur.min() and dur.max() <= q[-1] + 1
            cdf = np.array([(dur <= x).mean() for x in q[1:-1]])  # at the real deciles
            dkw = np.sqrt(np.log(2 / 1e-6) / (2 * dur.size))  # sup |F_n - F| beyond it: probability < 1e-6
            assert np.abs(cdf - np.arange(1, 10) / 10).max() < dkw + 0.01  # + rounding to whole ms
            assert ts.normal_score_corr(tasks, dur) == pytest.approx(tab.RANK_CORR[size][role], abs=0.08)


def test_like_total_work_medians_match_the_real_ones(like):
    tm, _ = like
    work = (tm.n_tasks.astype(float) * tm.duration).sum(axis=1) / 1000
    for si, size in enumerate(tab.SIZES):
        assert np.median(work[si :: len(tab.SIZES)]) == pytest.approx(tab.WORK_Q[size][5], rel=0.15)


def test_like_matches_the_real_templates(like, real):
    """Against the real DAGs themselves (not the tables): stage counts, depths and task counts per size."""
    tm, info = like
    _, npz = real
    ts = _script()
    depth_mean = np.mean([len(p) - 1 for p in tab.LEVEL_PROFILES])
    for size in ("2g", "100g"):
        rt = load_tpch(npz, sizes=(size,))
        si = tab.SIZES.index(size)
        gen = range(si, tm.n_templates, len(tab.SIZES))
        assert np.mean([tm.n_stages[t] for t in gen]) == pytest.approx(rt.n_stages.mean(), rel=0.1)
        assert np.mean([info[t][0].max() for t in gen]) == pytest.approx(depth_mean, rel=0.1)
        real_tasks = np.concatenate([rt.n_tasks[t, : rt.n_stages[t]] for t in range(rt.n_templates)])
        gen_tasks = np.concatenate([tm.n_tasks[t, : tm.n_stages[t]] for t in gen])
        assert np.median(gen_tasks) == pytest.approx(np.median(real_tasks), rel=0.5)
        assert gen_tasks.mean() == pytest.approx(real_tasks.mean(), rel=0.15)
        depth = []
        for t in range(rt.n_templates):
            n = int(rt.n_stages[t])
            adj = np.array([[(rt.parents[t, c] >> p) & 1 for c in range(n)] for p in range(n)], bool)
            depth.append(ts.levels(adj).max())
        assert np.mean(depth) == pytest.approx(depth_mean)


# ---- the paper's synthetic jobs ----


def _length(tm) -> np.ndarray:
    return (tm.n_tasks.astype(np.int64) * tm.duration).sum(axis=1)


def test_synthetic_fixed_lengths():
    tm, is_long = synthetic_templates(2000, seed=1)
    err = tm.n_stages * 10  # rounding: at most n_stages * max_tasks ms
    target = np.where(is_long, 50_000, 10_000)
    assert (np.abs(_length(tm) - target) <= err).all()
    assert abs(is_long.sum() - 1000) <= 5 * np.sqrt(2000 * 0.25)
    assert tm.max_stages == 5 and tm.n_stages.min() == 1 and tm.n_stages.max() == 5
    assert tm.n_tasks.max() == 10 and (tm.duration[tm.n_tasks > 0] >= 1).all()
    assert tm.name[0].startswith("synthetic-")


def test_synthetic_long_lengths_are_normal_with_sd_mu_over_6():
    tm, is_long = synthetic_templates(4000, seed=2, long_fraction=0.75, long_len_s=80, long_std_frac=1 / 6)
    long = _length(tm)[is_long] / 1000
    assert long.mean() == pytest.approx(80, abs=5 * (80 / 6) / np.sqrt(long.size))
    assert long.std() == pytest.approx(80 / 6, rel=0.06)
    assert (np.abs(_length(tm)[~is_long] - 10_000) <= tm.n_stages[~is_long] * 10).all()


# ---- arrivals and banks ----


def test_poisson_arrivals():
    a = poisson_arrivals(np.random.default_rng(0), 20, 1000, 5000.0)
    assert a.dtype == np.int32 and (a[:, 0] == 0).all() and (np.diff(a, axis=1) >= 0).all()
    gaps = np.diff(a.astype(np.float64), axis=1)
    assert gaps.mean() == pytest.approx(5000, abs=5 * 5000 / np.sqrt(gaps.size))
    exact = np.cumsum(np.random.default_rng(0).exponential(5000.0, (20, 1000)), axis=1)  # floored cumulative
    b = poisson_arrivals(np.random.default_rng(0), 20, 1000, 5000.0, first_at_zero=False)
    assert np.array_equal(b, np.floor(exact).astype(np.int32)) and (b[:, 0] > 0).any()


def test_decima_arrivals():
    a = decima_arrivals(np.random.default_rng(4), 3, 2, 50)
    assert a.shape == (3, 52) and (a[:, :2] == 0).all()
    rng = np.random.default_rng(4)
    for e in range(3):
        t = 0
        for j in range(50):
            t += int(rng.exponential(25000))
            assert a[e, 2 + j] == t


def test_gap_for_load():
    assert gap_for_load(30_000, 10, 0.6) == pytest.approx(5000)
    with pytest.raises(ValueError, match="load"):
        gap_for_load(30_000, 10, 0)


def test_synthetic_bank_offers_the_load():
    bank = synthetic_bank(4, 500, seed=0, n_executors=10, load=0.8)
    arr = np.asarray(bank.arrival)
    assert (arr[:, 0] == 0).all() and (np.diff(arr, axis=1) >= 0).all()
    offered = float(np.asarray(bank.work).sum()) / (10 * arr[:, -1].sum() / 1000)
    assert offered == pytest.approx(0.8, rel=0.1)


def test_banks_are_deterministic():
    for make in (
        lambda s: synthetic_bank(2, 20, seed=s, n_executors=5, load=0.6),
        lambda s: tpch_like_bank(2, 20, seed=s),
        lambda s: mixed_bank(2, 20, seed=s, alpha=0.5, n_executors=50, load=0.6),
    ):
        a, b, c = make(7), make(7), make(8)
        for f in ("template", "arrival", "duration", "n_tasks", "parents"):
            assert np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)))
        assert not np.array_equal(np.asarray(a.arrival), np.asarray(c.arrival))


def test_tpch_like_bank_streams_like_decima():
    bank = tpch_like_bank(3, 200, seed=1)
    arr = np.asarray(bank.arrival)
    assert bank.n_stages.shape == (154,) and (arr[:, 0] == 0).all() and (arr[:, 1] > 0).all()
    gaps = np.diff(arr, axis=1)
    assert gaps.mean() == pytest.approx(25000, abs=5 * 25000 / np.sqrt(gaps.size))


def test_mixed_bank_shares():
    bank = mixed_bank(4, 250, seed=3, alpha=0.3, n_executors=50, load=0.6)
    syn = np.asarray(bank.template) >= 154  # the TPC-H-like pool comes first
    assert abs(syn.sum() - 300) <= 5 * np.sqrt(1000 * 0.3 * 0.7)
    # the load is the mixture's: a job's mean work is 0.3 · 30 s (synthetic) + 0.7 · the pool's mean
    pool = tpch_like_templates(154, seed=3)
    pool_work = (np.asarray(pool.n_tasks, np.float64) * np.asarray(pool.duration)).sum(axis=1).mean()
    gap = (0.3 * 30_000 + 0.7 * pool_work) / (50 * 0.6)
    gaps = np.diff(np.asarray(bank.arrival), axis=1)  # exponential: the mean's sd is gap / sqrt(n)
    assert gaps.mean() == pytest.approx(gap, abs=5 * gap / np.sqrt(gaps.size))
    assert not (
        np.asarray(mixed_bank(1, 50, seed=3, alpha=0.0, n_executors=50, load=0.6).template) >= 154
    ).any()
    assert (np.asarray(mixed_bank(1, 50, seed=3, alpha=1.0, n_executors=50, load=0.6).template) >= 154).all()
