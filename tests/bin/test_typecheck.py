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


def test_an_unknown_table_or_a_stray_argument_is_one_line_with_status_1():
  for args, message in ((("--table=tab:Nope",), "error: --table: unknown table 'tab:Nope'; the tables are: "),
                        (("--program=nn_a", "--library=tab:Nope"),
                         "error: --library: unknown table 'tab:Nope'"),
                        (("--library=tab:Nope",), "error: --library: unknown table 'tab:Nope'"),
                        (("--library=tab:CS1Progs",), "error: --library gives the library types of"),
                        (("--type=Tensor<real>[1]",), "error: --type is the type --program must have"),
                        (("tab:CS1Progs",), "error: unexpected arguments tab:CS1Progs")):
    out = _run(*args)
    assert out.returncode == 1 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(message) and "Traceback" not in out.stderr
