"""`jaxsched calibrate`: the paper-numbers tables, the comparison and the fit (by hand), the config section,
and every system's calibration episodes disjoint from its test episodes."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.experiments.calibration import (
    PAPER_COLUMNS,
    Calibration,
    PaperNumber,
    compare,
    fit,
    fit_loss,
    read_paper_numbers,
)
from jaxsched.experiments.config import CalibrationSection

HEADER = ",".join(PAPER_COLUMNS)


def number(row, metric, value, kind="heuristic", setting="s", reference=""):
    return PaperNumber("Table 1", setting, row, kind, metric, value, "min", reference, "")


def results(**rows):
    """`{row: {"jct": [S=2, E=3]}}` with every value equal to the given mean."""
    return {r: {"jct": np.full((2, 3), v, np.float64)} for r, v in rows.items()}


def test_read_paper_numbers_and_its_errors(tmp_path):
    good = tmp_path / "p.csv"
    good.write_text(HEADER + '\nTable 1,small,fifo,heuristic,jct,720.2,min,,"a note, with a comma"\n')
    (n,) = read_paper_numbers(good)
    assert n.row == "fifo" and n.value == 720.2 and n.note == "a note, with a comma"
    for line, match in [
        ("Table 1,small,fifo,guess,jct,1,min,,", "kind must be one of"),
        ("Table 1,small,fifo,heuristic,jct,abc,min,,", "value must be a number"),
        ("Table 1,small,fifo,heuristic,jct,nan,min,,", "finite"),
        ("Table 1,small,,heuristic,jct,1,min,,", "row is empty"),
        ("Table 1,small,fifo,heuristic,jct,1,min", "7 fields"),
    ]:
        bad = tmp_path / "bad.csv"
        bad.write_text(HEADER + "\n" + line + "\n")
        with pytest.raises(ValueError, match=match) as e:
            read_paper_numbers(bad)
        assert "bad.csv:2" in str(e.value)
    (tmp_path / "h.csv").write_text("source,row\n")
    with pytest.raises(ValueError, match="header"):
        read_paper_numbers(tmp_path / "h.csv")


def test_compare_by_hand():
    numbers = (
        number("fifo", "jct", 100.0),
        number("sjf", "jct", 80.0),  # paper: sjf 20 % below fifo
        number("drf", "jct", 98.0),  # within 5 % of fifo: no ranking check
        number("sjf", "jct_std", 3.0),
        number("agent", "jct", 60.0, kind="learned"),
        number("agent", "jct", 0.3, kind="relation", reference="sjf"),
        number("fifo", "jct", 5.0, setting="other"),
    )
    section = CalibrationSection(setting="s", fit=("fifo.jct",), tolerance=0.1)
    rep = compare(numbers, results(fifo=105.0, sjf=95.0, drf=60.0), section)
    by = {(r["row"], r["metric"], r["kind"]): r for r in rep["rows"]}
    assert len(rep["rows"]) == 6  # the other setting's row is not listed
    fifo, sjf, drf = (
        by["fifo", "jct", "heuristic"],
        by["sjf", "jct", "heuristic"],
        by["drf", "jct", "heuristic"],
    )
    assert fifo["role"] == "calibration" and fifo["ratio"] == pytest.approx(1.05) and fifo["matched"]
    assert sjf["role"] == "validation" and sjf["ratio"] == pytest.approx(95 / 80) and not sjf["matched"]
    assert drf["ratio"] == pytest.approx(60 / 98) and not drf["matched"]
    assert by["sjf", "jct_std", "heuristic"]["role"] == "spread"
    assert (
        by["agent", "jct", "learned"]["role"] == "learned"
        and by["agent", "jct", "relation"]["role"] == "relation"
    )
    # rankings: fifo > sjf (gap 20 %): ours 105 > 95 holds; drf > sjf (gap 18 %): ours 60 < 95 breaks;
    # fifo vs drf (gap 2 %) is not checked
    pairs = {(c["a"], c["b"]): c["holds"] for c in rep["ranking"]}
    assert pairs == {("fifo", "sjf"): True, ("sjf", "drf"): False}
    s = rep["summary"]
    assert (s["compared"], s["matched"], s["validation"], s["validation_matched"]) == (3, 1, 2, 0)
    assert fit_loss(rep) == pytest.approx(abs(np.log(1.05)))
    two = compare(
        numbers,
        results(fifo=105.0, sjf=95.0, drf=60.0),
        CalibrationSection(setting="s", fit=("fifo.jct", "sjf.jct")),
    )
    assert fit_loss(two) == pytest.approx(np.sqrt((np.log(1.05) ** 2 + np.log(95 / 80) ** 2) / 2))
    assert fit_loss(two, rep) == pytest.approx(np.sqrt((2 * np.log(1.05) ** 2 + np.log(95 / 80) ** 2) / 3))
    with pytest.raises(ValueError, match="no published baseline number"):
        compare(numbers, results(fifo=1.0), CalibrationSection(setting="s", fit=("agent.jct",)))
    with pytest.raises(ValueError, match="no published numbers"):
        compare(numbers, results(fifo=1.0), CalibrationSection(setting="nowhere"))


def test_compare_relative_to_a_row():
    numbers = (number("fifo", "u", 3600.0), number("sjf", "u", 3240.0), number("tetris", "u", 3690.0))
    section = CalibrationSection(setting="s", relative_to="fifo", tolerance=0.03)
    rep = compare(
        numbers,
        {k: {"u": np.array([[v, v]])} for k, v in (("fifo", 900.0), ("sjf", 810.0), ("tetris", 1000.0))},
        section,
    )
    by = {r["row"]: r for r in rep["rows"]}
    assert by["fifo"]["role"] == "reference" and by["fifo"]["ratio"] == pytest.approx(1.0)
    assert (
        by["sjf"]["paper"] == pytest.approx(0.9)
        and by["sjf"]["ours"] == pytest.approx(0.9)
        and by["sjf"]["matched"]
    )
    assert (
        by["tetris"]["ratio"] == pytest.approx((1000 / 900) / (3690 / 3600)) and not by["tetris"]["matched"]
    )


class Toy:
    """A system whose baselines' JCT is `knob × (1, 0.8)`: `fit` must find knob = 100 for fifo = 100."""

    def __init__(self):
        self.purposes = []

    def held_out(self, cfg, purpose):
        self.purposes.append(purpose)
        return cfg

    def baselines(self, cfg):
        k = cfg.env.load_scale * 100.0
        return results(fifo=k, sjf=0.8 * k)


def test_fit_picks_the_candidate_matching_the_calibration_row():
    from jaxsched.systems import load_run_config

    _, cfg = load_run_config("configs/das/quick.yaml")
    cfg = cfg.replace(calibration=CalibrationSection(
        setting="s", fit=("fifo.jct",), knobs=("env.load_scale=[0.5, 0.9, 1.0, 1.5]",)))  # fmt: skip
    toy = Toy()
    cal = Calibration(numbers=(number("fifo", "jct", 100.0), number("sjf", "jct", 70.0)),
                      held_out=toy.held_out, baselines=toy.baselines, fingerprint=lambda c: None)  # fmt: skip
    out = fit(cal, cfg, progress=False)
    assert out["best"] == {"env.load_scale": 1.0} and out["config"].env.load_scale == 1.0
    assert toy.purposes == ["calibration"] * 4 + ["test"]  # the grid never sees the test episodes
    losses = {c["settings"]["env.load_scale"]: c["loss"] for c in out["candidates"]}
    assert losses[1.0] == 0.0 and losses[0.5] == pytest.approx(abs(np.log(0.5)))
    sjf = next(r for r in out["test"]["rows"] if r["row"] == "sjf")
    assert sjf["role"] == "validation" and sjf["ratio"] == pytest.approx(80 / 70)


def test_calibration_section_errors():
    from jaxsched.experiments.config import config_from_dict
    from jaxsched.systems.das.config import DASConfig

    for cal, match in [
        ({"knobs": ["env.load_scale"]}, "must look like"),
        ({"knobs": ["env.load_scale=0.5"]}, "non-empty YAML list"),
        ({"knobs": ["env.load_scale=[1]", "env.load_scale=[2]"]}, "twice"),
        ({"knobs": ["env.nothing=[1]"]}, "not a setting"),
        ({"fit": ["fifo"]}, "ROW.METRIC"),
        ({"tolerance": 0}, "tolerance"),
    ]:
        with pytest.raises(ValueError, match=match):
            config_from_dict(DASConfig, {"calibration": cal})


def _systems_with_calibration():
    from jaxsched.systems import systems

    return {k: s for k, s in systems().items() if s.calibration is not None}


def test_every_paper_numbers_table_loads_and_names_known_rows():
    for kind, system in _systems_with_calibration().items():
        numbers = system.calibration.numbers
        assert numbers, kind
        baseline_rows = {n.row for n in numbers if n.kind in ("heuristic", "derived")}
        known = {*system.baselines, *system.calibration.aggregates}
        assert baseline_rows <= known, (kind, baseline_rows - known)


# Small configs per system whose test and calibration episodes are compared job by job.
DISJOINT_SETS = {
    "das": ("configs/das/quick.yaml", ["workload.n_jobs=4000", "env.episode_jobs=200"]),
    "sced2": ("configs/sced2/quick.yaml", []),
    "dag": ("configs/dag/quick.yaml", []),
    "osdec": ("configs/osdec/quick.yaml", []),
}


@pytest.mark.parametrize("kind", sorted(DISJOINT_SETS))
def test_calibration_episodes_are_disjoint_from_the_test_episodes(kind):
    from jaxsched.systems import load_run_config

    system, cfg = load_run_config(DISJOINT_SETS[kind][0], DISJOINT_SETS[kind][1])
    cal = system.calibration
    test = cal.fingerprint(cal.held_out(cfg, "test"))
    calib = cal.fingerprint(cal.held_out(cfg, "calibration"))
    assert test.shape == calib.shape and len(test) >= 2
    flat_t = {ep.tobytes() for ep in test}
    assert not flat_t & {ep.tobytes() for ep in calib}  # no episode shared
    # nor does any calibration episode equal any test episode anywhere else in the bank (a shifted draw)
    assert all((t != c).any() for t in test for c in calib)
    same = cal.fingerprint(cal.held_out(cfg, "test"))
    np.testing.assert_array_equal(same, test)  # the same seed, the same jobs


@pytest.mark.parametrize("kind", sorted(DISJOINT_SETS))
def test_each_systems_baselines_are_seeds_by_episodes(kind):
    """`Calibration.baselines` gives every row `[num_seeds, E]`, finite, and its seeds differ (distinct
    banks or evaluation seeds, never one evaluation repeated)."""
    from jaxsched.systems import load_run_config

    system, cfg = load_run_config(DISJOINT_SETS[kind][0], DISJOINT_SETS[kind][1])
    res = system.calibration.baselines(cfg)
    for row, metrics in res.items():
        for metric, v in metrics.items():
            assert v.ndim == 2 and v.shape[0] == cfg.num_seeds and np.isfinite(v).all(), (
                row,
                metric,
                v.shape,
            )
    first = next(iter(cfg.eval.baselines if hasattr(cfg.eval, "baselines") else cfg.eval.policies))
    some = next(iter(res[first].values()))
    assert not np.array_equal(some[0], some[1])
    if kind == "sced2":  # the best baseline by effectiveness, and the workload's own mean ideal time
        best = max(cfg.eval.baselines, key=lambda b: res[b]["avg_effectiveness"].mean())
        assert res["best_baseline"] is res[best]
        ideal = res["workload"]["avg_ideal"]  # [S, E]: the first bank's is its episodes' mean ideal time
        np.testing.assert_allclose(ideal[0], system.calibration.fingerprint(cfg)[:, :, 2].mean(axis=1))


def test_das_param_knob_candidates_in_one_program_equal_one_by_one():
    """vmap over the candidates of an env-param knob ⇒ the same results as evaluating each alone."""
    from jaxsched.experiments.config import with_settings
    from jaxsched.systems import load_run_config

    system, cfg = load_run_config(DISJOINT_SETS["das"][0], DISJOINT_SETS["das"][1])
    cal = system.calibration
    values = [1.0, 2.0]
    batched = cal.baselines_batch(cfg, {"env.load_scale": values, "cluster.kappa_spread": [0.1, 0.0]})
    for got, load, spread in zip(batched, values, [0.1, 0.0], strict=True):
        one = cal.baselines(with_settings(cfg, {"env.load_scale": load, "cluster.kappa_spread": spread}))
        assert set(got) == set(one)
        for row in one:
            for metric in one[row]:
                np.testing.assert_allclose(
                    got[row][metric], one[row][metric], rtol=1e-5, err_msg=f"{row} {metric}"
                )
    assert not np.allclose(
        batched[0]["fifo_firstfit"]["avg_jct_min"], batched[1]["fifo_firstfit"]["avg_jct_min"]
    )


def test_fit_batches_the_candidates_that_differ_only_in_param_knobs():
    from jaxsched.systems import load_run_config

    _, cfg = load_run_config("configs/das/quick.yaml")
    knobs = ("env.load_scale=[0.5, 1.0]", "env.n_slots=[8, 16]")
    cfg = cfg.replace(calibration=CalibrationSection(setting="s", fit=("fifo.jct",), knobs=knobs))
    calls = []

    def batch(c, varying):
        calls.append((c.env.n_slots, tuple(varying["env.load_scale"])))
        return [results(fifo=100.0 * v * c.env.n_slots / 16) for v in varying["env.load_scale"]]

    toy = Toy()
    cal = Calibration(numbers=(number("fifo", "jct", 100.0),), held_out=toy.held_out, baselines=toy.baselines,
                      fingerprint=lambda c: None, param_knobs={"env.load_scale": "load_scale"},
                      baselines_batch=batch)  # fmt: skip
    out = fit(cal, cfg, progress=False)
    assert calls == [(8, (0.5, 1.0)), (16, (0.5, 1.0))]  # one call per static setting, in grid order
    assert out["best"] == {"env.load_scale": 1.0, "env.n_slots": 16}
    assert [c["loss"] == 0.0 for c in out["candidates"]] == [False, False, False, True]


def test_a_rows_standard_error_counts_episodes_not_seeds():
    """The ratio's standard error is over the distinct episodes (seeds averaged first): 2 seeds × 3
    episodes of 1, 2, 3 → s.e. 1/√3 of the mean 2, over the paper's 2."""
    numbers = (number("fifo", "jct", 2.0), number("sjf", "jct", 1.0))
    res = {"fifo": {"jct": np.array([[1.0, 2.0, 3.0]] * 2)}, "sjf": {"jct": np.array([[1.4, 1.5, 1.6]] * 2)}}
    rep = compare(numbers, res, CalibrationSection(setting="s", tolerance=0.1))
    fifo, sjf = rep["rows"]
    assert fifo["ratio"] == pytest.approx(1.0) and fifo["ratio_se"] == pytest.approx(1 / np.sqrt(3) / 2)
    # sjf ×1.5 ± 0.029: unmatched, and far outside the band by more than sampling explains
    assert sjf["ratio_se"] == pytest.approx(0.1 / np.sqrt(3)) and not sjf["matched"]
    assert rep["summary"]["within_noise"] == 0
    wide = {"fifo": res["fifo"], "sjf": {"jct": np.array([[0.8, 1.2, 1.6]] * 2)}}  # ×1.2 ± 0.23
    assert (
        compare(numbers, wide, CalibrationSection(setting="s", tolerance=0.1))["summary"]["within_noise"] == 1
    )
