"""Figures speak in words with units: every learning-curve metric a system plots has a label (the shared
`plots.LABELS` or the system's own where its metric means something else under the same key), titles keep
acronyms, and an unknown key is spelt out rather than shown raw."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from jaxsched.experiments.plots import LABELS, metric_label, metric_title, plot_grouped_bars

SYSTEMS = ("dbf", "das", "sced2", "dag", "osdec")


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_curve_metric_has_a_label_in_words(system):
    train = importlib.import_module(f"jaxsched.systems.{system}.train")
    own = getattr(getattr(train, "LEARNER", None), "labels", {}) or {}
    for key in (*train.CURVE_METRICS, "aux_loss"):
        assert key in LABELS or key in own, f"{system}: no label for the curve of {key!r}"
        assert "_" not in metric_label(key, own)


def test_osdec_utilisation_is_labelled_in_its_own_unit():
    from jaxsched.systems.osdec.train import LEARNER

    assert "fraction" in LABELS["utilization"]
    assert "core·steps" in metric_label("utilization", LEARNER.labels)


def test_titles_keep_acronyms_and_unknown_keys_are_spelt_out():
    assert metric_title("avg_jct_min") == "Average JCT"
    assert metric_title("td_loss") == "TD loss"
    assert metric_label("avg_queue_wait_h") == "average queue wait (h)"
    assert metric_title("total_reward") == "Total reward"


def test_many_bars_get_distinct_colours(tmp_path, monkeypatch):
    """SCED²'s Fig. 7 has 14 series a group: no two share a colour (matplotlib's cycle repeats after 10)."""
    import matplotlib.axes

    colours = []
    real_bar = matplotlib.axes.Axes.bar

    def bar(self, *args, **kwargs):
        colours.append(kwargs.get("color"))
        return real_bar(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "bar", bar)
    groups = {g: {f"policy {i}": (float(i), 0.1) for i in range(14)} for g in ("0.5", "0.6")}
    plot_grouped_bars(groups, tmp_path / "bars.png", "average JCT (s)")
    assert len(colours) == 14 and None not in colours
    assert len({tuple(np.round(c, 4)) for c in colours}) == 14
