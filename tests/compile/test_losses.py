"""`hx.compile.losses.standard_error`: the standard error of a validation score from the score and its
count of examples, on exact cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hx.compile.losses import standard_error


def test_an_error_rate_has_the_binomial_standard_error():
  # 2% of 100: sqrt(0.02 * 0.98 / 100) = 0.014, in points.
  assert standard_error("error", 2.0, 100) == pytest.approx(1.4, abs=1e-12)
  assert standard_error("error", 50.0, 400) == pytest.approx(2.5, abs=1e-12)
  # A perfect score counts as one example wrong in n: known to about one example, not exactly.
  assert standard_error("error", 0.0, 100) == pytest.approx(100 * math.sqrt(0.01 * 0.99 / 100), abs=1e-12)
  assert standard_error("error", 0.0, 100) == standard_error("error", 1.0, 100)
  assert standard_error("error", 100.0, 100) == 0.0


def test_an_error_rates_standard_error_is_the_spread_of_rates_drawn_at_that_rate():
  rng = np.random.default_rng(0)
  rates = 100 * (rng.random((20000, 200)) < 0.1).mean(axis=1)
  assert np.std(rates) == pytest.approx(standard_error("error", 10.0, 200), rel=0.02)


def test_an_rmse_has_the_standard_error_of_a_standard_deviation_under_normal_residuals():
  assert standard_error("rmse", 2.0, 50) == pytest.approx(0.2, abs=1e-12)
  rng = np.random.default_rng(1)
  rmses = np.sqrt(np.mean(np.square(rng.normal(0.0, 3.0, (20000, 100))), axis=1))
  assert np.std(rmses) == pytest.approx(standard_error("rmse", 3.0, 100), rel=0.03)


def test_no_examples_or_a_score_that_is_not_finite_has_none_and_an_unknown_metric_is_refused():
  assert math.isnan(standard_error("error", 5.0, 0))
  assert math.isnan(standard_error("rmse", math.inf, 100))
  assert math.isnan(standard_error("error", math.nan, 100))
  with pytest.raises(ValueError, match="unknown metric 'mae'; the metrics are error, rmse"):
    standard_error("mae", 1.0, 10)
