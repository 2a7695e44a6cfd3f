"""Which path a CNN block trains through (`hx.compile.conv_pool_choice`): the faster of the two as timed,
kept beside the kernels' library and read back by every later process, forced by $HX_CPU_KERNELS."""

import json
import os
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import hx.compile.conv_pool as cp
import hx.compile.conv_pool_choice as cc
import hx.compile.modules as modules
from tests.compile import kernel_gate

PAPER_SECOND = cc.Block((12, 12, 32), (5, 5, 32, 64), True)
LIBRARY = Path("conv_pool-0123456789abcdef0123.so")


def _measure(kernels_ms, xla_ms, calls):
  def measure(block):
    calls.append(block)
    return cc.Choice(block, kernels_ms, xla_ms, cc.faster(kernels_ms, xla_ms))
  return measure


def test_the_faster_path_is_chosen_and_xla_on_a_tie():
  assert cc.faster(10.0, 20.0)
  assert not cc.faster(20.0, 10.0)
  assert not cc.faster(10.0, 10.0)


def test_block_names_say_the_shapes_and_the_gradients():
  assert PAPER_SECOND.name == "12x12x32-5x5x32x64-wx"
  assert cc.Block((28, 28, 1), (5, 5, 1, 32), False).name == "28x28x1-5x5x1x32-w"


@pytest.mark.parametrize("kernels_ms, xla_ms, kernels", [(5.0, 9.0, True), (9.0, 5.0, False)])
def test_a_choice_is_timed_once_kept_and_read_back(tmp_path, kernels_ms, xla_ms, kernels):
  calls = []
  first = cc.choose(PAPER_SECOND, LIBRARY, _measure(kernels_ms, xla_ms, calls), tmp_path)
  assert first == cc.Choice(PAPER_SECOND, kernels_ms, xla_ms, kernels)
  path = cc.choice_path(PAPER_SECOND, LIBRARY, tmp_path)
  assert path == tmp_path / LIBRARY.stem / "12x12x32-5x5x32x64-wx.json"
  assert json.loads(path.read_text()) == {"version": 1, "block": PAPER_SECOND.name, "kernels_ms": kernels_ms,
                                          "xla_ms": xla_ms, "kernels": kernels}
  # A later process (or call) reads the kept choice: the timings it would make now do not matter.
  again = cc.choose(PAPER_SECOND, LIBRARY, _measure(xla_ms, kernels_ms, calls), tmp_path)
  assert again == first and len(calls) == 1
  assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporaries left
  # Another library (another CPU, compiler or jaxlib) times its own.
  other = cc.choose(PAPER_SECOND, LIBRARY.with_name("conv_pool-ffff.so"), _measure(xla_ms, kernels_ms, calls),
                    tmp_path)
  assert other.kernels is not kernels and len(calls) == 2


def test_the_first_process_to_keep_a_choice_wins(tmp_path):
  path = cc.choice_path(PAPER_SECOND, LIBRARY, tmp_path)

  def measure_while_another_keeps_one(block):
    # Another process timed the block meanwhile (the other way) and kept its choice first.
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cc.Choice(block, 9.0, 5.0, False).to_json()))
    return cc.Choice(block, 5.0, 9.0, True)

  assert not cc.choose(PAPER_SECOND, LIBRARY, measure_while_another_keeps_one, tmp_path).kernels
  assert not json.loads(path.read_text())["kernels"]


@pytest.mark.parametrize("text", ["", '{"version": 1, "block": "12x12x32-5x5x32x64-wx", "kern',
                                  '{"version": 1, "block": "another", "kernels_ms": 1, "xla_ms": 2, '
                                  '"kernels": true}', '{"version": 1, "block": "12x12x32-5x5x32x64-wx"}',
                                  '[1, 2]'])
def test_an_unreadable_choice_is_timed_again_and_replaced_with_a_warning(tmp_path, text):
  path = cc.choice_path(PAPER_SECOND, LIBRARY, tmp_path)
  path.parent.mkdir(parents=True)
  path.write_text(text)
  calls = []
  with pytest.warns(RuntimeWarning, match="is corrupt.*timing block 12x12x32-5x5x32x64-wx again"):
    choice = cc.choose(PAPER_SECOND, LIBRARY, _measure(5.0, 9.0, calls), tmp_path)
  assert choice.kernels and len(calls) == 1
  assert json.loads(path.read_text())["kernels"] is True
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert cc.choose(PAPER_SECOND, LIBRARY, _measure(9.0, 5.0, calls), tmp_path) == choice


def test_a_directory_that_cannot_be_written_costs_only_a_warning(tmp_path):
  blocked = tmp_path / "file"
  blocked.write_text("")  # a file where the directory would go
  calls = []
  with pytest.warns(RuntimeWarning, match="cannot keep hx's kernel choice"):
    choice = cc.choose(PAPER_SECOND, LIBRARY, _measure(5.0, 9.0, calls), blocked)
  assert choice.kernels and len(calls) == 1


def test_the_variable_forces_either_path_and_refuses_other_values(monkeypatch):
  for value, mode in (("1", "on"), ("on", "on"), ("0", "off"), ("False", "off"), ("", "auto"),
                      ("auto", "auto")):
    monkeypatch.setenv(cp.ENABLE_ENV, value)
    assert cp.mode() == mode
  monkeypatch.delenv(cp.ENABLE_ENV)
  assert cp.mode() == "auto"
  monkeypatch.setenv(cp.ENABLE_ENV, "fast")
  with pytest.raises(ValueError, match=r"\$HX_CPU_KERNELS='fast': expected 1 .* 0 .* or auto"):
    cp.mode()


class TestOnThisCpu:
  """`chosen` with the kernels built here."""

  pytestmark = kernel_gate.pytestmark()

  @pytest.fixture(autouse=True)
  def _fresh(self, monkeypatch, tmp_path):
    monkeypatch.setattr(cc, "_chosen", {})
    monkeypatch.setattr(cc, "choice_directory", lambda: tmp_path / "choices")
    self.directory = tmp_path / "choices"

  def test_forced_on_or_off_without_timing(self, monkeypatch):
    def no_timing(block):
      raise AssertionError(f"timed {block}")
    monkeypatch.setattr(cc, "time_block", no_timing)
    monkeypatch.setenv(cp.ENABLE_ENV, "1")
    assert cc.chosen((4, 28, 28, 1), (5, 5, 1, 32), 2, jnp.float32, input_gradient=False)
    monkeypatch.setenv(cp.ENABLE_ENV, "0")
    assert not cc.chosen((4, 28, 28, 1), (5, 5, 1, 32), 2, jnp.float32, input_gradient=False)
    # Where the kernels cannot run the block, forcing them changes nothing.
    monkeypatch.setenv(cp.ENABLE_ENV, "1")
    assert not cc.chosen((4, 28, 28, 1), (5, 5, 1, 24), 2, jnp.float32, input_gradient=False)
    assert not self.directory.exists()

  @pytest.mark.parametrize("kernels_faster", [True, False])
  def test_a_cnn_trains_each_block_through_the_path_timed_faster(self, monkeypatch, kernels_faster):
    monkeypatch.setenv(cp.ENABLE_ENV, "auto")
    calls = []
    fast, slow = (1.0, 2.0) if kernels_faster else (2.0, 1.0)
    monkeypatch.setattr(cc, "time_block", _measure(fast, slow, calls))
    convs = ({"w": jnp.zeros((5, 5, 1, 32)), "b": jnp.zeros(32)},
             {"w": jnp.zeros((5, 5, 32, 64)), "b": jnp.zeros(64)})
    x = jnp.zeros((3, 28, 28, 1))
    for _ in range(2):  # the second trace reads this process's choices
      text = str(jax.make_jaxpr(lambda c, x_: modules._cnn_blocks(c, x_, 2, True))(convs, x))
      assert ("hx_conv_pool_" in text) is kernels_faster
    assert calls == [cc.Block((28, 28, 1), (5, 5, 1, 32), False), PAPER_SECOND]
    library = cp.library_path()
    assert sorted(p.name for p in (self.directory / library.stem).iterdir()) == [
        "12x12x32-5x5x32x64-wx.json", "28x28x1-5x5x1x32-w.json"]
    assert set(cc.choices()) == set(calls)

  def test_timing_a_block_runs_both_paths_even_inside_a_trace(self):
    block = cc.Block((12, 12, 16), (3, 3, 16, 16), True)
    seen = []

    def traced(x):
      seen.append(cc.time_block(block, rows=4))
      return x

    jax.jit(traced)(jnp.zeros(2))
    (choice,) = seen
    assert choice.block == block and choice.kernels_ms > 0 and choice.xla_ms > 0
    assert choice.kernels == cc.faster(choice.kernels_ms, choice.xla_ms)

  @pytest.mark.slow
  def test_another_process_reads_the_kept_choice(self, tmp_path):
    """A child process with the same kernel cache reads the choice kept here and does not time."""
    kernels = tmp_path / "kernels"
    script = ("import hx.compile.conv_pool_choice as cc, jax.numpy as jnp\n"
              "cc.time_block = lambda block: (_ for _ in ()).throw(AssertionError('timed'))\n"
              "print(cc.chosen((4, 28, 28, 1), (5, 5, 1, 32), 2, jnp.float32, input_gradient=False))\n")
    library = cp.build_library(directory=kernels)
    path = cc.choice_path(cc.Block((28, 28, 1), (5, 5, 1, 32), False), library, kernels / "choices")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "block": "28x28x1-5x5x1x32-w", "kernels_ms": 9.0,
                                "xla_ms": 1.0, "kernels": False}))
    import subprocess
    import sys
    env = {**os.environ, cp.KERNEL_CACHE_DIR_ENV: str(kernels), cp.ENABLE_ENV: "auto"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
