"""benchmarks/studies/cnn_parts.py: both frameworks time the same computation, and the script's output."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("cnn_parts", ROOT / "benchmarks" / "studies" / "cnn_parts.py")
cnn_parts = importlib.util.module_from_spec(_spec)
sys.modules["cnn_parts"] = cnn_parts
_spec.loader.exec_module(cnn_parts)


def test_jax_parts_print_one_json_line_of_every_part(capsys):
  out = cnn_parts.main(["--framework", "jax", "--rows", "3", "--repeats", "1"])
  line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert line["framework"] == "jax" and line["rows"] == 3
  assert set(line["ms"]) == {*cnn_parts.PARTS, "sum"} and line["ms"] == out
  assert all(v > 0 for v in out.values())
  assert out["sum"] == pytest.approx(sum(out[p] for p in cnn_parts.PARTS), abs=0.003)


@pytest.mark.parametrize("argv", [["--framework", "jax", "--rows", "0"], ["--framework", "cuda"]])
def test_bad_flags_exit_with_usage(argv):
  with pytest.raises(SystemExit) as err:
    cnn_parts.main(argv)
  assert err.value.code == 2


def test_torch_parts_compute_the_gradients_jax_parts_do():
  torch = pytest.importorskip("torch")
  a = cnn_parts.inputs(3)
  j, t = cnn_parts.jax_parts(a), cnn_parts.torch_parts(a, 1)
  nchw, oihw = (0, 3, 1, 2), (3, 2, 0, 1)
  _, (dw1,) = j["conv1"]()
  _, (tw1,) = t["conv1"]()
  np.testing.assert_allclose(np.transpose(np.asarray(dw1), oihw), tw1.numpy(), rtol=2e-4, atol=1e-3)
  _, (dh1, dw2) = j["conv2"]()
  _, (th1, tw2) = t["conv2"]()
  np.testing.assert_allclose(np.transpose(np.asarray(dh1), nchw), th1.numpy(), rtol=2e-4, atol=1e-3)
  np.testing.assert_allclose(np.transpose(np.asarray(dw2), oihw), tw2.numpy(), rtol=2e-4, atol=1e-2)
  y, (dz1,) = j["pool1"]()
  ty, (tz1,) = t["pool1"]()
  np.testing.assert_allclose(np.transpose(np.asarray(y), nchw), ty.detach().numpy(), rtol=1e-6)
  np.testing.assert_allclose(np.transpose(np.asarray(dz1), nchw), tz1.numpy(), rtol=1e-6)
  _, (df, dd) = j["dense"]()
  _, (tf, td) = t["dense"]()
  np.testing.assert_allclose(np.asarray(df), tf.numpy(), rtol=2e-4, atol=1e-3)
  np.testing.assert_allclose(np.asarray(dd), td.numpy(), rtol=2e-4, atol=1e-2)
  assert torch.get_num_threads() == 1
