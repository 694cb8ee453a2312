"""The shared evaluation path's planted bugs (`experiments.evaluate.evaluate` and what the systems declare
for it), for `scripts/planted_bugs.py` (docs/testing.md, "Planted bugs")."""

# ruff: noqa: E501  (the replaced lines are quoted whole)

EVAL = "jaxsched/experiments/evaluate.py"
T_DAG = "tests/test_dag_system.py::test_train_eval_and_an_exact_resume"
T_DAS = "tests/test_das_eval.py::test_eval_cli_writes_every_policy"
T_SCED2 = "tests/test_sced2.py::test_train_eval_and_an_exact_resume"
T_TOY = "tests/test_sixth_system.py"
T_DBF = "tests/test_train_cli.py::test_validation_selection_keeps_each_seeds_best_checkpoint"

BUGS = [
    # the baselines of a seeded evaluation lose their seed axis
    ("E1", EVAL, "out |= {label: {k: v if ev.seeds else v[None] for k, v in m.items()} for label, m in per.items()}", "out |= {label: {k: v[None] for k, v in m.items()} for label, m in per.items()}", T_DAS),
    # `vs_best` picks the worst baseline
    ("E2", EVAL, "lower = ev.metric(ev.best_metric).lower_is_better", "lower = not ev.metric(ev.best_metric).lower_is_better", f"{T_DAG} {T_TOY}"),
    # one learner's evaluation overwrites the run's combined file
    ("E3", EVAL, "if not one:  # one learner's evaluation leaves the run's combined file as it was", "if True:", T_DAG),
    # the held-out episodes shifted by one (the last pinned past the bank's end)
    ("E4", EVAL, "return np.arange(n, dtype=np.int32)", "return np.arange(1, n + 1, dtype=np.int32)", T_SCED2),
    # a learner's own eval.json without the learner
    ("E5", EVAL, "own[name] = {label: learned[label]} | results  # the learner's own eval.json", "own[name] = dict(results)", T_DAG),
    # the validation selection ignored at evaluation (the shared restore; DBF's and DAS's)
    ("E6", "jaxsched/experiments/learner.py", 'if cfg.eval.select == "validation":', "if False:", T_DBF),
]
