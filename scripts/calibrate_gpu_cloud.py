"""Recompute every calibration constant of `jaxsched.workloads.ddl` from `shared/data/gpu/`.

    python scripts/calibrate_gpu_cloud.py [DATA_DIR] [--json OUT.json] [--gen-jobs 20000] [--seed 0]

DATA_DIR defaults to `../shared/data/gpu` relative to the repository root. Prints each number with its
method; the constants in `jaxsched/workloads/ddl.py` are these values pasted as literals (rounded), and
docs/gpu_cloud_defaults.md tabulates them. Also prints the statistics of a generated workload.
Runs in a few seconds (the slowest part is compiling the generator).
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "gpu"
PRICE = 2.84  # $ per V100-hour (paper §5.1.3)
TARGET_LOAD = 0.9  # offered load on the Small cluster (64 GPUs)
WORK_CLIP = (60.0, 7 * 86400.0)
COMM_WORKERS = 11  # largest worker count measured with ps = workers for every DL2 model


def model_comm(path: Path) -> dict:
    """1 - S(k, k) / (k S(1, 1)), S(ps, workers) = summed per-worker speed (DL2's `speed.py`), k = 11."""
    speeds: dict[str, dict[tuple[int, int], float]] = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                model, mode, _batch, ps, workers, sp, _ps_cpu, _w_cpu = ast.literal_eval(line.strip())
                if mode == "dist_sync" and sum(sp) > 0:  # a 0 speed is a failed measurement
                    speeds.setdefault(model, {})[(ps, workers)] = float(sum(sp))
    out = {}
    for model, s in speeds.items():
        k = COMM_WORKERS
        eff = s[(k, k)] / (k * s[(1, 1)])
        out[model] = {
            "comm": float(np.clip(1.0 - eff, 0.0, 1.0)),
            "efficiency": eff,
            "S11": s[(1, 1)],
            f"S{k}{k}": s[(k, k)],
            "n_configs": len(s),
        }
    return out


def _job_series(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(worker, batch_time_norm) columns of a `job_*_norm.csv` (header: ,worker,gpu,time,batch_time_norm)."""
    a = np.loadtxt(path, delimiter=",", skiprows=1)
    return a[:, 1].astype(np.int64), a[:, 4]


def mini_batch(dir_: Path) -> dict:
    """Heterogeneity (CV of per-worker means) and fluctuation (within-worker CV over time), per job."""
    jobs = {}
    for p in sorted(dir_.glob("job_*_norm.csv")):
        worker, t = _job_series(p)
        ids = np.unique(worker)
        means = np.array([t[worker == k].mean() for k in ids])
        within = np.array([t[worker == k].std() / t[worker == k].mean() for k in ids])
        jobs[p.stem] = {
            "workers": int(ids.size),
            "rows": int(t.size),
            "cv_of_worker_means": float(means.std() / means.mean()),
            "within_cv_median": float(np.median(within)),
        }
    cv_rows = []
    with open(dir_ / "coefficient_variation.csv") as f:
        for row in list(csv.reader(f))[1:]:  # 100 jobs x up to 2000 time points; blanks = no sample
            vals = np.array([float(x) for x in row[1:] if x != ""])
            cv_rows.append(np.median(vals))
    return {
        "jobs": jobs,
        "PERF_CV": float(np.median([j["cv_of_worker_means"] for j in jobs.values()])),
        "FLUCT_STD": float(np.median([j["within_cv_median"] for j in jobs.values()])),
        "cross_check_cv_across_workers_median_of_100_jobs": float(np.median(cv_rows)),
    }


def machine_spec(path: Path) -> dict:
    """Most common V100-family configuration (gpu_type V100 or V100M32) of pai_machine_spec.csv."""
    configs, v100 = Counter(), Counter()
    with open(path) as f:
        for _machine, gpu_type, cpu, mem, gpu in csv.reader(f):
            configs[(gpu_type, int(cpu), int(mem), int(gpu))] += 1
            if gpu_type.startswith("V100"):
                v100[(int(cpu), int(mem), int(gpu))] += 1
    (cpu, mem, gpu), count = v100.most_common(1)[0]
    return {
        "V100_MACHINE": {"gpu": gpu * 100, "cpu": cpu * 100, "mem": mem * 1024},
        "machines": count,
        "v100_configs": {f"{c} cores/{m} GB/{g} GPUs": n for (c, m, g), n in v100.most_common()},
        "all_configs": {f"{t} {c}/{m}/{g}": n for (t, c, m, g), n in configs.most_common()},
    }


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def clipped_lognormal_mean(mu: float, sigma: float, lo: float, hi: float) -> float:
    """E[clip(X, lo, hi)] for log X ~ N(mu, sigma^2)."""
    a, b = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    middle = math.exp(mu + sigma**2 / 2) * (_phi(b - sigma) - _phi(a - sigma))
    return lo * _phi(a) + hi * (1.0 - _phi(b)) + middle


def runtime_fit(path: Path) -> dict:
    x = np.loadtxt(path, skiprows=1)
    keep = (x >= WORK_CLIP[0]) & (x <= WORK_CLIP[1])
    lx = np.log(x[keep])
    mu, sigma = float(lx.mean()), float(lx.std())
    return {
        "n_tasks": int(x.size),
        "n_in_clip_range": int(keep.sum()),
        "mu": mu,
        "sigma": sigma,
        "philly_median_s": float(np.median(x)),
        "philly_mean_s": float(x.mean()),
        "philly_mean_in_range_s": float(x[keep].mean()),
        "model_median_s": math.exp(mu),
        "model_clipped_mean_s": clipped_lognormal_mean(mu, sigma, *WORK_CLIP),
    }


def load_and_fee(mu: float, sigma: float) -> dict:
    """Expected GPU-seconds per job and the mean inter-arrival for load 0.9 on 64 GPUs (size and work are
    independent in the generator, so E[G W] = E[G] E[W])."""
    from jaxsched.workloads.ddl import SIZE_TABLE

    e_g = sum(c * g * p for c, g, p in SIZE_TABLE)
    e_w = clipped_lognormal_mean(mu, sigma, *WORK_CLIP)
    gpu_s = e_g * e_w
    ia = gpu_s / (TARGET_LOAD * 64)
    return {
        "E_gpus": e_g,
        "E_work_s": e_w,
        "E_gpu_seconds": gpu_s,
        "MEAN_INTERARRIVAL_S": ia,
        "nominal_mean_fee": PRICE * gpu_s / 3600.0,
        "p_1gpu": sum(p for c, g, p in SIZE_TABLE if c * g == 1),
        "p_le4gpu": sum(p for c, g, p in SIZE_TABLE if c * g <= 4),
        "p_gt32gpu": sum(p for c, g, p in SIZE_TABLE if c * g > 32),
    }


def generated_stats(n_jobs: int, seed: int) -> dict:
    """Statistics of `generate_pai_like(PRNGKey(seed), n_jobs)` with the package's defaults."""
    import jax

    from jaxsched.workloads.ddl import V100_MACHINE, PAILikeConfig, fits_empty_cluster, generate_pai_like

    cfg = PAILikeConfig()
    w = generate_pai_like(jax.random.PRNGKey(seed), n_jobs, cfg)
    g = np.asarray(w.total_gpus, np.float64)
    work = np.asarray(w.work, np.float64)
    sub = np.asarray(w.submit, np.float64)
    span = sub[-1] - sub[0]
    gpu_s = float((g * work).sum())
    hours = np.bincount((np.asarray(w.submit) % 86400) // 3600, minlength=24)
    out = {
        "n_jobs": n_jobs,
        "frac_1gpu": float((g == 1).mean()),
        "frac_le4gpu": float((g <= 4).mean()),
        "frac_gt32gpu": float((g > 32).mean()),
        "mean_gpus": float(g.mean()),
        "median_work_s": float(np.median(work)),
        "mean_work_s": float(work.mean()),
        "mean_interarrival_s": float(span / (n_jobs - 1)),
        "nominal_mean_fee": float(PRICE * (g * work).mean() / 3600.0),
        "hourly_share": (hours / hours.sum()).round(4).tolist(),
        "hourly_corr_with_profile": float(np.corrcoef(hours, cfg.hourly_rate)[0, 1]),
    }
    for n_gpus in (64, 128, 256):
        out[f"offered_load_{n_gpus}"] = gpu_s / (n_gpus * span)
    m = V100_MACHINE
    out["fits_small_cluster"] = bool(
        fits_empty_cluster(w, [m["gpu"]] * 8, [m["cpu"]] * 8, [m["mem"]] * 8).all()
    )
    return out


def calibrate(data_dir: Path, gen_jobs: int = 20_000, seed: int = 0) -> dict:
    data_dir = Path(data_dir)
    pai = data_dir / "alibaba_pai_v2020"
    comm = model_comm(data_dir / "dl2_config_speed.txt")
    from jaxsched.workloads.ddl import MODEL_NAMES

    values = [comm[m]["comm"] for m in MODEL_NAMES[:-1]]
    rt = runtime_fit(pai / "philly_runtime.csv")
    res = {
        "MODEL_COMM": [*values, float(np.mean(values))],
        "model_comm_detail": comm,
        "mini_batch": mini_batch(pai / "mini-batch-time"),
        "machine": machine_spec(pai / "pai_machine_spec.csv"),
        "runtime": rt,
        "load": load_and_fee(rt["mu"], rt["sigma"]),
    }
    if gen_jobs > 1:
        res["generated"] = generated_stats(gen_jobs, seed)
    return res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_dir", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument(
        "--gen-jobs", type=int, default=20_000, help="jobs for the generated-workload stats (0: skip)"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    res = calibrate(Path(args.data_dir), args.gen_jobs, args.seed)
    mb, rt, ld = res["mini_batch"], res["runtime"], res["load"]
    print("MODEL_COMM  (1 - S(11,11) / (11 S(1,1)), dl2_config_speed.txt dist_sync; unknown = mean)")
    from jaxsched.workloads.ddl import MODEL_NAMES

    for name, v in zip(MODEL_NAMES, res["MODEL_COMM"], strict=True):
        print(f"  {name:24s} {v:.4f}")
    print(f"PERF_CV     {mb['PERF_CV']:.4f}  (median over job_*_norm.csv of the CV of per-worker mean times)")
    for k, j in mb["jobs"].items():
        print(
            f"  {k}: {j['workers']} workers, CV of means {j['cv_of_worker_means']:.4f}, "
            f"within-worker CV {j['within_cv_median']:.4f}"
        )
    cross = mb["cross_check_cv_across_workers_median_of_100_jobs"]
    print(f"  cross-check: coefficient_variation.csv median per-job CV across workers {cross:.4f}")
    print(f"FLUCT_STD   {mb['FLUCT_STD']:.4f}  (median over jobs of the median within-worker CV over time)")
    print(
        f"V100_MACHINE {res['machine']['V100_MACHINE']}  ({res['machine']['machines']} machines; "
        f"V100 configs {res['machine']['v100_configs']})"
    )
    print(
        f"WORK_LOG_MU {rt['mu']:.4f}  WORK_LOG_SIGMA {rt['sigma']:.4f}  (log run time, Philly tasks in "
        f"[60 s, 7 d]: {rt['n_in_clip_range']} of {rt['n_tasks']})"
    )
    print(
        f"  Philly median {rt['philly_median_s']:.0f} s, mean {rt['philly_mean_s']:.0f} s; model median "
        f"{rt['model_median_s']:.0f} s, clipped mean {rt['model_clipped_mean_s']:.0f} s"
    )
    print(
        f"MEAN_INTERARRIVAL_S {ld['MEAN_INTERARRIVAL_S']:.1f}  (E[G]={ld['E_gpus']:.3f} x E[W]="
        f"{ld['E_work_s']:.0f} s / (0.9 x 64 GPUs)); nominal mean fee ${ld['nominal_mean_fee']:.2f}"
    )
    print(
        f"  size table: P(1 GPU) {ld['p_1gpu']:.2f}, P(<= 4) {ld['p_le4gpu']:.2f}, "
        f"P(> 32) {ld['p_gt32gpu']:.2f}"
    )
    if "generated" in res:
        print("generated workload (defaults):")
        for k, v in res["generated"].items():
            print(f"  {k}: {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
