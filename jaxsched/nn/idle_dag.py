"""The idle-slot DAG agent's policy network (Duan & Wu, Fig. 3): Decima's graph network plus the paper's
job features, with three heads.

Inputs per stage (`network_inputs`, from the env's raw observation): its own (Decima's kind: remaining
tasks and work, task duration, executors, flags) and its job's, and, by `features`:
  * "add" (the paper's agent): the job's critical path and average width appended;
  * "none" (the ablation "w/o selected features"): left out;
  * "replace" (Fig. 4's "replacing features"): they take the place of two of Decima's inputs (the job's
    waiting time and remaining work), so the input count is unchanged.
`DAGEncoder` (nn/gnn.py) embeds stages, jobs and the whole cluster. The heads (Decima's structure):
  * stage: a score per stage from [inputs, stage, job, global embeddings]; softmax over runnable stages;
  * limit: a score per (job, p) from [job, global embeddings, p / k]; softmax over p > the job's executors,
    read at the chosen stage's job;
  * idle slot: a score per r from [stage, job, global embeddings, r / g] at the chosen stage; softmax over
    r = 0..g where the env allows r > 0 (`idle_ok`), else r = 0 only. `idle=False` (the ablation "w/o
    idle time") masks r > 0 everywhere. A fixed offset on r = 0 makes the untrained network delay an
    eligible stage with probability 1 − `idle_prior` (0.1) rather than g / (g + 1).
The action is sampled head by head (stage, then limit and r given it); its log-probability is the sum of
the three, the entropy the stage head's plus the other two heads' at the chosen stage.

`IdleDAGNetwork` is what the policy-gradient learner takes by injection: `init(key, obs)`,
`act(params, obs, key) -> (action i32[3], log_prob, entropy)` and `evaluate(params, obs, action) ->
(log_prob, entropy)`, on one observation (the learner `vmap`s).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsched.envs.dag.params import DAGConfig
from jaxsched.envs.dag.types import DAGObs
from jaxsched.nn.gnn import MLP, DAGEncoder

FEATURES = ("add", "none", "replace")
NEG = -1e9  # masked logit (finite: entropies stay NaN-free)
REPLACED_JOB_INPUTS = (1, 2)  # job_x columns the paper's features replace: log wait, log remaining work


def network_inputs(obs: DAGObs, n_executors: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The learned inputs (log1p of seconds or counts), zero in padding:
    stage_x f32[J, S, 7]: log1p remaining tasks, log1p remaining work s, log1p task duration s,
                          runnable, delayed, timer running, executors running it / k
    job_x   f32[J, 4]:    bound executors / k, log1p wait s, log1p remaining work s, idle executors / k
    job_feat f32[J, 2]:   the paper's features: log1p critical path s, log1p average width
    """
    k = n_executors
    valid = obs.stage_valid
    dur_s = obs.duration.astype(jnp.float32) / 1000.0
    rem_work = obs.not_started.astype(jnp.float32) * dur_s  # [J, S] s
    flags = [obs.stage_mask.reshape(valid.shape), obs.delayed, obs.held]
    stage_x = jnp.stack(
        [jnp.log1p(obs.remaining.astype(jnp.float32)), jnp.log1p(rem_work), jnp.log1p(dur_s)]
        + [f.astype(jnp.float32) for f in flags]
        + [obs.on_stage.astype(jnp.float32) / k],
        axis=-1,
    ) * valid[..., None]  # fmt: skip
    job_valid = obs.job_valid[..., None]
    wait = jnp.maximum(obs.t - obs.arrival, 0).astype(jnp.float32) / 1000.0
    idle = jnp.broadcast_to(obs.n_idle.astype(jnp.float32) / k, wait.shape)
    job_x = jnp.stack(
        [obs.bound.astype(jnp.float32) / k, jnp.log1p(wait), jnp.log1p(rem_work.sum(axis=-1)), idle], axis=-1
    ) * job_valid  # fmt: skip
    job_feat = jnp.stack([jnp.log1p(obs.crit), jnp.log1p(obs.width)], axis=-1) * job_valid
    return stage_x, job_x, job_feat


def node_inputs(obs: DAGObs, features: str, n_executors: int) -> jax.Array:
    """`f32[J, S, F]`: each stage's inputs with its job's, by the `features` choice (module docstring)."""
    stage_x, job_x, job_feat = network_inputs(obs, n_executors)
    if features == "replace":
        job_x = job_x.at[..., list(REPLACED_JOB_INPUTS)].set(job_feat)
    per_job = job_x if features != "add" else jnp.concatenate([job_x, job_feat], -1)
    s = stage_x.shape[-2]
    return jnp.concatenate([stage_x, jnp.repeat(per_job[..., None, :], s, axis=-2)], -1)


class IdleDAGPolicy(nn.Module):
    """`obs -> (stage logits f32[J·S], limit-head inputs f32[J, 2H], idle-head inputs f32[J·S, 3H])`, with
    `limit_scores(f32[k, 2H + 1]) -> f32[k]` and `idle_scores(f32[g + 1, 3H + 1]) -> f32[g + 1]` applied at
    the chosen stage only (its job's k limits, its g + 1 slots: scoring every job's limits for every
    training observation was a third of an update); see the module docstring."""

    config: DAGConfig
    hidden: int = 16
    levels: int = 4
    features: str = "add"

    def setup(self):
        h = self.hidden
        self.encoder = DAGEncoder(h, self.levels)
        self.stage_head = MLP((2 * h, h, 1))
        self.limit_head = MLP((2 * h, h, 1))
        self.idle_head = MLP((2 * h, h, 1))

    def __call__(self, obs: DAGObs):
        cfg = self.config
        j, s, k = cfg.max_slots, cfg.max_stages, cfg.n_executors
        x = node_inputs(obs, self.features, k)
        emb, job, glob = self.encoder(x, obs.parents, obs.height, obs.stage_valid, obs.job_valid)
        job_s = jnp.repeat(job[:, None, :], s, axis=1)
        glob_s = jnp.broadcast_to(glob, (j, s, glob.shape[-1]))
        stage_logits = self.stage_head(jnp.concatenate([x, emb, job_s, glob_s], -1))[..., 0].reshape(-1)
        limit_in = jnp.concatenate([job, jnp.broadcast_to(glob, (j, glob.shape[-1]))], -1)  # [J, 2H]
        idle_in = jnp.concatenate([emb, job_s, glob_s], -1).reshape(j * s, -1)
        if self.is_initializing():  # create the two conditional heads' parameters
            self.limit_scores(limit_scores_input(limit_in[0], k))
            self.idle_scores(idle_scores_input(idle_in[0], cfg.idle_levels))
        return stage_logits, limit_in, idle_in

    def limit_scores(self, feats):
        return self.limit_head(feats)[..., 0]

    def idle_scores(self, feats):
        return self.idle_head(feats)[..., 0]


def limit_scores_input(job_in, n_executors: int):
    """`f32[k, H' + 1]`: one job's limit-head inputs beside p / k for p = 1..k."""
    ps = (jnp.arange(1, n_executors + 1, dtype=jnp.float32) / n_executors)[:, None]
    return jnp.concatenate([jnp.repeat(job_in[None, :], n_executors, 0), ps], -1)


def idle_scores_input(stage_in, idle_levels: int):
    """`f32[g + 1, H' + 1]`: one stage's idle-head inputs beside r / g for r = 0..g."""
    rs = (jnp.arange(idle_levels + 1, dtype=jnp.float32) / idle_levels)[:, None]
    return jnp.concatenate([jnp.repeat(stage_in[None, :], rs.shape[0], 0), rs], -1)


def _masked(logits, mask):
    return jnp.where(mask, logits, NEG)


def _entropy(logits):
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp)


class IdleDAGNetwork:
    """The injected policy (module docstring) for a `DAGEnv` of `config`."""

    def __init__(self, config: DAGConfig, hidden: int = 16, levels: int | None = None, features: str = "add",
                 idle: bool = True, idle_prior: float = 0.9):  # fmt: skip
        if features not in FEATURES:
            raise ValueError(f"features must be one of {', '.join(FEATURES)}, got {features!r}")
        if not 0.0 < idle_prior < 1.0:
            raise ValueError(f"idle_prior must be in (0, 1), got {idle_prior}")
        self.config, self.idle = config, idle
        levels = config.max_stages - 1 if levels is None else levels
        self.module = IdleDAGPolicy(config, hidden, max(levels, 1), features)
        # A fixed offset on r = 0: an untrained network delays a stage with probability 1 − idle_prior
        # (uniform over r would delay 10 of 11 eligible stages, a schedule no short run unlearns); the
        # learned scores move it from there.
        g = config.idle_levels
        self.idle_offset = jnp.zeros(g + 1).at[0].set(jnp.log(idle_prior * g / (1.0 - idle_prior)))

    def init(self, key, obs: DAGObs):
        return self.module.init(key, obs)

    def _conditionals(self, params, obs: DAGObs, limit_in, idle_in, a_stage):
        """Masked logits of the limit and idle heads at the stage `a_stage`."""
        cfg = self.config
        j = a_stage // cfg.max_stages
        limit_ok = jnp.arange(1, cfg.n_executors + 1) >= obs.limit_min[j]
        limit_logits = self.module.apply(
            params, limit_scores_input(limit_in[j], cfg.n_executors), method=IdleDAGPolicy.limit_scores
        )
        limit = _masked(limit_logits, limit_ok)
        feats = idle_scores_input(idle_in[a_stage], cfg.idle_levels)
        idle_logits = self.module.apply(params, feats, method=IdleDAGPolicy.idle_scores) + self.idle_offset
        r_ok = (jnp.arange(cfg.idle_levels + 1) == 0) | (obs.idle_ok[a_stage] & self.idle)
        return limit, _masked(idle_logits, r_ok)

    def act(self, params, obs: DAGObs, key):
        """Sample `(a_stage, a_limit, r)`; with its log-probability and the heads' entropy."""
        k_stage, k_limit, k_idle = jax.random.split(key, 3)
        stage_logits, limit_in, idle_in = self.module.apply(params, obs)
        stage = _masked(stage_logits, obs.stage_mask)
        a_stage = jax.random.categorical(k_stage, stage)
        limit, idle = self._conditionals(params, obs, limit_in, idle_in, a_stage)
        a_limit = jax.random.categorical(k_limit, limit)
        r = jax.random.categorical(k_idle, idle)
        action = jnp.stack([a_stage, a_limit, r]).astype(jnp.int32)
        return action, *self._score(stage, limit, idle, action)

    def greedy(self, params, obs: DAGObs):
        """The most likely `(a_stage, a_limit, r)`: the arg-max stage, then each head's arg-max given it."""
        stage_logits, limit_in, idle_in = self.module.apply(params, obs)
        a_stage = jnp.argmax(_masked(stage_logits, obs.stage_mask))
        limit, idle = self._conditionals(params, obs, limit_in, idle_in, a_stage)
        return jnp.stack([a_stage, jnp.argmax(limit), jnp.argmax(idle)]).astype(jnp.int32)

    def evaluate(self, params, obs: DAGObs, action):
        """`(log_prob, entropy)` of a taken action."""
        stage_logits, limit_in, idle_in = self.module.apply(params, obs)
        limit, idle = self._conditionals(params, obs, limit_in, idle_in, action[0])
        return self._score(_masked(stage_logits, obs.stage_mask), limit, idle, action)

    @staticmethod
    def _score(stage, limit, idle, action):
        logp = (
            jax.nn.log_softmax(stage)[action[0]]
            + jax.nn.log_softmax(limit)[action[1]]
            + jax.nn.log_softmax(idle)[action[2]]
        )
        return logp, _entropy(stage) + _entropy(limit) + _entropy(idle)
