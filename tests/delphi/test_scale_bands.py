"""delphi.stats.scale: the RAND/UCLA bands of the 1-9 scale and their one palette."""

import pytest

from delphi import stats


@pytest.mark.parametrize(
    ("point", "band"),
    [(1, "low"), (3, "low"), (4, "mid"), (6, "mid"), (7, "high"), (9, "high")],
)
def test_band_of(point, band):
    assert stats.band_of(point) == band


@pytest.mark.parametrize("point", [0, 10, 3.5])
def test_band_of_refuses_points_off_the_scale(point):
    with pytest.raises(ValueError, match="not a point of the 1-9 scale"):
        stats.band_of(point)


def test_every_band_has_a_colour_and_the_bands_cover_the_scale():
    assert set(stats.BAND_COLOURS) == set(stats.BANDS)
    assert sorted(p for points in stats.BANDS.values() for p in points) == list(stats.SCALE_POINTS)


def test_item_statistics_count_by_band():
    statistics = stats.item_statistics([1, 3, 4, 7, 9], n_invited=5)
    assert (statistics.pct_low, statistics.pct_mid, statistics.pct_high) == (40.0, 20.0, 40.0)
