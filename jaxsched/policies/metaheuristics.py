"""Meta-heuristic schedulers of the DAS paper (§5.1.5) for the GPU-cloud env: MOSA and MALO, as jittable
planners that search the action space of one scheduling round by simulating candidates.

Unlike the heuristics (`policy(params, obs, key)`), a planner needs the simulator state to evaluate
candidates, so its signature is

    planner(params_unused, obs, state, key) -> GPUCloudAction

built by `make_mosa(env, env_params, ...)` / `make_malo(env, env_params, ...)`. A planner is a `Planner`
object: calling it gives the action; `planner.search(obs, state, key)` also returns a `SearchInfo` (the
scores of the start and of the chosen action). Everything is jittable and vmappable over envs: iterations
are `lax.fori_loop`s, candidates are evaluated with `vmap` over copies of the current state.

Settings (paper App. D, Table 2; the extracted table's rows are garbled, read as):
  * MOSA (multi-objective simulated annealing, Sekkal & Belkaid 2020): initial temperature T = 400,
    cooling ratio P = 0.99, I = 50 iterations;
  * MALO (multi-objective hybrid ant-lion optimiser with elite differential evolution as local search,
    Abualigah & Diabat 2021): I = 100 iterations, S = 50 solutions.

Objective. A candidate action is scored by simulation from the current state: it is applied with
`env.step_env`, then the env is rolled forward `horizon` further rounds with a fixed default policy
(FIFO-LoadBalance), and the score is the sum of the Eq. 3 rewards over those `1 + horizon` rounds (0 after
the episode ends). Eq. 3 already scalarises the paper's objectives: each finished job adds 1/(fee·JCT)
and each failed scheduling subtracts α·C·GPUs. So MOSA and MALO here are *single-objective* on the env's
reward scalarisation: the papers' two objectives (makespan / cost there, JCT / fee here) are not
cooperative (DAS App. A), their Pareto archives need a final pick anyway, and a planner that must output
one action per round is compared on the same scalarisation the RL agents optimise. Every candidate's
lookahead uses the same key (common random numbers: the same pending-job samples), so candidates differ
only by their actions; the fluctuation draws come from the state's own seed. The lookahead reads the
episode's future arrivals from the workload bank: a simulation model as the meta-heuristics' papers
assume (they schedule a known batch of jobs), i.e. more information than the learned agents have.

Encoding. The env uses priorities and affinities only through their order. A start action (a heuristic's,
default FIFO-LoadBalance) is re-encoded as rank scores in [0, 1] (`rank_encode`: the first job / machine
gets 1, the last 0, ties broken as the env breaks them), which makes the same decisions and gives the
moves a scale (MOSA's σ = 0.15 swaps neighbours in an order with a fair probability). Both searches work
on the flat vector `f32[N + N·M]` (`flatten_action`: priorities, then affinities row by row).

Cost (`time_per_decision`, Small cluster: 8 machines, N = 16, paper settings, horizon 4, one decision,
batch 1, a 2-core CPU): MOSA ≈ 16 ms (204 lookaheads), MALO ≈ 0.24 s (5,555 lookaheads), against
≈ 0.05 ms for FIFO-LoadBalance — the gap the paper reports (meta-heuristics ~50× slower than DAS).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsched.core.episode import run_episode
from jaxsched.core.placement import descending_rank
from jaxsched.envs.gpu_cloud.env import GPUCloudAction, GPUCloudEnv, GPUCloudObs, GPUCloudState
from jaxsched.policies.gpu_cloud import make_heuristic

DEFAULT_POLICY = "fifo_loadbalance"  # the start action and the lookahead's policy


@struct.dataclass
class SearchInfo:
    init_score: jnp.ndarray  # f32 objective of the start (heuristic) action
    best_score: jnp.ndarray  # f32 objective of the chosen action (>= init_score: the best is kept)
    eval_key: jnp.ndarray  # the key every lookahead used (`objective(state, action, eval_key)`)


@dataclass(frozen=True)
class Planner:
    """A planner: `planner(params_unused, obs, state, key) -> GPUCloudAction`.

    `search(obs, state, key) -> (action, SearchInfo)`; `objective(state, action, key) -> f32` is the
    score it maximises (exposed so that tests and reports can re-score actions)."""

    name: str
    search: Callable
    objective: Callable

    def __call__(
        self, params_unused, obs: GPUCloudObs, state: GPUCloudState, key: jax.Array
    ) -> GPUCloudAction:
        del params_unused
        return self.search(obs, state, key)[0]


# ---- objective ----------------------------------------------------------------------------------------
def make_objective(env: GPUCloudEnv, env_params, horizon: int, rollout_policy: str = DEFAULT_POLICY):
    """`objective(state, action, key) -> f32`: the sum of Eq. 3 rewards of `action`'s round and of
    `horizon` further rounds under the heuristic `rollout_policy` (module docstring). Rewards after the
    episode ends (terminated or truncated) count 0. Jittable; vmap it over actions with `key` shared."""
    policy = make_heuristic(rollout_policy)

    def objective(state: GPUCloudState, action: GPUCloudAction, key: jax.Array) -> jax.Array:
        obs = env.observe(state, env_params)

        # One scan over the 1 + horizon rounds, the candidate acting in the first: a single copy of
        # `step_env` in the program (it dominates the compile time).
        def body(carry, x):
            obs, s, done, total = carry
            i, k = x
            k_act, k_step = jax.random.split(k)
            a = jax.tree.map(lambda c, h: jnp.where(i == 0, c, h), action, policy(None, obs, k_act))
            obs, s, r, term, trunc, _ = env.step_env(k_step, s, a, env_params)
            return (obs, s, done | term | trunc, total + jnp.where(done, 0.0, r)), None

        xs = (jnp.arange(1 + horizon), jax.random.split(key, 1 + horizon))
        init = (obs, state, jnp.bool_(False), jnp.float32(0.0))
        (_, _, _, total), _ = jax.lax.scan(body, init, xs)
        return total

    return objective


# ---- action encoding ----------------------------------------------------------------------------------
def rank_encode(action: GPUCloudAction) -> GPUCloudAction:
    """Rank scores in [0, 1] making the same decisions as `action`: `priority f32[N]` (over all slots) and
    each row of `affinity f32[N, M]` become `1 − rank/(K − 1)` of their descending order (ties to the
    lower index, as the env breaks them; K = 1 gives 1)."""

    def enc(x):
        k = x.shape[-1]
        return 1.0 - descending_rank(x).astype(jnp.float32) / max(k - 1, 1)

    return GPUCloudAction(priority=enc(action.priority), affinity=enc(action.affinity))


def start_action(obs: GPUCloudObs, key: jax.Array, init_policy: str = DEFAULT_POLICY) -> GPUCloudAction:
    """The heuristic `init_policy`'s action on `obs`, rank-encoded (`rank_encode`)."""
    return rank_encode(make_heuristic(init_policy)(None, obs, key))


def flatten_action(action: GPUCloudAction) -> jax.Array:
    """`f32[..., N + N·M]`: priorities then affinities (row-major), the searches' search space."""
    lead = action.priority.shape[:-1]
    return jnp.concatenate([action.priority, action.affinity.reshape(lead + (-1,))], axis=-1)


def unflatten_action(x: jax.Array, n_slots: int, n_machines: int) -> GPUCloudAction:
    """Inverse of `flatten_action`: `f32[..., N + N·M]` → `GPUCloudAction`."""
    lead = x.shape[:-1]
    return GPUCloudAction(
        priority=x[..., :n_slots], affinity=x[..., n_slots:].reshape(lead + (n_slots, n_machines))
    )


def _flat_scorer(env: GPUCloudEnv, objective):
    """`score(state, xs f32[B, D], key) -> f32[B]`: `objective` of B flat candidates from the same state
    with the same key, in one `vmap`."""
    n, m = env.config.n_slots, env.config.n_machines
    one = lambda state, x, key: objective(state, unflatten_action(x, n, m), key)  # noqa: E731
    return jax.vmap(one, in_axes=(None, 0, None))


def _pieces(u: jax.Array, shapes: tuple) -> list[jax.Array]:
    """Cut a flat vector into consecutive pieces of the given shapes. (One random draw per iteration,
    carved up: every `jax.random` call site adds a threefry hash to the program, i.e. compile time.)"""
    out, i = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        out.append(u[i : i + size].reshape(shape))
        i += size
    return out


# ---- MOSA ---------------------------------------------------------------------------------------------
def make_mosa(
    env: GPUCloudEnv,
    env_params,
    iterations: int = 50,
    t0: float = 400.0,
    cooling: float = 0.99,
    horizon: int = 4,
    chains: int = 4,
    sigma: float = 0.15,
    energy_scale: float = 1000.0,
    init_policy: str = DEFAULT_POLICY,
    rollout_policy: str = DEFAULT_POLICY,
) -> Planner:
    """Simulated annealing in the continuous (rank-encoded) action space (paper: T = 400, P = 0.99,
    I = 50).

    `chains` independent chains start from the heuristic action; each iteration k every chain proposes
    its current action plus N(0, σ²) noise on every priority and affinity, the `chains` proposals are
    scored in one `vmap`, and each is accepted by Metropolis at temperature `T_k = t0·cooling^k`: always
    if not worse, else with probability `exp(Δ·energy_scale / T_k)` (Δ < 0 the score change). The
    energy is the score in units of 1/`energy_scale` reward: T = 400 belongs to the papers' objectives
    (makespan in time units), and on raw Eq. 3 rewards (~0.01–1 per round) it would accept every move;
    at 1,000 a loss of 0.4 reward is accepted with probability 1/e at the start. The best action seen
    by any chain (the start included) is returned, so the result never scores below the start.
    Cost: `(1 + iterations)·chains` lookaheads of `1 + horizon` env steps."""
    objective = make_objective(env, env_params, horizon, rollout_policy)
    score = _flat_scorer(env, objective)
    n, m = env.config.n_slots, env.config.n_machines
    d = n + n * m

    def search(obs: GPUCloudObs, state: GPUCloudState, key: jax.Array):
        k_eval, k_init, k_search = jax.random.split(key, 3)
        x0 = flatten_action(start_action(obs, k_init, init_policy))  # [D]

        # Iteration 0 scores the start (every chain proposes it unchanged); 1..I anneal. Folding the
        # start into the loop keeps one copy of the vmapped objective in the program (compile time).
        def step(k, carry):
            xs, fs, best_x, best_f, f0 = carry
            z, u = _pieces(
                jax.random.normal(jax.random.fold_in(k_search, k), (chains * (d + 1),)),
                ((chains, d), (chains,)),
            )
            prop = xs + jnp.where(k == 0, 0.0, sigma) * z
            fp = score(state, prop, k_eval)
            delta = (fp - fs) * energy_scale
            temp = t0 * cooling ** jnp.maximum(k - 1, 0).astype(jnp.float32)  # T·P^(k−1) at iteration k
            # u is standard normal: Φ(u) is the uniform of the Metropolis test.
            accept = (delta >= 0) | (jax.scipy.stats.norm.cdf(u) < jnp.exp(delta / temp))
            xs, fs = jnp.where(accept[:, None], prop, xs), jnp.where(accept, fp, fs)
            i = jnp.argmax(fp)  # the best proposal of this iteration (first on ties)
            better = fp[i] > best_f
            return (
                xs,
                fs,
                jnp.where(better, prop[i], best_x),
                jnp.where(better, fp[i], best_f),
                jnp.where(k == 0, fp[0], f0),
            )

        xs = jnp.broadcast_to(x0, (chains, d))
        init = (xs, jnp.full((chains,), -jnp.inf), x0, jnp.float32(-jnp.inf), jnp.float32(0.0))
        _, _, best_x, best_f, f0 = jax.lax.fori_loop(0, iterations + 1, step, init)
        info = SearchInfo(init_score=f0, best_score=best_f, eval_key=k_eval)
        return unflatten_action(best_x, n, m), info

    return Planner("mosa", search, objective)


# ---- MALO ---------------------------------------------------------------------------------------------
def alo_shrink(t: jax.Array, iterations: int) -> jax.Array:
    """ALO's ratio I(t) ≥ 1 (Mirjalili 2015): the random-walk box shrinks by 1/I as ants slide into the
    pit; `I = 1 + 10^w · t/T` with w = 2, 3, 4, 5, 6 past 10 %, 50 %, 75 %, 90 %, 95 % of the run."""
    frac = t / iterations
    w = jnp.select(
        [frac > 0.95, frac > 0.9, frac > 0.75, frac > 0.5, frac > 0.1], [6.0, 5.0, 4.0, 3.0, 2.0], 0.0
    )
    return jnp.where(w > 0, 1.0 + 10.0**w * frac, 1.0)


def _malo_moves(
    t, lions, scores, u, *, shapes: tuple, n_elite: int, iterations: int, de_f: float, de_cr: float
):
    """The S ants `f32[S, D]`, the `n_elite` DE trials `f32[E, D]` and their parents `i32[E]` of iteration
    t, from the ant lions `f32[S, D]`, their scores `f32[S]` and the iteration's uniform draw `u`."""
    s, d = lions.shape
    u_rw, u_lion, u_elite, u_de, u_cr, u_cr_at = _pieces(u, shapes)
    order = jax.lax.top_k(scores, s)[1]  # best first (ties: the lower index first)
    elite = lions[order[0]]
    # Ants: random walks around a roulette-selected ant lion and around the elite, averaged.
    weights = scores - scores.min() + 1e-6
    cdf = jnp.cumsum(weights) / weights.sum()
    picked = jnp.minimum((cdf[None, :] < u_rw[:, None]).sum(axis=1), s - 1)
    radius = 1.0 / alo_shrink(t.astype(jnp.float32), iterations)
    around_lion = jnp.clip(lions[picked] + radius * (2.0 * u_lion - 1.0), 0.0, 1.0)
    around_elite = jnp.clip(elite[None] + radius * (2.0 * u_elite - 1.0), 0.0, 1.0)
    ants = 0.5 * (around_lion + around_elite)
    # Elite DE (DE/best/1/bin) on the n_elite best ant lions.
    parents = order[:n_elite]
    r = jnp.minimum((u_de * s).astype(jnp.int32), s - 1)
    mutant = elite[None] + de_f * (lions[r[0]] - lions[r[1]])
    forced = jnp.arange(d)[None, :] == jnp.minimum((u_cr_at * d).astype(jnp.int32), d - 1)[:, None]
    trial = jnp.clip(jnp.where((u_cr < de_cr) | forced, mutant, lions[parents]), 0.0, 1.0)
    return ants, trial, parents


def _malo_select(lions, scores, ants, f_ant, trial, f_trial, parents):
    """`(ant lions f32[S, D], scores f32[S])` of the next iteration: DE trials replace their parents if not
    worse; then the best S of ant lions ∪ ants."""
    s = lions.shape[0]
    keep = f_trial >= scores[parents]
    lions = lions.at[parents].set(jnp.where(keep[:, None], trial, lions[parents]))
    scores = scores.at[parents].set(jnp.where(keep, f_trial, scores[parents]))
    pool, pool_f = jnp.concatenate([lions, ants]), jnp.concatenate([scores, f_ant])
    best = jax.lax.top_k(pool_f, s)[1]  # ties: ant lions (lower indices) first
    return pool[best], pool_f[best]


def make_malo(
    env: GPUCloudEnv,
    env_params,
    iterations: int = 100,
    population: int = 50,
    horizon: int = 4,
    n_elite: int = 5,
    de_f: float = 0.5,
    de_cr: float = 0.9,
    init_policy: str = DEFAULT_POLICY,
    rollout_policy: str = DEFAULT_POLICY,
) -> Planner:
    """Hybrid ant-lion optimiser with elite differential evolution (paper: I = 100, S = 50), in the
    rank-encoded action space with bounds [0, 1].

    Ant lions: S actions, the heuristic's and S − 1 uniform in [0, 1]. Each iteration t:
      * ants (S): each ant walks around an ant lion picked by roulette wheel (weights: score − min + ε)
        and around the elite (the best ant lion), and takes the mean of the two walks (ALO's rule). The
        walk's position is drawn directly as a uniform point of ALO's box around the ant lion, whose
        half-width is 1/I(t) (`alo_shrink`: the box shrinks as the run goes), clipped to [0, 1];
      * elite DE (`n_elite` trials, DE/best/1/bin): for each of the `n_elite` best ant lions,
        `v = elite + F·(x_r1 − x_r2)` (r1, r2 random ant lions), binomial crossover with rate CR (one
        coordinate always from v), clipped; the trial replaces its parent if not worse;
      * the S ants and `n_elite` trials are scored in one `vmap` (S + n_elite lookaheads); the new ant
        lions are the best S of ant lions ∪ ants (an ant lion "catches" a fitter ant).
    The elite never gets worse and starts at least as good as the heuristic, so the result never scores
    below the start. Cost: `(1 + iterations)·(S + n_elite)` lookaheads of `1 + horizon` env steps."""
    objective = make_objective(env, env_params, horizon, rollout_policy)
    score = _flat_scorer(env, objective)
    n, m = env.config.n_slots, env.config.n_machines
    s, e, d = population, min(n_elite, population), n + n * m
    # One uniform draw per iteration, carved into: roulette (S), walks around the picked ant lions and
    # around the elite (S·D each), DE partners (2·E), crossover masks (E·D) and forced coordinates (E).
    shapes = ((s,), (s, d), (s, d), (2, e), (e, d), (e,))
    n_draws = sum(int(np.prod(sh)) for sh in shapes)

    moves = partial(_malo_moves, shapes=shapes, n_elite=e, iterations=iterations, de_f=de_f, de_cr=de_cr)

    def search(obs: GPUCloudObs, state: GPUCloudState, key: jax.Array):
        k_eval, k_init, k_pop, k_search = jax.random.split(key, 4)
        x0 = flatten_action(start_action(obs, k_init, init_policy))  # [D]
        lions0 = jnp.concatenate([x0[None], jax.random.uniform(k_pop, (s - 1, d))])

        # Iteration 0 scores the initial ant lions (padded with e copies of the start); 1..I search.
        # One copy of the vmapped objective in the program (compile time), S + e lookaheads each.
        def step(t, carry):
            lions, scores, f0 = carry
            u = jax.random.uniform(jax.random.fold_in(k_search, t), (n_draws,))
            ants, trial, parents = moves(t, lions, scores, u)
            first = jnp.concatenate([lions, jnp.broadcast_to(x0, (e, d))])
            f = score(state, jnp.where(t == 0, first, jnp.concatenate([ants, trial])), k_eval)
            new_lions, new_scores = _malo_select(lions, scores, ants, f[:s], trial, f[s:], parents)
            lions = jnp.where(t == 0, lions, new_lions)
            return lions, jnp.where(t == 0, f[:s], new_scores), jnp.where(t == 0, f[0], f0)

        init = (lions0, jnp.zeros((s,), jnp.float32), jnp.float32(0.0))
        lions, scores, f0 = jax.lax.fori_loop(0, iterations + 1, step, init)
        best = jnp.argmax(scores)
        info = SearchInfo(init_score=f0, best_score=scores[best], eval_key=k_eval)
        return unflatten_action(lions[best], n, m), info

    return Planner("malo", search, objective)


# ---- episodes and timing ------------------------------------------------------------------------------
def as_planner(policy) -> Callable:
    """A heuristic `policy(params, obs, key)` with the planner signature (for `time_per_decision`)."""
    return lambda params, obs, state, key: policy(params, obs, key)


def run_planner_episode(env: GPUCloudEnv, env_params, planner, key: jax.Array) -> dict[str, jax.Array]:
    """One episode to its end with `planner(None, obs, state, key)` deciding every round (through
    `core.episode.run_episode`); returns `env.metrics` plus `return`. The planner also runs on a
    call that continues a split forward (`obs.decision` False; the env ignores its action): skipping it
    with `lax.cond` saves nothing under `vmap` (both branches run) and slows tracing."""
    act = lambda obs, state, carry, k: (planner(None, obs, state, k), carry)  # noqa: E731
    return run_episode(env, env_params, act, key)


def decision_states(
    env: GPUCloudEnv, env_params, key: jax.Array, decisions: int, batch: int = 1, skip: int = 0
):
    """`(obs, state)` with leaves `[decisions, batch, ...]`: decision points `skip .. skip + decisions − 1`
    of `batch` FIFO-LoadBalance episodes (realistic states to time planners on: past the first decisions
    the cluster is busy and jobs wait). States past an episode's end repeat its final state."""
    policy = make_heuristic(DEFAULT_POLICY)

    def episode(k):
        k_reset, k_loop = jax.random.split(k)
        obs, state = env.reset(k_reset, env_params)

        def body(carry, kk):
            obs, state, done = carry
            k_act, k_step = jax.random.split(kk)
            nxt = env.step_env(k_step, state, policy(None, obs, k_act), env_params)
            obs2, state2 = jax.tree.map(lambda new, old: jnp.where(done, old, new), nxt[:2], (obs, state))
            return (obs2, state2, done | nxt[3] | nxt[4]), (obs, state)

        init = (obs, state, jnp.bool_(False))
        return jax.lax.scan(body, init, jax.random.split(k_loop, skip + decisions))[1]

    # lax.map, not vmap: a setup step, and the unbatched env compiles faster. [batch, skip + decisions, ...]
    out = jax.jit(lambda ks: jax.lax.map(episode, ks))(jax.random.split(key, batch))
    return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1)[skip:], out)


def time_per_decision(
    env: GPUCloudEnv,
    env_params,
    planner,
    key: jax.Array,
    decisions: int = 1,
    batch: int = 1,
    repeats: int = 5,
    skip: int = 50,
) -> float:
    """Seconds one decision round takes `planner(None, obs, state, key)` for a batch of `batch` envs (the
    extra time a round costs over the env step itself). The planner decides `decisions` consecutive
    recorded decision points (`decision_states`, after `skip` decisions) in one jitted `lax.map` over a
    `vmap` over the batch; returns the median over `repeats` runs (after a compile-and-warm-up run)
    divided by `decisions`."""
    obs, state = decision_states(env, env_params, key, decisions, batch, skip)
    keys = jax.random.split(jax.random.fold_in(key, 1), (decisions, batch))

    def one_round(x):
        o, s, k = x
        return jax.vmap(lambda oo, ss, kk: planner(None, oo, ss, kk))(o, s, k)

    fn = jax.jit(lambda o, s, k: jax.lax.map(one_round, (o, s, k)))
    jax.block_until_ready(fn(obs, state, keys))  # compile and warm up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(obs, state, keys))
        times.append(time.perf_counter() - t)
    return statistics.median(times) / decisions
