"""cugym.stats: the run statistics of summary.json (agents/run/run_stats.h) from Python."""

import numpy as np
import pytest
from cugym import stats


def test_iqm_is_the_mean_of_the_middle_half():
    assert stats.iqm([8, 1, 7, 2, 6, 3, 5, 4]) == 4.5  # mean of 3, 4, 5, 6
    assert stats.iqm([1, 2, 3, 4, 100]) == 3.0  # cuts floor(5 / 4) = 1 each end
    assert stats.iqm([7, 9, 8]) == 8.0  # fewer than 4 runs: nothing cut
    np.testing.assert_allclose(stats.iqm(np.arange(100.0)), 49.5)
    np.testing.assert_allclose(stats.iqm([[1, 10], [2, 20], [3, 30], [4, 40]], axis=0), [2.5, 25])
    np.testing.assert_allclose(stats.mean([[1, 10], [2, 20]], axis=1), [5.5, 11])


def test_bootstrap_interval_of_a_constant_is_the_constant():
    assert stats.bootstrap_ci([5.0] * 10, stats.iqm) == (5.0, 5.0)


def test_bootstrap_interval_of_the_mean_of_a_coin():
    # 100 zeros and 100 ones: the mean's standard error is 0.5 / sqrt(200) = 0.0354, so the 95%
    # interval is close to 0.5 +- 1.96 * 0.0354 = [0.431, 0.569].
    x = [0.0] * 100 + [1.0] * 100
    low, high = stats.bootstrap_ci(x, stats.mean)
    assert low == pytest.approx(0.431, abs=0.012) and high == pytest.approx(0.569, abs=0.012)
    e = stats.estimate(x)
    assert e["runs"] == 200 and e["mean"] == 0.5
    assert e["iqm_ci"][0] <= e["iqm"] <= e["iqm_ci"][1]


def test_bootstrap_bounds_stay_within_the_sample_and_repeat():
    x = [3.0, 9.0, 1.0, 4.0, 7.0]
    first = stats.bootstrap_ci(x, stats.iqm)
    assert first == stats.bootstrap_ci(x, stats.iqm)
    assert 1.0 <= first[0] <= stats.iqm(x) <= first[1] <= 9.0


def test_bootstrap_per_point_of_a_curve_draws_the_same_runs():
    curves = np.array([[0.0, 10.0], [0.0, 20.0], [0.0, 30.0]])
    low, high = stats.bootstrap_ci(curves, stats.mean)
    assert (low[0], high[0]) == (0.0, 0.0)
    assert 10.0 <= low[1] < 20.0 < high[1] <= 30.0
    # Each point's interval is that point's alone (the same draws).
    assert (low[1], high[1]) == stats.bootstrap_ci(curves[:, 1], stats.mean)


def test_spread_skips_missing_values():
    s = stats.spread([None, 5, 1, 3, 2, 4])
    assert (s["count"], s["min"], s["q1"], s["median"], s["q3"], s["max"]) == (5, 1, 2, 3, 4, 5)
    assert stats.spread([4.0, 1.0, 2.0, 3.0])["median"] == 2.5  # numpy.percentile's interpolation
    assert stats.spread([None, None]) is None
    assert stats.estimate([]) is None


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="statistic must be"):
        stats.bootstrap_ci([1.0, 2.0], np.median)
    with pytest.raises(ValueError, match="at least one run"):
        stats.bootstrap_ci([], stats.iqm)
