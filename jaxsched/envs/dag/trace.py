"""What each executor did in one episode of the DAG env: busy intervals per (executor, job, stage) and the
idle slots the policy inserted — the data of a Gantt chart (notebooks, figures). Host-side and slow (a
Python loop over jitted pieces of the env); not for training.

The env fast-forwards a stage's back-to-back tasks, so a trace reads *runs*: an executor's uninterrupted
work on one stage, from its dispatch (or its move's end) to its last task's end. The loop applies each
decision and then one event time at a time (the env's own `_apply` and `_advance` with `max_events = 1`),
and reads every run's end exactly: an executor that stops during an event time either still had tasks of
its stage to hand out before it (its last tasks were fast-forwarded: it ended at that time) or had none
(it ended at the end of the task it was running).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import numpy as np

from jaxsched.envs.dag.env import DAGEnv


class Run(NamedTuple):
    executor: int
    job: int  # episode job index
    stage: int
    start_s: float
    end_s: float


class Hold(NamedTuple):
    job: int
    stage: int
    start_s: float
    end_s: float


# the state fields a trace reads, and `left` (each stage's tasks not started, from the packed counts)
VIEW = ("t", "forwarding", "n_finished", "n_jobs", "slot_job", "hold_until", "ex_state", "ex_until", "ex_job",
        "ex_slot", "ex_stage")  # fmt: skip


def trace_episode(env: DAGEnv, params, policy, policy_params, key, max_steps: int = 100_000, jit_policy=True):
    """`(runs, holds, metrics)` of one episode of `env` (reset from `key`) under `policy(policy_params,
    obs, key) -> action`: every executor run and every inserted idle slot, in seconds. A policy that is
    not a pure JAX function (e.g. a scripted list of actions) needs `jit_policy=False`; an invalid action
    at a decision is an error (the episode could not move on)."""
    one = DAGEnv(dataclasses.replace(env.config, max_events=1))
    s_max = env.config.max_stages
    valid = jax.jit(one.action_valid)
    apply = jax.jit(one._apply)
    advance = jax.jit(lambda st, p: one._advance(st, p)[:2])
    observe = jax.jit(one.observe)
    view = jax.jit(lambda st: {**{k: getattr(st, k) for k in VIEW}, "left": one.stage_counts(st)["left"]})
    act = jax.jit(policy) if jit_policy else policy
    k_reset, key = jax.random.split(key)
    obs, state = one.reset_env(k_reset, params)
    runs: list[Run] = []
    holds: list[Hold] = []
    start: dict[int, int] = {}  # executor -> start (ms) of its open run
    for _ in range(max_steps):
        if not bool(state.forwarding):
            key, k_act = jax.random.split(key)
            action = act(policy_params, obs, k_act)
            if not bool(valid(state, params, action)):
                raise ValueError(f"trace_episode: the policy chose an invalid action {np.asarray(action)}")
            before = _view(view, state)
            state = apply(state, params, action, True)
            after = _view(view, state)
            a = np.asarray(action)
            j, s = divmod(int(a[0]), s_max)
            if a[2] > 0:
                holds.append(Hold(int(before.slot_job[j]), s, before.t / 1e3, after.hold_until[j, s] / 1e3))
            for e in np.flatnonzero((before.ex_state == 0) & (after.ex_state == 1)):
                start[int(e)] = int(before.t)
        before = _view(view, state)
        state, trunc = advance(state, params)
        after = _view(view, state)
        _update_runs(before, after, start, runs)
        obs = observe(state, params)
        if int(after.n_finished) >= int(after.n_jobs) or bool(trunc):
            break
    for e, t0 in start.items():  # runs still open at truncation
        runs.append(Run(e, int(after.ex_job[e]), int(after.ex_stage[e]), t0 / 1e3, after.t / 1e3))
    metrics = {k: float(v) for k, v in jax.device_get(one.metrics(state, params)).items()}
    return sorted(runs, key=lambda r: (r.executor, r.start_s)), holds, metrics


class _View:
    def __init__(self, d):
        self.__dict__.update(d)


def _view(view, state) -> _View:
    """The fields of `state` a trace reads (`VIEW`), on the host."""
    return _View(jax.device_get(view(state)))


def _update_runs(before, after, start: dict[int, int], runs: list[Run]) -> None:
    """Close the runs that ended during one event time and open those that began (module docstring)."""
    t = int(after.t)
    for e in range(after.ex_state.shape[0]):
        was, now = int(before.ex_state[e]), int(after.ex_state[e])
        same = (
            was == 1
            and now == 1
            and after.ex_stage[e] == before.ex_stage[e]
            and after.ex_job[e] == before.ex_job[e]
        )
        if was == 1 and not same:
            j, s = int(before.ex_slot[e]), int(before.ex_stage[e])
            had_tasks = before.left[j, s] > 0
            end = t if had_tasks else int(before.ex_until[e])
            runs.append(Run(e, int(before.ex_job[e]), s, start.pop(e) / 1e3, end / 1e3))
        if was == 2 and now == 1:  # a move ended and its first task began
            start[e] = int(before.ex_until[e])
