"""Every binary refuses a flag value that cannot work, or flags that contradict each other, with one line
on stderr that names the flag and exit status 1, before any work and with nothing written to its output
directory: an unknown flag, a value not of the flag's type, a count below its minimum, a path that does
not exist or is not of its kind, a malformed task, program or type, a fraction outside (0, 1], a flag
given without the one it only matters with.

Each binary's `main` runs on all of its command lines in one process through absl's flag parsing
(`tests.bin.refusals`), so a family costs one start of Python and JAX. Placeholders in the command lines:
{OUT} an output directory of the case's own (which must not come to exist), {FILE} an existing file,
{DIR} an existing directory, {TOML} an existing sequence file, {BAD_RECORDS} / {GARBLED_RECORDS} run
directories whose one record is damaged, {BAD_SETTINGS} a run directory whose settings.json is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN = [
    (["--sequnce=cs1"], "Unknown command line flag 'sequnce'"),
    (["--sequence=cs1", "--tasks=x"], "flag --tasks=x: invalid literal for int()"),
    (["--sequence=cs1", "--search=fifo"],
     "--search: unknown order 'fifo'; the orders are authors, cost"),
    (["--sequence=cs1", "--search=cost,authors_filter=maybe"],
     "--search: authors_filter=maybe: expected true or false"),
    (["--sequence=cs1", "--tasks=-1"], "--tasks must be >= 1, got -1"),
    (["--sequence=cs1", "--candidates=0"], "--candidates must be >= 1, got 0"),
    (["--sequence=cs1", "--epochs=-2"], "--epochs must be >= 1, got -2"),
    (["--sequence=cs1", "--patience=0"], "--patience must be >= 1, got 0"),
    (["--sequence=cs1", "--budget_seconds=-1"],
     "--budget_seconds must be a positive number of seconds, got -1"),
    (["--sequence=cs1", "--budget_seconds=nan"],
     "--budget_seconds must be a positive number of seconds, got nan"),
    (["--sequence=cs1", "--time_budget=0"], "--time_budget must be a positive number of seconds, got 0"),
    (["--sequence=cs1", "--seeds=0,-1"], "--seeds: instantiation seeds must be >= 0, got -1"),
    (["--sequence=cs1", "--seeds=1,1"], "--seeds: instantiation seeds must be distinct, got 1,1"),
    (["--sequence=cs1", "--seeds=one"], "--seeds: 'one' is not a list of ints"),
    (["--sequence=cs1", "--examples=10,10"], "--examples takes 3 counts (train,val,test), got 2"),
    (["--sequence=cs1", "--examples=10,0,10"], "--examples: counts (train,val,test) must be >= 1, got 0"),
    (["--sequence=cs1", "--fractions=0.5,1.5"], "--fractions: training fraction 1.5 is outside (0, 1]"),
    (["--sequence=cs1", "--fractions=nan"], "--fractions: training fraction nan is outside (0, 1]"),
    (["--sequence=cs1", "--fractions=-0.1"], "--fractions: training fraction -0.1 is outside (0, 1]"),
    (["--sequence=cs9"], "unknown sequence 'cs9'"),
    (["--sequence=cs1", "--methods=houdini,mlp"], "unknown method 'mlp'"),
    (["--sequence=cs1", "--module=cnn_kernel=wide"], "--module: cnn_kernel='wide' is not a int"),
    (["--sequence=cs1", "--module=kernel"], "--module: 'kernel' is not NAME=VALUE"),
    (["--sequence_file={DIR}/none.toml"], "--sequence_file: {DIR}/none.toml does not exist"),
    (["--sequence_file={DIR}"], "--sequence_file: {DIR} is a directory, not a file"),
    (["--sequence=cs1", "--sequence_file={TOML}"],
     "--sequence_file runs the file's sequence: leave out --sequence"),
    (["--sequence=cs1", "--mnist={DIR}/none"], "--mnist: {DIR}/none does not exist (MNIST: "),
    (["--sequence=gs1", "--gtsrb={FILE}"], "--gtsrb: {FILE} is a file, not a directory (GTSRB: "),
    (["--sequence=cs2", "--smallnorb={FILE}"], "--smallnorb: {FILE} is a file, not a directory"),
    (["--sequence=cs1", "--download"], "--download needs --mnist=tfds or --smallnorb=tfds"),
    (["--sequence=cs1", "--methods=standalone,llt", "--candidates=3"],
     "--candidates is a setting of HOUDINI's search, and --methods=standalone,llt runs no HOUDINI"),
    (["--sequence=cs1", "--methods=standalone", "--strategy=evolutionary"],
     "--strategy is a setting of HOUDINI's search"),
    (["--sequence=cs1", "--strategy=evolutionary", "--search=authors"],
     "--search=authors orders the top-down search, and --strategy=evolutionary has none"),
    (["--sequence=cs1", "stray"], "unexpected arguments stray"),
]

TRAIN = [
    (["--task=nonsense"], "--task: unknown task kind 'nonsense'"),
    (["--task=count_digit(12)"], "--task: count_digit needs a class in 0..9, got 12"),
    (["--program=compose(nn_a, map_l(nn_b)"], "--program: parse error: line 1, column 26: expected ')'"),
    (["--program=" + "(" * 5000 + "nn_a" + ")" * 5000],
     "--program: parse error: line 1, column 101: expected at most 100 levels of nesting"),
    (["--program=zeros(" + "9" * 5000 + ")"], "--program: parse error: line 1, column 7: expected a positive "
                                              "integer of at most 2147483647"),
    (["--task=count_digit(1)", "--program=compose(nn_a, map_g(nn_b))"],
     "--program: type error: map_g(nn_b)"),
    (["--grids_4x4=3"], "--grids_4x4 sets the shortest-path tasks' 4x4 training grids; --task=count_digit(1) "
                        "has none"),
    (["--fraction=1.5"], "--fraction must be in (0, 1], got 1.5"),
    (["--fraction=nan"], "--fraction must be in (0, 1], got nan"),
    (["--epochs=-1"], "--epochs must be >= 1, got -1"),
    (["--learning_rate=nan"], "--learning_rate must be positive, got nan"),
    (["--seed=-3"], "--seed must be >= 0, got -3"),
    (["--preset=fast"], "flag --preset=fast: value should be one of <paper|authors|quick>"),
    (["--mnist={DIR}/none"], "--mnist: {DIR}/none does not exist"),
    (["--download"], "--download needs --mnist=tfds or --smallnorb=tfds"),
    (["--epoch=3"], "Unknown command line flag 'epoch'"),
]

TYPECHECK = [
    (["--program=nn_a", "--type=Tensor<int>[1]"], "--type: parse error: line 1, column 8: expected 'bool' or "
                                                  "'real'"),
    (["--program=nn_a", "--type=" + "List<" * 300 + "'a" + ">" * 300],
     "--type: parse error: line 1, column 501"),
    (["--program=nn_a", "--table=tab:CS2Progs"], "--table picks the paper's programs to check, and --program "
                                                 "checks one of your own instead"),
    (["--program=nn_a", "--table=tab:CS1Progs"], "--table picks the paper's programs to check"),
    (["--type=Tensor<real>[1]"], "--type is the type --program must have: give --program too"),
    (["--table=tab:Nope"], "--table: unknown table 'tab:Nope'"),
    (["--tabel=tab:CS1Progs"], "Unknown command line flag 'tabel'"),
]

SEQUENCES = [
    (["--sequence=cs9"], "flag --sequence=cs9: value should be one of <cs1|cs2|cs3|ss|gs1|gs2|ls>"),
    (["--seed=-1"], "--seed must be >= 0, got -1"),
    (["--seed=x"], "flag --seed=x: invalid literal for int()"),
    (["--build", "--mnist={DIR}/none"], "--mnist: {DIR}/none does not exist (MNIST: "),
    (["--gtsrb={FILE}"], "--gtsrb: {FILE} is a file, not a directory"),
    (["--download", "--mnist={FILE}"], "--download needs --mnist=tfds or --smallnorb=tfds"),
    (["cs1"], "unexpected arguments cs1"),
]

REPORT = [
    ([], "usage: python -m hx.bin.report DIR"),
    (["{DIR}", "{DIR}"], "usage: python -m hx.bin.report DIR"),
    (["{DIR}/none"], "DIR: {DIR}/none does not exist"),
    (["{FILE}"], "DIR: {FILE} is a file, not a directory"),
    (["{DIR}"], "{DIR} holds no evaluation records"),
    (["{BAD_RECORDS}"], "fraction_1.json: not a valid record: ranked: expected an array, got 3"),
    (["{GARBLED_RECORDS}"], "fraction_1.json: not a readable record: it is not valid JSON"),
    (["--verbosty=1", "{DIR}"], "Unknown command line flag 'verbosty'"),
]

FIGURES = [
    ([], "usage: python -m hx.bin.figures ROOT"),
    (["{DIR}/none"], "{DIR}/none is not a directory"),
    (["{FILE}"], "{FILE} is not a directory"),
    (["{DIR}"], "{DIR} holds no run directory with records"),
    (["{DIR}", "--tables", "--output_dir={OUT}"], "--tables writes nothing: leave out --output_dir"),
    (["{BAD_SETTINGS}"], "settings.json: not an evaluation's settings (is not valid JSON"),
    (["{BAD_SETTINGS}", "--tables"], "settings.json: not an evaluation's settings (is not valid JSON"),
    (["--bogus=1", "{DIR}"], "Unknown command line flag 'bogus'"),
]

# The flag each binary writes under, appended to every case (report's DIR is an argument of its own).
OUTPUT_FLAG = {"hx.bin.run": "--output_dir", "hx.bin.train": "--checkpoint_dir"}


@pytest.fixture(scope="module")
def places(tmp_path_factory):
  base = tmp_path_factory.mktemp("refusals")
  (base / "dir").mkdir()
  (base / "file").write_text("not data")
  (base / "seq.toml").write_text('name = "mine"\n')
  for name, text in (("bad", json.dumps({"sequence": "cs1", "task_index": 1, "task": "t", "metric": "error",
                                          "fraction": 1, "data": {"datasets": [], "synthetic": False},
                                          "ranked": 3, "seconds": {"wall": 1}})),
                     ("garbled", '{"sequence": '), ("badsettings", '{"sequence": ')):
    record = base / name / "houdini_topdown" / "seed_0" / "records" / "01_t" / "fraction_1.json"
    record.parent.mkdir(parents=True)
    record.write_text(text)
  (base / "badsettings" / "settings.json").write_text('{"settings": ')
  return {"{DIR}": str(base / "dir"), "{BAD_SETTINGS}": str(base / "badsettings"),
          "{FILE}": str(base / "file"),
          "{TOML}": str(base / "seq.toml"), "{BAD_RECORDS}": str(base / "bad"),
          "{GARBLED_RECORDS}": str(base / "garbled"), "base": base}


def _fill(text: str, places: dict, out: str) -> str:
  for key, value in places.items():
    if key.startswith("{"):
      text = text.replace(key, value)
  return text.replace("{OUT}", out)


def _refusals(module: str, cases: list, places: dict) -> None:
  """Runs `cases` through `module`'s main in one process and asserts each is refused as the module
  docstring says, its output directory never made."""
  outs = [str(places["base"] / f"out_{module}_{i}") for i in range(len(cases))]
  lines = []
  for (args, _), out in zip(cases, outs):
    filled = [_fill(a, places, out) for a in args]
    if module in OUTPUT_FLAG:
      filled.append(f"{OUTPUT_FLAG[module]}={out}")
    lines.append(filled)
  done = subprocess.run([sys.executable, "-m", "tests.bin.refusals", module], input=json.dumps(lines),
                        capture_output=True, text=True, timeout=600, cwd=ROOT)
  assert done.returncode == 0, done.stderr[-3000:]
  results = json.loads(done.stdout)
  failures = []
  for (_, message), out, result, filled in zip(cases, outs, results, lines):
    message = _fill(message, places, out)
    got = result["stderr"].strip().splitlines()
    ok = (result["rc"] == 1 and len(got) == 1 and got[0].startswith(("error: ", "usage: "))
          and message in got[0] and result["stdout"] == "" and not Path(out).exists())
    if not ok:
      failures.append(f"{filled}: rc {result['rc']}, stderr {result['stderr'][-500:]!r}, "
                      f"stdout {result['stdout'][-200:]!r}, {out} exists: {Path(out).exists()}")
  assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_run_refuses_bad_flags_in_one_line_before_any_work(places):
  _refusals("hx.bin.run", RUN, places)


@pytest.mark.slow
def test_train_refuses_bad_flags_in_one_line_before_any_work(places):
  _refusals("hx.bin.train", TRAIN, places)


def test_typecheck_refuses_bad_flags_in_one_line(places):
  _refusals("hx.bin.typecheck", TYPECHECK, places)


def test_sequences_refuses_bad_flags_in_one_line(places):
  _refusals("hx.bin.sequences", SEQUENCES, places)


@pytest.mark.slow
def test_figures_refuses_a_bad_root_in_one_line_and_writes_nothing(places):
  _refusals("hx.bin.figures", FIGURES, places)
  for name in ("dir", "badsettings"):
    assert not (places["base"] / name / "figures").exists()


@pytest.mark.slow
def test_report_refuses_a_bad_directory_in_one_line_and_writes_nothing(places):
  _refusals("hx.bin.report", REPORT, places)
  for name in ("dir", "bad", "garbled"):
    written = {p.name for p in (places["base"] / name).iterdir()}
    assert not written & {"report.md", "programs.md", "plots"}, written

