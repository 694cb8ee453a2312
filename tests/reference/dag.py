"""A plain-Python reference of the idle-slot DAG cluster (Duan & Wu, ../shared/papers/004_*.txt, on
Decima's task model), written from `docs/dag.md` (the contract of `jaxsched/envs/dag/env.py`), not from the
JAX code: Python lists, one record per executor and per (episode job, stage), explicit loops, integer
milliseconds and float64 rewards. The differential test drives it and the JAX env with the same actions and
compares every snapshot field, reward, flag and the final metrics.

The model, step by step:
  * `k` executors, each idle, running a task until `until[e]` or moving to a job until `until[e]`; each
    remembers `job[e]` (episode job, −1 none), `stage[e]` and `warm[e]` (it has run a task of `job[e]`).
  * Jobs arrive at `arrival[i]` (sorted, ms) and are in the system from then on; at most `J` are admitted
    (in a slot), in arrival order, each into the lowest free slot; a finished job leaves its slot.
  * A task of stage s of job j started at t on e lasts `duration[s] + warmup` if e is fresh to j
    (`not (job[e] == j and warm[e])`), else `duration[s]`; then job[e], stage[e], warm[e] = j, s, True and
    `dispatched[j][s] += 1`.
  * A stage is runnable when its job is admitted, its parents are finished, `n_tasks − dispatched −
    moving > 0`, `hold_until <= t` and it is not selected. A decision is asked when an executor is idle
    and a stage runnable. Every valid action selects its stage; a trigger event time (an executor went
    idle, a stage finished, a job was admitted, a timer ended) clears every selection.
  * Action (a_stage = slot·S + s, a_limit, r): valid iff the stage is runnable, `a_limit ∈ [0, k)` with
    `p = a_limit + 1 > bound(job)` (executors running for or moving to the job), `r ∈ [0, g]`, and `r > 0`
    only for a stage never delayed with nothing dispatched and nothing moving to it. Invalid: only the
    `invalid` counter changes (reward 0, time frozen).
  * r > 0 delays the stage: `delayed = True`, `hold_until = t + max(1, (r·L[s]) // g)`
    (`L = n_tasks·duration`).
  * r = 0 dispatches `n = min(#idle, n_tasks − dispatched − moving, p − bound)` executors: the first n idle
    ones by (class, index), class 1 = same job, 2 = the rest. A class-2
    executor moves when `moving_delay > 0` (job, stage, warm = j, s, False; `moving += 1`), every other
    one starts a task now.
  * Events, while no decision is asked, jobs are unfinished and t < max_time: t' = the earliest next
    arrival, executor `until`, or `hold_until > t`. If t' >= max_time: reward −(max_time − t)/1000 ·
    n_sys / reward_scale (a contract choice, see `_run_events`), t = max_time, truncated. Else reward
    −(t' − t)/1000 · n_sys / reward_scale (n_sys: arrived, unfinished) and at t': (1) completions:
    `done += 1`, then the completing executor continues with the next task of its stage (not fresh) while
    `n_tasks − dispatched > 0`, else idles; (2) move arrivals: if the job is unfinished `moving −= 1`, and
    the executor starts a task (fresh) while `n_tasks − dispatched > 0`, else idles (keeping job and
    stage, warm False); (3) finished stages and jobs (JCT = t' − arrival; the slot is freed);
    (4) arrivals and admissions.
  * `reset`: t = first arrival, arrivals and admissions, then events. `step`: the action, then events.
    Terminated when every job is finished.

Task waves (`waves=`, decima-sim's sampling, docs/dag.md "Task waves"): a task's duration is not the
template's but drawn when it starts, once every start of the action or the event time is known: with n the
executors whose `job[e]` is the task's job and which are not moving (after the starts), the key is decima's
interval map of n (lo with probability (n − lo)/(hi − lo) by the task's draw 0), the largest present key if
the stage lacks it; the list fresh (or first + warmup when empty) for an executor fresh to the job, rest (if
not empty) when its last task was this stage, else first (or fresh when empty); the element `draw 1 % len`.
Draw i of a task is `lowbias32` chained over (seed, job, stage, task index, i), written out below in Python
ints. Tasks of one dispatch go out in (class, index) order; at an event time, to completing executors by
index, then to arriving ones by index.

`random_valid_action(snap, env, rng)` draws a uniform runnable stage, a uniform valid limit and a uniform
valid idle level.
"""

from __future__ import annotations

import numpy as np

INF = 2**31 - 1
IDLE, RUNNING, MOVING = 0, 1, 2


class RefDAGEnv:
    """Reference simulator of one episode: `template[i]`, `arrival[i]` (ms, sorted) for each job i."""

    def __init__(
        self,
        *,
        n_executors,
        max_slots,
        max_stages,
        idle_levels,
        n_stages,
        parents,
        n_tasks,
        duration,
        template,
        arrival,
        moving_delay=0,
        warmup_delay=0,
        reward_scale=1.0,
        max_time=INF,
        waves=None,
        wave_seed=0,
        data_points=(5, 10, 20, 40, 50, 60, 80, 100),
    ):
        self.k, self.J, self.S, self.g = int(n_executors), int(max_slots), int(max_stages), int(idle_levels)
        self.moving_delay, self.warmup_delay = int(moving_delay), int(warmup_delay)
        self.reward_scale, self.max_time = float(reward_scale), int(max_time)

        def pad(rows):  # [T, S'] -> lists of S ints
            rows = np.asarray(rows).tolist()
            assert all(len(row) <= self.S for row in rows), "templates are wider than max_stages"
            return [[int(x) for x in row] + [0] * (self.S - len(row)) for row in rows]

        self.t_stages = [int(x) for x in np.asarray(n_stages).tolist()]
        self.t_parents, self.t_tasks, self.t_dur = pad(parents), pad(n_tasks), pad(duration)
        self.template = [int(x) for x in np.asarray(template).tolist()]
        self.arrival = [int(x) for x in np.asarray(arrival).tolist()]
        self.N = len(self.template)
        self.waves = None
        if waves is not None:  # numpy copies: values [T, S, K, 3, D], count [T, S, K, 3], present [T, S, K]
            self.waves = dict(
                values=np.asarray(waves.values).tolist(), count=np.asarray(waves.count).tolist(),
                present=np.asarray(waves.present).tolist(), keys=[int(x) for x in np.asarray(waves.keys)],
            )  # fmt: skip
        self.wave_seed, self.data_points = int(wave_seed), sorted(int(x) for x in data_points)
        self.pending = []  # tasks started whose duration is drawn once the batch of starts is known
        assert self.N >= 1 and len(self.arrival) == self.N and self.arrival == sorted(self.arrival)
        assert self.arrival[0] < self.max_time and self.k >= 1 and self.J >= 1
        self.reset()

    # ---- template lookups (episode job j, stage s) ----
    def n_tasks(self, j, s):
        return self.t_tasks[self.template[j]][s]

    def length(self, j, s):  # L[s] = n_tasks · duration, ms
        return self.t_tasks[self.template[j]][s] * self.t_dur[self.template[j]][s]

    def stages(self, j):
        return range(self.t_stages[self.template[j]])

    # ---- state ----
    def reset(self):
        N, S, k = self.N, self.S, self.k
        self.t = self.arrival[0]
        self.dispatched = [[0] * S for _ in range(N)]  # per episode job and stage
        self.done = [[0] * S for _ in range(N)]
        self.moving = [[0] * S for _ in range(N)]
        self.delayed = [[False] * S for _ in range(N)]
        self.hold_until = [[0] * S for _ in range(N)]
        self.selected = [[False] * S for _ in range(N)]
        self.finished = [False] * N
        self.jct = [-1] * N
        self.slot_job = [-1] * self.J
        self.ex_state, self.ex_until = [IDLE] * k, [INF] * k  # one record per executor
        self.ex_job, self.ex_stage, self.ex_warm = [-1] * k, [-1] * k, [False] * k
        self.n_arrived = self.n_admitted = self.n_finished = 0
        self.invalid = self.n_selections = self.n_delayed = 0
        self.n_waited = 0  # jobs admitted after their arrival time (they waited for a slot)
        self.idle_total_ms = 0
        self.last_finish = -1
        self.ret = 0.0
        self.terminated = self.truncated = False
        self._arrivals()
        self.ret += self._run_events()  # 0.0: a root stage is runnable and every executor idle
        return self.snapshot()

    def bound(self, j):
        return sum(1 for e in range(self.k) if self.ex_state[e] != IDLE and self.ex_job[e] == j)

    def admitted(self, j):
        return j in self.slot_job

    def stage_finished(self, j, s):
        return self.done[j][s] == self.n_tasks(j, s)

    def runnable(self, j, s):
        if j < 0 or not self.admitted(j) or s not in self.stages(j):
            return False
        mask = self.t_parents[self.template[j]][s]
        if any((mask >> p) & 1 and not self.stage_finished(j, p) for p in self.stages(j)):
            return False
        left = self.n_tasks(j, s) - self.dispatched[j][s] - self.moving[j][s]
        return left > 0 and self.hold_until[j][s] <= self.t and not self.selected[j][s]

    def any_idle(self):
        return IDLE in self.ex_state

    def decision_needed(self):
        return self.any_idle() and any(
            self.runnable(j, s) for j in self.slot_job if j >= 0 for s in self.stages(j)
        )

    def may_delay(self, j, s):  # r > 0 allowed for this stage (besides runnability)
        return self.g > 0 and not self.delayed[j][s] and self.dispatched[j][s] == 0 and self.moving[j][s] == 0

    # ---- actions ----
    def valid(self, a_stage, a_limit, r):
        if not (0 <= a_stage < self.J * self.S and 0 <= a_limit < self.k and 0 <= r <= self.g):
            return False
        slot, s = divmod(a_stage, self.S)
        j = self.slot_job[slot]
        if not (self.any_idle() and self.runnable(j, s)) or a_limit + 1 <= self.bound(j):
            return False
        return r == 0 or self.may_delay(j, s)

    def start_task(self, e, j, s):
        fresh = not (self.ex_job[e] == j and self.ex_warm[e])
        same_stage = self.ex_stage[e] == s
        self.pending.append((e, j, s, self.dispatched[j][s], fresh, same_stage))
        self.ex_state[e] = RUNNING
        self.ex_job[e], self.ex_stage[e], self.ex_warm[e] = j, s, True
        self.dispatched[j][s] += 1

    def resolve_durations(self):
        """Set `until` of every task started since the last call."""
        for e, j, s, task, fresh, same_stage in self.pending:
            if self.waves is None:
                d = self.t_dur[self.template[j]][s] + (self.warmup_delay if fresh else 0)
            else:
                d = self.wave_duration(j, s, task, fresh, same_stage)
            self.ex_until[e] = self.t + d
        self.pending = []

    # ---- decima-sim's task waves ----
    @staticmethod
    def _mix(x):
        x ^= x >> 16
        x = (x * 0x7FEB352D) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x846CA68B) & 0xFFFFFFFF
        return x ^ (x >> 16)

    def draw(self, j, s, task, i):
        h = self.wave_seed & 0xFFFFFFFF
        for v in (j, s, task, i):
            h = self._mix(h ^ (v & 0xFFFFFFFF))
        return h

    def interval(self, n):
        dp = self.data_points
        if n <= dp[0]:
            return dp[0], dp[0]
        if n >= dp[-1] or n in dp:
            return min(n, dp[-1]), min(n, dp[-1])
        lo = max(x for x in dp if x < n)
        return lo, min(x for x in dp if x > n)

    def wave_duration(self, j, s, task, fresh, same_stage):
        w, tm = self.waves, self.template[j]
        n = sum(1 for e in range(self.k) if self.ex_job[e] == j and self.ex_state[e] != MOVING)
        lo, hi = self.interval(n)
        key = hi if hi == lo else (lo if 1 + self.draw(j, s, task, 0) % (hi - lo) <= n - lo else hi)
        col = w["keys"].index(key)
        if not w["present"][tm][s][col]:
            col = w["keys"].index(max(k for c, k in enumerate(w["keys"]) if w["present"][tm][s][c]))
        first, rest, fresh_n = w["count"][tm][s][col]
        if fresh:
            kind, extra = (2, 0) if fresh_n > 0 else (0, self.warmup_delay)
        elif same_stage and rest > 0:
            kind, extra = 1, 0
        else:
            kind, extra = (0, 0) if first > 0 else (2, 0)
        size = w["count"][tm][s][col][kind]
        if size == 0:  # both lists empty: the template's duration
            return max(self.t_dur[tm][s], 1) + extra
        return max(w["values"][tm][s][col][kind][self.draw(j, s, task, 1) % size] + extra, 1)

    def go_idle(self, e):
        self.ex_state[e], self.ex_until[e] = IDLE, INF

    def step(self, a_stage, a_limit, r):
        if self.terminated or self.truncated:
            raise RuntimeError("step after the episode ended; call reset")
        a_stage, a_limit, r = int(a_stage), int(a_limit), int(r)
        if not self.valid(a_stage, a_limit, r):
            self.invalid += 1
            return self.snapshot(), 0.0, False, False
        slot, s = divmod(a_stage, self.S)
        j = self.slot_job[slot]
        self.n_selections += 1
        self.selected[j][s] = True
        if r > 0:
            idle = max(1, (r * self.length(j, s)) // self.g)
            self.delayed[j][s], self.hold_until[j][s] = True, self.t + idle
            self.n_delayed += 1
            self.idle_total_ms += idle
        else:
            self.dispatch(j, s, a_limit + 1)
        reward = self._run_events()
        self.ret += reward
        return self.snapshot(), reward, self.terminated, self.truncated

    def dispatch(self, j, s, p):
        idle = [e for e in range(self.k) if self.ex_state[e] == IDLE]
        n = min(len(idle), self.n_tasks(j, s) - self.dispatched[j][s] - self.moving[j][s], p - self.bound(j))
        assert n >= 1
        cls = {e: 1 if self.ex_job[e] == j else 2 for e in idle}  # read before anything changes
        chosen = sorted(idle, key=lambda e: (cls[e], e))[:n]
        for e in chosen:  # tasks go out in (class, index) order
            if cls[e] == 2 and self.moving_delay > 0:
                self.ex_state[e], self.ex_until[e] = MOVING, self.t + self.moving_delay
                self.ex_job[e], self.ex_stage[e], self.ex_warm[e] = j, s, False
                self.moving[j][s] += 1
            else:
                self.start_task(e, j, s)
        self.resolve_durations()

    # ---- events ----
    def n_sys(self):
        return self.n_arrived - self.n_finished

    def next_event(self):
        times = [self.arrival[self.n_arrived]] if self.n_arrived < self.N else []
        times += [self.ex_until[e] for e in range(self.k) if self.ex_state[e] != IDLE]
        for j in self.slot_job:
            if j >= 0:
                times += [self.hold_until[j][s] for s in self.stages(j) if self.hold_until[j][s] > self.t]
        return min(times, default=INF)

    def _run_events(self):
        """Advance until a decision is asked, every job is finished or max_time is reached; the reward.
        Contract choice: the interval cut by max_time accrues too (−(max_time − t)·n_sys), so a truncated
        return is −∫ n_sys dt over [first arrival, max_time]."""
        reward = 0.0
        while not self.decision_needed() and self.n_finished < self.N and self.t < self.max_time:
            t_next = self.next_event()
            stop = min(t_next, self.max_time)
            reward -= (stop - self.t) * self.n_sys() / (1000.0 * self.reward_scale)
            self.t = stop
            if t_next >= self.max_time:
                self.truncated = True
                break
            self._process_events()
        self.terminated = self.n_finished == self.N
        return reward

    def _process_events(self):
        t = self.t
        trigger = False
        for e in range(self.k):  # 1. task completions, index order
            if self.ex_state[e] == RUNNING and self.ex_until[e] == t:
                j, s = self.ex_job[e], self.ex_stage[e]
                self.done[j][s] += 1
                trigger |= self.done[j][s] == self.n_tasks(j, s)  # the stage finished
                if self.n_tasks(j, s) - self.dispatched[j][s] > 0:
                    self.start_task(e, j, s)  # not fresh: job[e] == j and warm
                else:
                    self.go_idle(e)
                    trigger = True
        for e in range(self.k):  # 2. move arrivals, index order
            if self.ex_state[e] == MOVING and self.ex_until[e] == t:
                j, s = self.ex_job[e], self.ex_stage[e]
                if not self.finished[j]:
                    self.moving[j][s] -= 1
                if not self.finished[j] and self.n_tasks(j, s) - self.dispatched[j][s] > 0:
                    self.start_task(e, j, s)  # fresh: warm is False
                else:
                    self.go_idle(e)
                    trigger = True
        self.resolve_durations()  # every start of this event time is known
        for slot in range(self.J):  # 3. finished jobs leave their slots
            j = self.slot_job[slot]
            if j >= 0 and all(self.stage_finished(j, s) for s in self.stages(j)):
                self.finished[j], self.jct[j] = True, t - self.arrival[j]
                self.n_finished += 1
                self.last_finish = t
                self.slot_job[slot] = -1
        trigger |= self._arrivals()  # 4.
        for j in self.slot_job:  # 5. timers ending now
            if j >= 0:
                trigger |= any(self.delayed[j][s] and self.hold_until[j][s] == t for s in self.stages(j))
        if trigger:  # 6.
            for j in range(self.N):
                self.selected[j] = [False] * self.S

    def _arrivals(self):
        """Arrivals due by t, then admissions; whether a job was admitted."""
        while self.n_arrived < self.N and self.arrival[self.n_arrived] <= self.t:
            self.n_arrived += 1
        admitted = False
        while self.n_admitted < self.n_arrived and -1 in self.slot_job:
            self.slot_job[self.slot_job.index(-1)] = self.n_admitted  # lowest free slot
            self.n_waited += self.arrival[self.n_admitted] < self.t
            self.n_admitted += 1
            admitted = True
        return admitted

    # ---- views ----
    def snapshot(self):
        J, S = self.J, self.S
        per_slot = {
            name: np.zeros((J, S), np.int64) for name in ("dispatched", "done", "moving", "hold_until")
        }
        delayed, selected = np.zeros((J, S), bool), np.zeros((J, S), bool)
        stage_mask, idle_ok = np.zeros(J * S, bool), np.zeros(J * S, bool)
        bound = np.zeros(J, np.int64)
        any_idle = self.any_idle()
        for slot, j in enumerate(self.slot_job):
            if j < 0:
                continue
            bound[slot] = self.bound(j)
            for s in range(S):
                per_slot["dispatched"][slot, s] = self.dispatched[j][s]
                per_slot["done"][slot, s] = self.done[j][s]
                per_slot["moving"][slot, s] = self.moving[j][s]
                per_slot["hold_until"][slot, s] = self.hold_until[j][s]
                delayed[slot, s] = self.delayed[j][s]
                selected[slot, s] = self.selected[j][s]
                run = any_idle and self.runnable(j, s)
                stage_mask[slot * S + s] = run
                idle_ok[slot * S + s] = run and self.may_delay(j, s)
        return dict(
            t=self.t,
            slot_job=np.array(self.slot_job, np.int64),
            **per_slot,
            delayed=delayed,
            selected=selected,
            stage_mask=stage_mask,
            idle_ok=idle_ok,
            bound=bound,
            ex_state=np.array(self.ex_state, np.int64),
            ex_until=np.array(self.ex_until, np.int64),
            ex_job=np.array(self.ex_job, np.int64),
            ex_stage=np.array(self.ex_stage, np.int64),
            ex_warm=np.array(self.ex_warm, bool),
            n_arrived=self.n_arrived,
            n_admitted=self.n_admitted,
            n_finished=self.n_finished,
            invalid=self.invalid,
            jct=np.array(self.jct, np.int64),
        )

    def metrics(self):
        jcts = [x for x in self.jct if x >= 0]
        idle_s = self.idle_total_ms / 1000.0
        return dict(
            avg_jct=sum(jcts) / 1000.0 / len(jcts) if jcts else 0.0,
            makespan=(self.last_finish - self.arrival[0]) / 1000.0 if jcts else 0.0,
            n_finished=self.n_finished,
            unfinished=self.n_arrived - self.n_finished,
            n_selections=self.n_selections,
            n_delayed=self.n_delayed,
            idle_total=idle_s,
            idle_per_selection=idle_s / self.n_selections if self.n_selections else 0.0,
            idle_per_delayed=idle_s / self.n_delayed if self.n_delayed else 0.0,
            invalid=self.invalid,
            waited_for_slot=self.n_waited,
            **{"return": self.ret},
        )


def random_valid_action(snap, env, rng):
    """Uniform over runnable stages, then over valid limits (p > bound), then over valid r."""
    stages = np.flatnonzero(snap["stage_mask"])
    a_stage = int(stages[rng.integers(len(stages))])
    bound = int(snap["bound"][a_stage // env.S])
    a_limit = int(rng.integers(bound, env.k))
    r = int(rng.integers(0, env.g + 1)) if snap["idle_ok"][a_stage] else 0
    return a_stage, a_limit, r
