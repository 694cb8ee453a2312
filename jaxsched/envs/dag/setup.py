"""The idle-slot DAG cluster's settings and its one builder: `jaxsched.make("dag*")` and DAG configs both
build here.

Two sections, as a DAG config spells them:

    env:       {n_executors, max_slots, max_stages, idle_levels, max_events, moving_delay, warmup_delay,
                reward_scale, task_waves}
    workload:  {source: synthetic | tpch_like | mixed | tpch, train_episodes, test_episodes,
                jobs_per_episode, load, mean_gap_s, n_init, long_len_s, short_len_s, long_fraction,
                long_std_frac, synth_max_stages, max_tasks, alpha, tpch_npz, bank_seed, test_seed}

`build_params(env, env_section, workload, "train" | "test")` gives a bank's params. The two banks come
from the same generator with different seeds (`workload.bank_seed`, `workload.test_seed`, which must
differ), so the test episodes are new arrivals of new jobs: for `synthetic` and `mixed` new DAGs; for
`tpch_like` a new draw of the TPC-H-like template pool as well (the generator's seed draws both); for
`tpch` the same real templates in new sequences. `check_sections(env, workload)` holds the two consistent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxsched.core.checks import EnvSections, at_least, in_unit_interval, positive
from jaxsched.envs.dag.params import DAGConfig

SOURCES = ("synthetic", "tpch_like", "mixed", "tpch")
# mixed_bank draws its synthetic jobs with the generator's fixed shape (synthetic_templates' defaults)
MIXED_SYNTH_SHAPE = {"synth_max_stages": 5, "max_tasks": 10}
BANKS = {"train": ("bank_seed", "train_episodes"), "test": ("test_seed", "test_episodes")}


@dataclass(frozen=True)
class EnvSection:
    """The idle-slot DAG cluster (`envs.dag`, docs/dag.md): `n_executors` k, `max_slots` J jobs visible at
    once, `max_stages` S (>= the widest job of the workload), `idle_levels` g, `max_events` (a cap on the
    event times one step processes; null: none), delays in ms, `reward_scale` in s, `task_waves` (each
    task's duration drawn from decima-sim's measured waves: the `decima` preset; needs `workload.source:
    tpch`)."""

    n_executors: int = 10
    max_slots: int = 16
    max_stages: int = 5
    idle_levels: int = 10
    max_events: int | None = None
    moving_delay: int = 0
    warmup_delay: int = 0
    reward_scale: float = 100.0
    task_waves: bool = False

    def __post_init__(self):
        try:
            self.dag_config()
        except ValueError as e:
            raise ValueError(str(e).replace("dag.", "env.")) from None
        for name in ("moving_delay", "warmup_delay"):
            value = getattr(self, name)
            if not 0 <= value < 10**8:
                raise ValueError(f"env.{name} must be in [0, 1e8) ms, got {value}")
        positive(self, "env", ("reward_scale",))

    def dag_config(self) -> DAGConfig:
        return DAGConfig(
            self.n_executors, self.max_slots, self.max_stages, self.idle_levels, self.max_events,
            self.task_waves,
        )  # fmt: skip


@dataclass(frozen=True)
class WorkloadSection:
    """The episodes (`workloads.dag_gen`): `synthetic` (the paper's long / short jobs, Poisson arrivals at
    `load`), `tpch_like` or `tpch` (Decima's streaming: `n_init` jobs at 0, then Poisson arrivals
    `mean_gap_s` apart, or at `load` when it is set; `tpch` reads the real templates from `tpch_npz`),
    `mixed` (each job synthetic with probability `alpha`, else TPC-H-like, or real with `tpch_npz`;
    Poisson at `load`). `synth_max_stages` and `max_tasks` shape the synthetic DAGs of `synthetic`;
    `mixed` draws its synthetic jobs with the generator's fixed 5 stages × 10 tasks."""

    source: str = "synthetic"
    train_episodes: int = 32
    test_episodes: int = 16
    jobs_per_episode: int = 100
    load: float | None = 0.8
    mean_gap_s: float = 25.0
    n_init: int = 1
    long_len_s: float = 50.0
    short_len_s: float = 10.0
    long_fraction: float = 0.5
    long_std_frac: float = 0.0
    synth_max_stages: int = 5
    max_tasks: int = 10
    alpha: float = 0.5
    tpch_npz: str | None = None
    bank_seed: int = 0
    test_seed: int = 1

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"workload.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        at_least(self, "workload", ("train_episodes", "test_episodes", "jobs_per_episode", "synth_max_stages",
                                    "max_tasks"))  # fmt: skip
        at_least(self, "workload", ("n_init",), low=0)
        positive(self, "workload", ("mean_gap_s", "long_len_s", "short_len_s"))
        in_unit_interval(self, "workload", ("long_fraction", "alpha"))
        if not self.long_std_frac >= 0:
            raise ValueError(f"workload.long_std_frac must be >= 0, got {self.long_std_frac}")
        if self.load is not None and not self.load > 0:
            raise ValueError(f"workload.load must be > 0 or null, got {self.load}")
        if self.load is None and self.source in ("synthetic", "mixed"):
            raise ValueError(f"workload.load is required (> 0) for workload.source {self.source!r}")
        if self.source == "tpch" and not self.tpch_npz:
            raise ValueError("workload.tpch_npz is required when workload.source is 'tpch'")
        if self.tpch_npz and self.source not in ("tpch", "mixed"):
            raise ValueError(
                f"workload.tpch_npz is only read by the sources tpch and mixed, not {self.source!r}"
            )
        if self.source == "mixed":
            for name, fixed in MIXED_SYNTH_SHAPE.items():
                if getattr(self, name) != fixed:
                    raise ValueError(
                        f"workload.{name}: the mixed source draws its synthetic jobs with {fixed} "
                        f"(workloads.dag_gen.mixed_bank), got {getattr(self, name)}"
                    )
        if self.test_seed == self.bank_seed:
            raise ValueError(
                f"workload.test_seed must differ from workload.bank_seed ({self.bank_seed}): the test bank "
                "is held out"
            )


def check_sections(env: EnvSection, workload: WorkloadSection) -> None:
    """The env's shapes hold the workload's DAGs; a `ValueError` naming the fields when they do not."""
    w, e = workload, env
    if w.source == "synthetic" and w.synth_max_stages > e.max_stages:
        raise ValueError(
            f"workload.synth_max_stages ({w.synth_max_stages}) exceeds env.max_stages ({e.max_stages})"
        )
    if w.source == "mixed" and MIXED_SYNTH_SHAPE["synth_max_stages"] > e.max_stages:
        raise ValueError(
            f"env.max_stages ({e.max_stages}) is below the "
            f"{MIXED_SYNTH_SHAPE['synth_max_stages']} stages of the mixed source's synthetic jobs"
        )
    if e.task_waves and w.source != "tpch":
        raise ValueError(
            f"env.task_waves samples decima-sim's measured task durations: it needs workload.source tpch "
            f"(with workload.tpch_npz), got {w.source!r}"
        )
    if w.source in ("tpch_like", "mixed") and e.max_stages < 2:
        raise ValueError(f"env.max_stages ({e.max_stages}) is below every TPC-H profile (>= 2 stages)")


def build_params(env, section: EnvSection, workload: WorkloadSection, bank: str = "test"):
    """The params on `env` (a `DAGEnv` of `section.dag_config()`) of the training (`bank="train"`) or
    held-out (`"test"`) bank; errors of the generator or the bank name the field. Sections changed in
    their workload (`dataclasses.replace`: another load, job count, long-job law) give that bank
    regenerated."""
    w, e = workload, section
    seed_field, episodes_field = BANKS[bank]
    seed = getattr(w, seed_field)
    try:
        b = _bank(e, w, getattr(w, episodes_field), seed)
    except ValueError as err:
        raise ValueError(f"workload ({w.source}, {seed_field} {seed}): {err}") from None
    kw = dict(moving_delay=e.moving_delay, warmup_delay=e.warmup_delay, reward_scale=e.reward_scale)
    if e.task_waves:
        from jaxsched.workloads.tpch import tpch_wave_table

        kw["waves"] = tpch_wave_table(w.tpch_npz, max_stages=e.max_stages)  # load_tpch's order, as the bank
    try:
        return env.make_params(b, **kw)
    except ValueError as err:
        raise ValueError(str(err).replace("dag.", "env.")) from None


def _bank(e: EnvSection, w: WorkloadSection, n_episodes: int, seed: int):
    from jaxsched.workloads import dag_gen

    synth = dict(long_len_s=w.long_len_s, short_len_s=w.short_len_s, long_fraction=w.long_fraction,
                 long_std_frac=w.long_std_frac)  # fmt: skip
    stream = dict(n_init=w.n_init, mean_gap_ms=1000.0 * w.mean_gap_s, max_stages=e.max_stages,
                  n_executors=e.n_executors, load=w.load)  # fmt: skip
    n = w.jobs_per_episode
    if w.source == "synthetic":
        shape = dict(max_stages=w.synth_max_stages, max_tasks=w.max_tasks)
        return dag_gen.synthetic_bank(
            n_episodes, n, seed=seed, n_executors=e.n_executors, load=w.load, **shape, **synth
        )
    if w.source == "tpch_like":
        return dag_gen.tpch_like_bank(n_episodes, n, seed=seed, **stream)
    if w.source == "tpch":
        return dag_gen.tpch_bank(w.tpch_npz, n_episodes, n, seed=seed, **stream)
    return dag_gen.mixed_bank(
        n_episodes, n, seed=seed, alpha=w.alpha, n_executors=e.n_executors, load=w.load,
        tpch_npz=w.tpch_npz, max_stages=e.max_stages, **synth,
    )  # fmt: skip


@dataclass(frozen=True)
class DAGSetup(EnvSections):
    """The env and workload sections of an experiment on this cluster (its config derives from it)."""

    PATH_KEYS = ("workload.tpch_npz",)

    env: EnvSection = field(default_factory=EnvSection)
    workload: WorkloadSection = field(default_factory=WorkloadSection)

    def check(self) -> None:
        check_sections(self.env, self.workload)
