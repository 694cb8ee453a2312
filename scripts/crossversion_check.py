"""Behaviour unchanged across a restructuring: a DAS and a DBF run started with an older checkout (its
`jaxsched` on PYTHONPATH), killed after one chunk, then resumed and evaluated with this checkout, against
the same runs done uninterrupted and evaluated by the older code. Prints which comparisons are equal (all
bitwise, as floats in JSON).

    git worktree add /tmp/old 456efb6          # e.g. the commit before the shared evaluator
    cd REPO && PYTHONPATH=/tmp/old python scripts/crossversion_check.py old /tmp/xv
    cd REPO && python scripts/crossversion_check.py new /tmp/xv

Run it as a script (not `-m`), so that the older checkout on PYTHONPATH comes before this one.
"""

import json
import sys
from pathlib import Path

import jaxsched
from jaxsched.systems import get_system, load_run_config

phase, out = sys.argv[1], Path(sys.argv[2])
print("jaxsched from", jaxsched.__file__)
DBF = [
    "ppo.total_updates=4",
    "ppo.updates_per_chunk=2",
    "eval.episodes=4",
    "num_seeds=2",
    "eval.select=validation",
    "eval.validation_episodes=2",
]
DAS = [
    "workload.n_jobs=600",
    "env.episode_jobs=60",
    "env.max_forward_events=2",
    "eval.episodes=2",
    "mappo.imitation_updates=2",
    "mappo.total_updates=4",
    "mappo.updates_per_chunk=2",
    "eval.select=validation",
    "eval.validation_episodes=2",
]


def cfgs(path, extra, name):
    return (
        load_run_config(path, [*extra, f"out_dir={out / 'full'}", f"name={name}"])[1],
        load_run_config(path, [*extra, f"out_dir={out / 'killed'}", f"name={name}"])[1],
    )


dbf_full, dbf_killed = cfgs("configs/dbf/quick.yaml", DBF, "dbf")
das_full, das_killed = cfgs("configs/das/quick.yaml", DAS, "das")
DBF_SYS, DAS_SYS = get_system("dbf"), get_system("das")

if phase == "old":
    DBF_SYS.train(dbf_full, progress=False)
    DBF_SYS.evaluate(dbf_full, dbf_full.run_dir, json_path=str(out / "dbf_full_eval_old.json"))
    DAS_SYS.train(das_full, progress=False)  # writes da/eval.json (the old evaluate_run)
    DAS_SYS.evaluate(das_full, das_full.run_dir, json_path=str(out / "das_full_eval_old.json"))
    from jaxsched.experiments.learner import train_learner
    from jaxsched.systems.das.train import LEARNER as DAS_LEARNER
    from jaxsched.systems.dbf.train import AGENT, LEARNER

    train_learner(LEARNER, dbf_killed, AGENT, progress=False, stop_after_chunks=1)
    train_learner(DAS_LEARNER, das_killed, "da", progress=False, stop_after_chunks=1)
else:
    from jaxsched.experiments.learner import train_learner
    from jaxsched.systems.das.train import LEARNER as DAS_LEARNER
    from jaxsched.systems.dbf.train import AGENT, LEARNER

    train_learner(LEARNER, dbf_killed, AGENT, resume=True, progress=False)
    DBF_SYS.evaluate(dbf_killed, dbf_killed.run_dir, json_path=str(out / "dbf_killed_eval_new.json"))
    DBF_SYS.evaluate(dbf_full, dbf_full.run_dir, json_path=str(out / "dbf_full_eval_new.json"))
    train_learner(DAS_LEARNER, das_killed, "da", resume=True, progress=False)  # da/eval.json: new record
    DAS_SYS.evaluate(das_full, das_full.run_dir, json_path=str(out / "das_full_eval_new.json"))

    def metrics(p):
        lines = p.read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k != "wall_s"} for line in lines]

    def load(p):
        return json.loads(Path(p).read_text())

    def core(stats):  # the numbers both formats hold
        keys = ("mean", "std", "per_seed", "values")
        return {m: {k: e[k] for k in keys if k in e} for m, e in stats.items()}

    old_das = load(out / "das_full_eval_old.json")  # before 456efb6 {"results": heuristics...}, since flat
    old_das = old_das.get("results", old_das)
    new_das = load(out / "das_full_eval_new.json")  # {policy: ...} with "da"
    same = {
        "dbf metrics (killed+resumed = full)": metrics(dbf_full.run_dir / "metrics.jsonl")
        == metrics(dbf_killed.run_dir / "metrics.jsonl"),
        "dbf eval: new evaluator on the old full run = old evaluator": load(out / "dbf_full_eval_new.json")
        == load(out / "dbf_full_eval_old.json"),
        "dbf eval: resumed run, new evaluator = old evaluator on the full run": load(
            out / "dbf_killed_eval_new.json"
        )
        == load(out / "dbf_full_eval_old.json"),
        "das metrics (killed+resumed = full)": metrics(das_full.run_dir / "da" / "metrics.jsonl")
        == metrics(das_killed.run_dir / "da" / "metrics.jsonl"),
        "das variant record: resumed+new = full+old": core(
            load(das_killed.run_dir / "da" / "eval.json")["results"]
        )
        == core(load(das_full.run_dir / "da" / "eval.json")["results"]),
        "das eval: new evaluator's da = the old stored record": core({"x": new_das["da"]["avg_jct_min"]})
        == core({"x": load(das_full.run_dir / "da" / "eval.json")["results"]["avg_jct_min"]}),
        "das heuristics: new evaluator = old evaluator": all(
            core(new_das[p]) == core(old_das[p]) for p in old_das
        ),
    }
    print(json.dumps(same, indent=1))
