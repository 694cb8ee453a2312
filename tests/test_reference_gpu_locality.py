"""Hand-checked schedules for the GPU-locality reference simulator (`tests/reference/gpu_locality.py`,
the semantics of `sced2_spec.md`): each expected number is derived by hand in the comment beside it.

Unless said otherwise: 2 servers × 4 GPUs, window J = 3, k = 3 levels, auto_forward off, and the table
`TABLE` below (rows: models, columns: levels 0, 1, 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference.gpu_locality import (
    METRIC_KEYS,
    OBS_KEYS,
    RefGPULocality,
    actual_time,
    level_now,
    ref_policy,
)

TABLE = [
    [1.0, 2.0, 3.0],  # 0 transformer: sensitive (slowdown[0, 1] = 2.0 >= 2.0)
    [1.0, 1.5, 2.0],  # 1 deepspeech
    [1.0, 1.25, 1.5],  # 2 vgg16
    [1.0, 1.1, 1.2],  # 3 inception3 (1.1 and 1.2 are not exact in float32)
    [1.0, 1.0, 1.0],  # 4 resnet50: locality-insensitive
    [1.0, 2.5, 4.0],  # 5 alexnet: sensitive
]
TS = 3600.0


def L(x):
    """The observation's time transform."""
    return math.log1p(x / TS)


def make(jobs, n_servers=2, gpus_per_server=4, window=3, n_levels=3, auto_forward=False, table=None, **kw):
    """`jobs`: (submit, gpus, ideal, model) tuples in arrival order; returns (env, obs after reset)."""
    names = ("submit", "gpus", "ideal", "model")
    cols = {name: [job[i] for job in jobs] for i, name in enumerate(names)}
    table = TABLE if table is None else table
    env = RefGPULocality(n_servers, gpus_per_server, window, n_levels, auto_forward, cols, table, **kw)
    return env, env.reset()


def check_obs_layout(env, obs):
    """vec is gpu.ravel(), jobs.ravel(), stats; shapes as in the spec."""
    N, M, J, k = env.N, env.M, env.J, env.k
    assert set(obs) == set(OBS_KEYS)
    assert obs["gpu"].shape == (N, M) and obs["jobs"].shape == (J, k + 2) and obs["stats"].shape == (4,)
    assert obs["vec"].shape == (N * M + (k + 2) * J + 4,) and obs["mask"].shape == (J + 1,)
    assert obs["profile"].shape == (J, k) and obs["free"].shape == (N,)
    flat = np.concatenate([obs["gpu"].ravel(), obs["jobs"].ravel(), obs["stats"]])
    np.testing.assert_array_equal(obs["vec"], flat)


def test_float32_actual_time():
    # 10 · f32(1.1) = 11.00000024 exactly, which rounds to 11.0 in float32 (the spacing there is 9.5e-7):
    # ceil gives 11, where float64 would give ceil(11.00000024) = 12 (and ceil(10 · 1.1) = 12 too).
    assert actual_time(10, np.float32(1.1)) == 11
    assert math.ceil(10 * float(np.float32(1.1))) == 12
    # 50 · f32(1.1) = 55.0000012 → 55.0 in float32 (spacing 3.8e-6) → 55; 7 · 1.5 = 10.5 → 11.
    assert actual_time(50, np.float32(1.1)) == 55
    assert actual_time(7, np.float32(1.5)) == 11


def test_fig2_packing_locality_slowdown_and_reward():
    """Three picks at t = 0, time frozen: the third job is split across both servers (level 1)."""
    env, obs = make([(0, 3, 100, 1), (0, 2, 50, 3), (0, 3, 20, 0)])
    check_obs_layout(env, obs)
    assert obs["present"].tolist() == [True, True, True] and obs["t"] == 0
    # Profiles. j0: g = 3 on N = 2: top = min(min(3, 2) − ceil(3/4), 2) = 1 → [100, 100·1.5, clipped 150].
    # j1: model 3, top 1 → [50, ceil(f32 50·1.1) = 55, 55]. j2: model 0, top 1 → [20, 40, 40].
    assert obs["profile"].tolist() == [[100, 150, 150], [50, 55, 55], [20, 40, 40]]
    np.testing.assert_allclose(obs["jobs"][0], [L(100), L(150), L(150), 3 / 4, L(0)])
    np.testing.assert_allclose(obs["jobs"][2], [L(20), L(40), L(40), 3 / 4, L(0)])
    # All fit 8 free GPUs; φ is masked: every job has arrived and no GPU is busy (no event can happen).
    assert obs["mask"].tolist() == [True, True, True, False]

    # Pick j0 (g = 3) on free [4, 4]: both servers fit 3, the fewest free is a tie → server 0, GPUs 0–2.
    # Level min(1 − 1, 2) = 0, actual = 100, wait 0, E = 100 / 100 = 1.
    obs, r, term, trunc = env.step(0)
    assert r == pytest.approx(1.0) and obs["t"] == 0 and obs["free"].tolist() == [1, 4]
    assert env.end == [[100, 100, 100, 0], [0, 0, 0, 0]]
    assert obs["gpus"].tolist() == [2, 3, 0] and obs["present"].tolist() == [True, True, False]
    # Pick j1 (g = 2) on free [1, 4]: only server 1 fits 2 → GPUs 0, 1 of server 1; level 0; actual 50; E 1.
    obs, r, term, trunc = env.step(0)
    assert r == pytest.approx(1.0) and obs["free"].tolist() == [1, 2]
    assert env.end == [[100, 100, 100, 0], [50, 50, 0, 0]]
    # Fig. 2: j2 (g = 3) on free [1, 2]: no server has 3 → all 2 of server 1 (the most free); the rest 1 fits
    # server 0 → take [1, 2], s = 2 servers, level min(2 − ceil(3/4), 2) = 1; actual = 20 · 2.0 = 40;
    # E = 20 / (0 + 40) = 0.5. GPU 3 of server 0 and GPUs 2, 3 of server 1 end at 40.
    assert level_now(obs, 0) == 1
    obs, r, term, trunc = env.step(0)
    assert r == pytest.approx(0.5) and term and not trunc
    assert env.placed[-1]["take"] == [1, 2] and env.placed[-1]["level"] == 1
    assert env.end == [[100, 100, 100, 40], [50, 50, 40, 40]]
    np.testing.assert_allclose(obs["gpu"], [[L(100)] * 3 + [L(40)], [L(50), L(50), L(40), L(40)]])
    assert obs["t"] == 0 and obs["free"].tolist() == [0, 0]
    assert obs["mask"].tolist() == [False, False, False, True]  # empty window; GPUs busy → φ possible
    m = env.metrics()
    assert tuple(m) == METRIC_KEYS
    want = {
        "placed": 3,
        "avg_effectiveness": (1 + 1 + 0.5) / 3,
        "avg_jct": (100 + 50 + 40) / 3,  # waits are 0: JCT = actual
        "avg_wait": 0.0,
        "avg_actual": (100 + 50 + 40) / 3,
        "makespan": 100.0,  # max(0 + 100, 0 + 50, 0 + 40) − t0 0
        "utilization": 0.0,  # t == t0
        "fragmentation": 0.0,
        "multi_share_relaxed": 1 / 3,  # all three are multi-GPU; j2 at level 1
        "relaxed_sensitive": 1.0,  # the only sensitive multi-GPU job (model 0) is j2: relaxed
        "relaxed_insensitive": 0.0,  # j0 (model 1: 1.5 < 2), j1 (model 3: 1.1) at level 0
        "wait_sensitive": 0.0,
        "wait_insensitive": 0.0,
        "reused_locality": 0.0,  # no GPU had been used before
        "steps": 3,
        "forwards": 0,
        "invalid": 0,
        "elapsed": 0,
    }
    for key, value in want.items():
        assert m[key] == pytest.approx(value), key


# Scenario B: forwards, simultaneous events, refill from behind, passed, masked φ, metrics by hand.
JOBS_B = [
    (0, 3, 10, 4),  # j0
    (0, 4, 30, 4),  # j1
    (0, 8, 5, 4),  # j2: the whole cluster
    (0, 1, 7, 4),  # j3: behind the window at reset
    (10, 2, 6, 4),  # j4: arrives at 10, when j0 ends
    (10, 1, 4, 0),  # j5: at 10 too; model 0 is sensitive
]


def test_walkthrough_forwards_passed_refill_and_metrics():
    env, obs = make(JOBS_B)
    check_obs_layout(env, obs)
    # Reset: t0 = 0, j0..j3 arrived; window [j0, j1, j2], behind [j3]: stats over j3 alone:
    # [log1p(1), 1/4, log1p(7/ts), log1p((0 − 0)/ts) = 0].
    assert obs["gpus"].tolist() == [3, 4, 8] and obs["ideal"].tolist() == [10, 30, 5]
    np.testing.assert_allclose(obs["stats"], [math.log1p(1), 0.25, L(7), 0.0])
    assert obs["mask"].tolist() == [True, True, True, True]  # all fit 8 free; φ: j4, j5 still to arrive

    # 1. pick j0: [3, 0] on server 0 (tie 4/4 → lower index), ends 10; E = 10/10 = 1; time stays 0.
    #    The window shifts: [j1, j2, j3] (j3 enters with passed 0); nothing behind → stats all 0.
    obs, r, *_ = env.step(0)
    assert r == pytest.approx(1.0) and obs["t"] == 0
    assert obs["gpus"].tolist() == [4, 8, 1] and obs["passed"].tolist() == [0, 0, 0]
    np.testing.assert_array_equal(obs["stats"], [0, 0, 0, 0])
    assert obs["free"].tolist() == [1, 4]
    assert obs["mask"].tolist() == [True, False, True, True]  # 4 <= 5, 8 > 5, 1 <= 5

    # 2. φ: next event min(arrival 10, release 10) = 10. Before moving, the jobs that fit 5 free GPUs (j1,
    #    j3) get passed += 1; busy area += 10·3 = 30; frag at 0: server 0 remaining [10, 10, 10, 0]:
    #    1 − 30²/(4·300) = 0.25, server 1 idle 0 → mean 0.125 → frag area 1.25. At 10 j0 ends and j4, j5
    #    arrive together (one forward). Behind [j4, j5]: [log1p(2), mean g 1.5 / 4, log1p(5/ts), wait 0].
    obs, r, *_ = env.step(3)
    assert r == 0.0 and obs["t"] == 10 and env.forwards == 1
    assert obs["passed"].tolist() == [1, 0, 1] and obs["free"].tolist() == [4, 4]
    assert obs["wait"].tolist() == [10, 10, 10]
    np.testing.assert_allclose(obs["stats"], [math.log1p(2), 0.375, L(5), 0.0])
    np.testing.assert_allclose(obs["jobs"][0], [L(30)] * 3 + [1.0, L(10)])
    assert env.area_busy == 30 and env.area_frag == pytest.approx(1.25)
    np.testing.assert_array_equal(obs["gpu"], np.zeros((2, 4)))

    # Heuristics here: window [j1 (4 GPUs, 30 s), j2 (8, 5 s), j3 (1, 7 s)], free [4, 4], all fit.
    # fifo 0; sif: 5 → slot 1; lrf: g 1 → 2; spf: 120, 40, 7 → 2; saf: all level 0 → 30, 5, 7 → 1;
    # dsif: j2 first in SIF order, level 0 (8 GPUs over 2 = ceil(8/4) servers) → 1.
    want = {"fifo": 0, "sif": 1, "lrf": 2, "spf": 2, "saf": 1, "dsif": 1}
    assert {n: ref_policy(n, obs) for n in want} == want

    # 3. pick j1 (4 GPUs) on [4, 4]: server 0 (tie), ends 40; wait 10, actual 30, E = 30/40 = 0.75.
    #    j4 enters the last slot from behind with passed 0; behind [j5]: [log1p(1), 1/4, log1p(4/ts), 0].
    obs, r, *_ = env.step(0)
    assert r == pytest.approx(0.75) and obs["t"] == 10
    assert obs["gpus"].tolist() == [8, 1, 2] and obs["passed"].tolist() == [0, 1, 0]
    np.testing.assert_allclose(obs["stats"], [math.log1p(1), 0.25, L(4), 0.0])
    assert obs["mask"].tolist() == [False, True, True, True]

    # 4. φ: j3 and j4 fit 4 free GPUs → passed [0, 2, 1]; no arrival left, next release 40; busy area
    #    += 30·4 = 120 (150); frag at 10: server 0 [30]*4 → 0, server 1 idle → 0 (area stays 1.25).
    #    At 40 everything is free and every job has arrived: φ is masked (nothing can happen).
    obs, r, *_ = env.step(3)
    assert obs["t"] == 40 and obs["passed"].tolist() == [0, 2, 1]
    assert env.area_busy == 150 and env.area_frag == pytest.approx(1.25)
    assert obs["mask"].tolist() == [True, True, True, False]

    # 5. the masked φ: invalid, nothing moves (passed not incremented), steps + 1.
    obs2, r, term, trunc = env.step(3)
    assert r == 0.0 and not term and env.invalid == 1 and env.forwards == 2 and env.steps == 5
    for key in OBS_KEYS:
        np.testing.assert_array_equal(obs2[key], obs[key])

    # 6. pick j2 (8 GPUs) on [4, 4]: no server has 8 → all of server 0 (tie), the rest 4 on server 1;
    #    s = 2 = ceil(8/4) → level 0; wait 40, actual 5, E = 5/45. All GPUs end 45.
    obs, r, *_ = env.step(0)
    assert r == pytest.approx(5 / 45) and obs["passed"].tolist() == [2, 1, 0]
    assert obs["mask"].tolist() == [False, False, False, True]
    # 7. φ: nothing fits (0 free) → passed unchanged; busy area += 5·8 = 40 (190); frag [5]*4 → 0.
    obs, r, *_ = env.step(3)
    assert obs["t"] == 45 and obs["passed"].tolist() == [2, 1, 0] and env.area_busy == 190
    # 8. pick j3 (1 GPU) on [4, 4]: server 0 (tie on fewest), GPU 0, ends 52; wait 45; E = 7/52.
    obs, r, *_ = env.step(0)
    assert r == pytest.approx(7 / 52)
    # 9. pick j4 (2 GPUs) on [3, 4]: the fitting server with fewest free is 0 → GPUs 1, 2 (the lowest idle),
    #    ends 51; wait 45 − 10 = 35, E = 6/41. Those GPUs were last held by j2 (8 GPUs): reused locality.
    obs, r, *_ = env.step(0)
    assert r == pytest.approx(6 / 41) and env.placed[-1]["reused"]
    # 10. pick j5 (1 GPU) on [1, 4]: server 0, GPU 3, ends 49; wait 35, E = 4/39. All placed.
    obs, r, term, trunc = env.step(0)
    assert r == pytest.approx(4 / 39) and term and not trunc
    assert env.end == [[52, 51, 51, 49], [45, 45, 45, 45]]
    np.testing.assert_allclose(obs["gpu"], [[L(7), L(6), L(6), L(4)], [0, 0, 0, 0]])

    m = env.metrics()
    want = {
        "placed": 6,
        "avg_effectiveness": (1 + 0.75 + 5 / 45 + 7 / 52 + 6 / 41 + 4 / 39) / 6,
        "avg_jct": (10 + 40 + 45 + 52 + 41 + 39) / 6,  # wait + actual per job: 227 / 6
        "avg_wait": (0 + 10 + 40 + 45 + 35 + 35) / 6,  # 27.5
        "avg_actual": (10 + 30 + 5 + 7 + 6 + 4) / 6,
        "makespan": 52.0,  # ends 10, 40, 45, 52, 51, 49 − t0 0
        "utilization": 190 / (8 * 45),  # busy area 30 + 120 + 40 over 8 GPUs × 45 s
        "fragmentation": 1.25 / 45,
        "multi_share_relaxed": 0.0,  # j0, j1, j2, j4 all at level 0
        "relaxed_sensitive": 0.0,  # no sensitive multi-GPU job: 0/0 → 0
        "relaxed_insensitive": 0.0,
        "wait_sensitive": 35.0,  # j5 (model 0)
        "wait_insensitive": (0 + 10 + 40 + 45 + 35) / 5,  # 26
        "reused_locality": 1 / 4,  # j4 of the four multi-GPU jobs (j1's GPU 3 of server 0 was never used)
        "steps": 10,
        "forwards": 3,
        "invalid": 1,
        "elapsed": 45,
    }
    for key, value in want.items():
        assert m[key] == pytest.approx(value), key


def test_invalid_pick_is_a_forward():
    """Step 2 of scenario B with an invalid pick (j2 does not fit) instead of φ: the same forward (passed
    counted), counted in `invalid`, not in `forwards`, reward 0."""
    a, _ = make(JOBS_B)
    b, _ = make(JOBS_B)
    a.step(0)
    b.step(0)
    obs_a, *_ = a.step(3)
    obs_b, r, *_ = b.step(1)
    assert r == 0.0 and (b.invalid, b.forwards) == (1, 0) and (a.invalid, a.forwards) == (0, 1)
    for key in OBS_KEYS:
        np.testing.assert_array_equal(obs_a[key], obs_b[key])
    assert obs_b["passed"].tolist() == [1, 0, 1]
    # At 10 nothing is busy and every job has arrived: an out-of-range action is invalid and moves nothing.
    obs_c, r, *_ = b.step(7)
    assert b.invalid == 2 and r == 0.0 and obs_c["t"] == 10 and obs_c["passed"].tolist() == [1, 0, 1]


def test_stats_of_the_jobs_behind_the_window():
    """Four 8-GPU jobs and a 2-GPU one at 0, a 4-GPU one at 4: after picking j0, window [j1, j2, j3],
    behind [j4]; φ to the arrival at 4 (before the release at 10): behind [j4, j5]."""
    env, obs = make([(0, 8, 10, 4)] * 4 + [(0, 2, 20, 4), (4, 4, 40, 2)])
    # reset: behind [j3, j4]: mean g 5 → 5/4; mean ideal 15; mean wait 0.
    np.testing.assert_allclose(obs["stats"], [math.log1p(2), 1.25, L(15), 0.0])
    env.step(0)
    obs, *_ = env.step(3)
    # t = 4; behind [j4 (2 GPUs, 20 s, submit 0), j5 (4, 40, 4)]: mean g 3 → 0.75, mean ideal 30,
    # mean wait = 4 − mean submit 2 = 2. Nothing fit at 0 (0 free): passed stays 0.
    assert obs["t"] == 4 and obs["passed"].tolist() == [0, 0, 0]
    np.testing.assert_allclose(obs["stats"], [math.log1p(2), 0.75, L(30), L(2)])
    np.testing.assert_allclose(obs["jobs"][:, -1], [L(4)] * 3)  # every window job waited 4 s
    check_obs_layout(env, obs)


JOBS_C = [(0, 8, 10, 4), (0, 8, 20, 4), (5, 1, 3, 4)]


def test_auto_forward_skips_forced_phis():
    # Without the flag: after picking j0 (all 8 GPUs until 10), j1 does not fit, j2 has not arrived:
    # only φ is valid.
    env, _ = make(JOBS_C)
    obs, *_ = env.step(0)
    assert obs["t"] == 0 and obs["mask"].tolist() == [False, False, False, True]

    env, obs = make(JOBS_C, auto_forward=True)
    assert obs["t"] == 0  # j0 fits at reset: nothing to skip
    # pick j0 (E = 1), then forward to the arrival at 5 (busy area 8·5 = 40), nothing fits, forward to the
    # release at 10 (busy area 80); j1 and j2 fit there. Reward the pick's; forwards not counted.
    obs, r, term, _ = env.step(0)
    assert r == pytest.approx(1.0) and obs["t"] == 10 and not term
    assert (env.steps, env.forwards, env.invalid) == (1, 0, 0) and env.area_busy == 80
    assert obs["passed"].tolist() == [0, 0, 0]  # nothing fit during the skipped forwards
    assert obs["mask"].tolist() == [True, True, False, False]  # nothing busy, nothing left to arrive
    # pick j2 (slot 1, 1 GPU: server 0 GPU 0 until 13): wait 5, actual 3, E = 3/8; j1 (8) no longer
    # fits → forward to 13 (busy area += 3·1 = 83).
    obs, r, *_ = env.step(1)
    assert r == pytest.approx(3 / 8) and obs["t"] == 13 and env.area_busy == 83
    # pick j1: wait 13, actual 20, E = 20/33; all placed.
    obs, r, term, _ = env.step(0)
    assert r == pytest.approx(20 / 33) and term
    m = env.metrics()
    assert m["elapsed"] == 13 and m["makespan"] == 33  # ends 10, 8, 33
    assert m["utilization"] == pytest.approx(83 / (8 * 13)) and m["forwards"] == 0 and m["steps"] == 3


def test_termination_and_truncation():
    env, _ = make(JOBS_B, max_steps=2)
    _, _, term, trunc = env.step(0)
    assert not term and not trunc
    _, _, term, trunc = env.step(3)
    assert not term and trunc  # 2 decisions, 5 jobs unplaced
    # Terminated as soon as every job is placed, even with GPUs still busy (φ stays valid then).
    env, _ = make([(0, 1, 5, 4)])
    obs, r, term, trunc = env.step(0)
    assert term and not trunc and obs["mask"].tolist() == [False, False, False, True]
    assert env.metrics()["makespan"] == 5 and env.metrics()["elapsed"] == 0


@pytest.mark.parametrize(("n_levels", "want_level", "want_actual"), [(4, 2, 30), (2, 1, 20)])
def test_three_servers_level_two_and_capping(n_levels, want_level, want_actual):
    """3 servers × 4: three 3-GPU jobs fill each server to 1 free; a 3-GPU job then takes one GPU of each
    server: s = 3, level min(3 − 1, k − 1) = 2 for k = 4 (slowdown 3.0 → 30 s) and 1 for k = 2 (2.0 → 20)."""
    table = [row + [row[-1] + 1.0] for row in TABLE] if n_levels == 4 else [row[:2] for row in TABLE]
    jobs = [(0, 3, 50, 4), (0, 3, 50, 4), (0, 3, 50, 4), (0, 3, 10, 0), (0, 9, 10, 0), (0, 5, 10, 0)]
    env, obs = make(jobs, n_servers=3, n_levels=n_levels, table=table)
    # Profiles (model 0 row: [1, 2, 3, 4] for k = 4; [1, 2] for k = 2) are filled as the jobs enter:
    env.step(0)  # j0 → [3, 0, 0] (tie on fewest free → server 0): free [1, 4, 4]
    env.step(0)  # j1: server 0 has 1 < 3; servers 1, 2 tie → server 1: free [1, 1, 4]
    obs, *_ = env.step(0)  # j2 → server 2: free [1, 1, 1]; window [j3, j4, j5]
    assert obs["free"].tolist() == [1, 1, 1]
    if n_levels == 4:
        # j3: 3 GPUs, top = min(min(3, 3) − 1, 3) = 2 → [10, 20, 30, 30]; j4: 9 GPUs, top = 3 − 3 = 0 →
        # all 10; j5: 5 GPUs, top = min(3 − 2, 3) = 1 → [10, 20, 20, 20].
        assert obs["profile"].tolist() == [[10, 20, 30, 30], [10] * 4, [10, 20, 20, 20]]
    else:
        # k = 2: j3 top = min(2, 1) = 1 → [10, 20]; j4 → [10, 10]; j5 top 1 → [10, 20].
        assert obs["profile"].tolist() == [[10, 20], [10, 10], [10, 20]]
    assert obs["mask"].tolist() == [True, False, False, True]
    assert level_now(obs, 0) == want_level
    # j3 on [1, 1, 1]: no server has 3 → server 0 (most free, tie) 1, server 1 (most free) 1, server 2 fits
    # the rest 1 → take [1, 1, 1]; wait 0, E = 10 / actual.
    obs, r, *_ = env.step(0)
    assert env.placed[-1]["take"] == [1, 1, 1] and env.placed[-1]["level"] == want_level
    assert env.placed[-1]["actual"] == want_actual and r == pytest.approx(10 / want_actual)


def test_dsif_delays_a_scattered_shortest_job():
    """2 × 4: j0 (3 GPUs) and j1 (2) leave free [1, 2]; window [j2 (3 GPUs, 20 s, model 0), j3 (1, 50)]."""
    env, _ = make([(0, 3, 100, 4), (0, 2, 100, 4), (0, 3, 20, 0), (0, 1, 50, 4)])
    env.step(0)
    obs, *_ = env.step(0)
    assert obs["free"].tolist() == [1, 2] and obs["gpus"].tolist() == [3, 1, 0]
    # j2 would be split ([1, 2] → level 1, 40 s), j3 goes to server 0 (fewest free fitting) at level 0.
    assert (level_now(obs, 0), level_now(obs, 1)) == (1, 0)
    # fifo 0; sif: 20 < 50 → 0; lrf: 1 GPU → 1; spf: 60 vs 50 → 1; saf: profile[1] = 40 vs 50 → 0;
    # dsif: j2 is first in SIF order but not at level 0 and passed 0 < 3 → j3, slot 1.
    want = {"fifo": 0, "sif": 0, "lrf": 1, "spf": 1, "saf": 0, "dsif": 1}
    assert {n: ref_policy(n, obs) for n in want} == want
    passed3 = dict(obs, passed=np.asarray([3, 0, 0]))
    assert ref_policy("dsif", passed3) == 0  # delayed 3 times already: taken at level 1
    only_j2 = dict(obs, present=np.asarray([True, False, False]))
    assert ref_policy("dsif", only_j2) == 3  # φ
    # Ties go to the lowest slot: two equal jobs.
    env, obs = make([(0, 2, 10, 4), (0, 2, 10, 4)])
    assert {n: ref_policy(n, obs) for n in want} == {n: 0 for n in want}
    # No job fits → φ for every heuristic.
    env, _ = make([(0, 8, 10, 4), (0, 8, 10, 4)])
    obs, *_ = env.step(0)
    assert {n: ref_policy(n, obs) for n in want} == {n: 3 for n in want}
