"""The env setup modules' planted bugs (`envs/<env>/setup.py`: the one builder of `jaxsched.make` and the
system configs), for `scripts/planted_bugs.py` (docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

T_BANKS = "tests/test_env_setup.py"
T_DROP = "tests/test_das_eval.py::test_a_cluster_too_small_for_its_jobs_is_refused_or_counted tests/test_front_door.py"
T_CHECKS = "tests/test_systems.py tests/test_dag_system.py tests/test_sced2.py tests/test_train_cli.py"

BUGS = [
    # the HPC test bank drawn with the training bank's key: test episodes seen in training
    ("S1", "jaxsched/envs/hpc/setup.py", "purpose_key(w.test_seed, TEST_BANK_TAG), lub, w.test_episodes", "purpose_key(w.bank_seed, TRAIN_BANK_TAG), lub, w.test_episodes", T_BANKS),
    # the same for the GPU-locality cluster
    ("S2", "jaxsched/envs/gpu_locality/setup.py", "purpose_key(w.test_seed, TEST_BANK_TAG), philly, w.test_episodes", "purpose_key(w.bank_seed, TRAIN_BANK_TAG), philly, w.test_episodes", T_BANKS),
    # the deferrable test episodes from the training seed
    ("S3", "jaxsched/envs/deferrable/setup.py", "bank = generate_bank(w.generator(), w.test_episodes, w.test_seed)", "bank = generate_bank(w.generator(), w.test_episodes, w.bank_seed)", T_BANKS),
    # the DAG test bank from the training seed
    ("S4", "jaxsched/envs/dag/setup.py", 'BANKS = {"train": ("bank_seed", "train_episodes"), "test": ("test_seed", "test_episodes")}', 'BANKS = {"train": ("bank_seed", "train_episodes"), "test": ("bank_seed", "test_episodes")}', T_BANKS),
    # the GPU cloud's test split taken from the start of the trace (its training part)
    ("S5", "jaxsched/envs/gpu_cloud/setup.py", "    train, test = train_test_split(bank, workload.train_frac)", "    train, test = train_test_split(bank, workload.train_frac)\n    test = train", T_BANKS),
    # a cluster too small for its jobs pruned silently, whatever the share
    ("S6", "jaxsched/envs/gpu_cloud/setup.py", "    if frac > workload.max_dropped_frac:", "    if False:", T_DROP),
    # the env sections' cross-checks never run
    ("S7", "jaxsched/core/checks.py", "        self.check()", "        pass", T_CHECKS),
]
