"""The report's method records the sample draw in force, and its methods paragraph states
the draw's seed, strata and counts (or that every item was dealt)."""

from __future__ import annotations

from agreement import services
from annotation import services as annotation_services
from annotation.models import Item

PARAMS = {"n_resamples": 40, "seed": 11}


def test_without_a_draw_the_paragraph_says_every_item_was_dealt(built):
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    assert snap.method["sample"] is None
    assert "dealt every item of the study (no sample was drawn)" in services.methods_text(snap)


def test_the_draw_in_force_is_recorded_and_stated(built):
    n = Item.objects.filter(study=built.study).count()
    annotation_services.draw_sample(
        study=built.study, actor=None, keys=["model"], seed=31337, total=n, paired=False
    )
    snap = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    sample = snap.method["sample"]
    assert sample["seed"] == 31337 and sample["n_items_drawn"] == n
    assert sample["strata_keys"] == ["model"] and sample["rule"] == "proportional"
    text = services.methods_text(snap)
    assert "seed 31337" in text and "stratified by model" in text
    assert f"({n:,} of {n:,} items; draw" in text
    for stratum in sample["strata"]:
        assert f"{stratum['label']} {stratum['drawn']}/{stratum['population']}" in text
