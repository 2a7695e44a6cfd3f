import subprocess
import sys


def _run(*args):
  return subprocess.run([sys.executable, "-m", "hx.bin.typecheck", *args], capture_output=True, text=True,
                        timeout=120)


def test_checks_a_paper_table():
  out = _run("--table=tab:GS1Progs")
  assert out.returncode == 0, out.stderr
  assert "compose(repeat(10, conv_g(nn_gs1_3)), map_g(compose(lib.nn_gs1_1, lib.nn_gs1_2)))" in out.stdout
  assert "nn_gs1_3 : List<Tensor<real>[2]> -> Tensor<real>[2]" in out.stdout


def test_reports_a_type_error_with_status_1():
  out = _run("--program=compose(lib.nn_cs1_2, lib.nn_cs1_1)", "--library=tab:CS1Progs")
  assert out.returncode == 1
  assert "type error: lib.nn_cs1_2" in out.stdout


def test_unknown_table():
  out = _run("--table=tab:Nope")
  assert out.returncode == 2
  assert "unknown table" in out.stderr
