"""benchmarks/studies/prior_replay.py's arithmetic on small exact cases: shapes, normalised ranks, the
prior with its fallbacks, and the keep-K schedule's choice and modelled cost."""

from __future__ import annotations

import math

import pytest

from benchmarks.studies.prior_replay import library_calls, normalised_ranks, prior, replay_task, shape


def _cand(program, val, order, fresh=None, seconds=1.0, test=None):
  return dict(program=program, shape=shape(program, fresh or {}), libs=library_calls(program), val=val,
              test=val if test is None else test, order=order, seconds=seconds)


def test_a_shape_writes_fresh_functions_as_their_types_and_library_functions_as_lib():
  fresh = {"nn_1": "List<Tensor<real>[50]> -> Tensor<real>[1]",
           "nn_2": "Tensor<real>[1024] -> Tensor<real>[50]"}
  got = shape("compose(nn_1, map_l(compose(nn_2, lib.nn_cs1_12)))", fresh)
  assert got == ("compose(nn[List<Tensor<real>[50]> -> Tensor<real>[1]], map_l(compose(nn[Tensor<real>[1024] "
                 "-> Tensor<real>[50]], lib)))")
  assert library_calls("compose(lib.nn_a_1, map_l(compose(nn_2, lib.nn_a_12)))") == 2


def test_normalised_ranks_put_the_winner_at_0_and_the_last_at_1_ties_in_search_order():
  cands = [_cand("nn_1", 3.0, 1), _cand("nn_2", 1.0, 2), _cand("nn_3", 3.0, 3)]
  assert normalised_ranks(cands) == [0.5, 0.0, 1.0]


def test_the_prior_averages_a_shapes_earlier_ranks_then_falls_back_on_library_calls_then_one_half():
  earlier = [dict(cands=[_cand("nn_1", 1.0, 1), _cand("lib.f", 2.0, 2),
                         _cand("compose(nn_1, lib.f)", 3.0, 3)]),
             dict(cands=[_cand("nn_1", 2.0, 1), _cand("lib.g", 1.0, 2)])]
  # nn_1: ranks 0 and 1 -> 0.5; lib.f and lib.g share the shape "lib": 0.5 and 0 -> 0.25.
  now = [_cand("nn_1", 0, 1), _cand("lib.h", 0, 2), _cand("compose(lib.h, nn_2)", 0, 3),
         _cand("compose(lib.h, lib.h)", 0, 4)]
  got = prior(earlier, now)
  assert got[0] == pytest.approx(0.5) and got[1] == pytest.approx(0.25)
  # compose(lib, nn[?]) was never seen: the mean of the earlier candidates with one library call (0.5, 1, 0).
  assert got[2] == pytest.approx(0.5)
  assert got[3] == 0.5  # two library calls: none earlier


def test_keeping_the_priors_first_k_trains_only_those_and_chooses_the_best_of_them():
  earlier = [dict(cands=[_cand("lib.f", 1.0, 1), _cand("nn_1", 2.0, 2),
                         _cand("compose(nn_1, nn_2)", 3.0, 3)])]
  now = [_cand("compose(nn_1, nn_2)", 0.5, 1, seconds=6.0, test=0.4),  # the full run's winner, prior last
         _cand("nn_1", 0.9, 2, seconds=2.0, test=0.8),
         _cand("lib.g", 1.2, 3, seconds=2.0, test=1.0)]
  row = replay_task(earlier, dict(name="t", cands=now), keeps=(1, 2, 3))
  assert row["winner_at"] == 3
  assert row["keep"][1]["program"] == "lib.g" and row["keep"][1]["rank"] == 3
  assert row["keep"][1]["test_ratio"] == pytest.approx(1.0 / 0.4)
  assert row["keep"][1]["speedup"] == pytest.approx(5.0)
  assert row["keep"][2]["program"] == "nn_1" and row["keep"][2]["speedup"] == pytest.approx(2.5)
  assert row["keep"][3]["rank"] == 1 and row["keep"][3]["speedup"] == pytest.approx(1.0)
  assert math.isclose(row["spearman"], -1.0)
