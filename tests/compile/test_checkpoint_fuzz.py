"""Whatever lies where a Tune checkpoint is kept, `load_checkpoint` and `describe_checkpoint` give back the
run its JSON text and arrays describe, or one CheckpointError whose message is one line naming the file
(and the field or the array): never a KeyError, TypeError or IndexError from the code that reads it, and
never arrays that do not fit the program or what the meta says the file holds.

The meta mutated one field at a time (a value replaced by one of another type, removed, negated, made NaN,
a key added), any JSON value or bytes in its place, arrays removed, reshaped, retyped or added, the file
cut or a byte changed, and the cases by name."""

import io
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hx.compile.checkpoint import CheckpointError, describe_checkpoint, load_checkpoint, save_checkpoint
from hx.compile.tuning import TuneConfig, TuneResult, TuneState, tune
from tests.compile.test_tune import MSE, Linear, _regression
from tests.synth.json_strategies import json_values, mutated

CONFIG = TuneConfig(learning_rate=0.05, batch_size=32, epochs=3)
KEY = "linear 4 -> 1, seed 0"
MODEL = Linear(4, 1)


def _contents(path: Path) -> tuple[dict, dict]:
  with np.load(path) as f:
    arrays = {k: f[k] for k in f.files}
  return json.loads(str(arrays.pop("meta"))), arrays


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
  """kind -> (the file, its meta, its arrays): a paused run (with a best epoch) and a finished one."""
  base = tmp_path_factory.mktemp("saved")
  data = _regression()
  out = {}
  for kind, run in (("paused", tune(MODEL, MODEL.frozen(), data, MSE, CONFIG, until=2).state),
                    ("finished", tune(MODEL, MODEL.frozen(), data, MSE, CONFIG))):
    path = base / f"{kind}.npz"
    save_checkpoint(path, KEY, run, {"train_seconds": 1.5})
    out[kind] = (path, *_contents(path))
  assert out["paused"][1]["has_best"] and out["finished"][1]["has_variables"]
  return out


def _write(path: Path, arrays: dict, meta=None, meta_array=None) -> Path:
  path.parent.mkdir(parents=True, exist_ok=True)
  with path.open("wb") as f:
    np.savez(f, **arrays, meta=np.array(json.dumps(meta)) if meta_array is None else meta_array)
  return path


def _refused(path: Path, key=KEY) -> CheckpointError:
  """The CheckpointError loading `path` gives, held to the property; describing it gives one too (or, for
  an error only the program or the key shows, the file's description)."""
  with pytest.raises(CheckpointError) as err:
    load_checkpoint(path, key, MODEL, CONFIG)
  message = str(err.value)
  assert "\n" not in message and err.value.path == str(path), message
  assert message.startswith(f"checkpoint {path}: "), message
  try:
    describe_checkpoint(path)
  except CheckpointError as also:
    assert str(also).startswith(f"checkpoint {path}: ") and "\n" not in str(also)
  return err.value


def _same(a, b) -> bool:
  return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _score(x):
  return None if x is None else float(x)


def _rows(history) -> list:
  return [[r.epoch, r.train_loss, r.val_score, r.val_loss, r.train_seconds, r.val_seconds] for r in history]


def _loaded_as_described(path: Path, meta: dict, arrays: dict) -> None:
  """A file that loads gives the run its meta and arrays describe."""
  run = load_checkpoint(path, KEY, MODEL, CONFIG)
  rows = [[int(r[0])] + [float(x) for x in r[1:]] for r in meta["history"]]
  assert all(_same(a, b) for x, y in zip(_rows(run.history), rows) for a, b in zip(x, y))
  assert len(run.history) == len(rows) and run.steps_run == meta["steps_run"]
  if meta["kind"] == "paused":
    assert isinstance(run, TuneState)
    for name in ("epoch", "step", "best_epoch", "since_best", "seed", "batch_size", "learning_rate",
                 "steps_per_epoch"):
      assert getattr(run, name) == meta[name], name
    assert all(_same(float(getattr(run, name)), float(meta[name])) for name in ("score", "best_score"))
    assert _same(float(run.loss_sum), float(np.float32(meta["loss_sum"])))
    assert (run.best_variables is not None) == meta["has_best"]
    groups = {"params": run.params, "collections": run.collections, "opt_state": run.opt_state}
  else:
    assert isinstance(run, TuneResult)
    assert (run.best_epoch, run.epochs_run, run.failed) == (meta["best_epoch"], meta["epochs_run"],
                                                            meta["failed"])
    assert _same(run.val_score, float(meta["val_score"]))
    assert _same(run.test_score, _score(meta["test_score"]))
    groups = {"variables": run.variables}
  import jax

  for group, tree in groups.items():
    leaves = jax.tree.leaves(tree)
    assert all(np.array_equal(np.asarray(x), arrays[f"{group}/{i}"]) for i, x in enumerate(leaves)), group


def _changed_fields(meta, original: dict) -> list[str]:
  return [k for k in original if not isinstance(meta, dict) or not _same(meta.get(k, KeyError), original[k])]


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["paused", "finished"]), data=st.data())
def test_a_meta_with_one_field_mutated_loads_as_it_says_or_is_refused_naming_the_field(
    saved, tmp_path_factory, kind, data):
  path, meta, arrays = saved[kind]
  changed = data.draw(mutated(meta))
  target = _write(tmp_path_factory.mktemp("meta") / "run.npz", arrays, changed)
  try:
    _loaded_as_described(target, changed, arrays)
  except CheckpointError:
    err = _refused(target)
    fields = _changed_fields(changed, meta)
    if isinstance(changed, dict) and len(fields) == 1:
      named = fields[0] in str(err) or (fields[0] == "key" and "saved for" in str(err))
      assert named, (fields, str(err))


@settings(max_examples=100, deadline=None)
@given(value=json_values)
def test_any_json_value_as_the_meta_is_refused(saved, tmp_path_factory, value):
  _, _, arrays = saved["paused"]
  err = _refused(_write(tmp_path_factory.mktemp("value") / "run.npz", arrays, value))
  assert "not a Tune checkpoint" in str(err) or "meta" in str(err), str(err)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=40))
def test_any_text_as_the_meta_is_refused(saved, tmp_path_factory, text):
  _, _, arrays = saved["finished"]
  _refused(_write(tmp_path_factory.mktemp("text") / "run.npz", arrays, meta_array=np.array(text)))


@st.composite
def _array_damage(draw, arrays: dict):
  """(what was done, the arrays after it): one array removed, reshaped, retyped, renamed, or one added."""
  names = sorted(arrays)
  name = draw(st.sampled_from(names))
  kind = draw(st.sampled_from(["remove", "reshape", "retype", "rename", "add"]))
  out = dict(arrays)
  if kind == "remove":
    del out[name]
  elif kind == "reshape":
    out[name] = np.zeros(arrays[name].shape + (draw(st.integers(1, 3)),), arrays[name].dtype)
  elif kind == "retype":
    dtype = draw(st.sampled_from(["float64", "int32", "float16", "bool", "<U3"]).filter(
        lambda d: np.dtype(d) != arrays[name].dtype))
    out[name] = np.zeros(arrays[name].shape, dtype)
  else:
    new = draw(st.from_regex(r"[a-z_]{1,10}(/[0-9]{1,3})?", fullmatch=True).filter(
        lambda n: n not in arrays and n != "meta"))
    out[new] = out.pop(name) if kind == "rename" else np.zeros(3, np.float32)
  return kind, out


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["paused", "finished"]), data=st.data())
def test_an_array_removed_reshaped_retyped_or_added_is_refused_naming_it(saved, tmp_path_factory, kind, data):
  _, meta, arrays = saved[kind]
  what, damaged = data.draw(_array_damage(arrays))
  err = _refused(_write(tmp_path_factory.mktemp("arrays") / "run.npz", damaged, meta))
  groups = ("params", "collections", "opt_state", "best", "variables")
  assert any(g in str(err) for g in groups) or "array" in str(err), (what, str(err))


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["paused", "finished"]), data=st.data())
def test_a_cut_or_changed_file_loads_unchanged_or_is_refused(saved, tmp_path_factory, kind, data):
  path, meta, arrays = saved[kind]
  original = path.read_bytes()
  damaged = bytearray(original[:data.draw(st.integers(0, len(original)))])
  if data.draw(st.booleans()) and damaged:
    at = data.draw(st.integers(0, len(damaged) - 1))
    damaged[at] ^= data.draw(st.integers(1, 255))
  target = tmp_path_factory.mktemp("bytes") / "run.npz"
  target.write_bytes(bytes(damaged))
  try:
    _loaded_as_described(target, meta, arrays)  # a byte no reader looks at (a timestamp), or none
  except CheckpointError:
    _refused(target)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=200))
def test_any_bytes_are_refused(tmp_path_factory, data):
  target = tmp_path_factory.mktemp("any") / "run.npz"
  target.write_bytes(data)
  _refused(target)


def _zip(path: Path, members: dict[str, bytes]) -> Path:
  with zipfile.ZipFile(path, "w") as z:
    for name, data in members.items():
      z.writestr(name, data)
  return path


def _npy(a) -> bytes:
  out = io.BytesIO()
  np.save(out, a)
  return out.getvalue()


def _meta_with(of="paused", drop=(), **changes):
  """The file `of` kind with its meta's fields `drop` left out and `changes` made."""
  def build(saved):
    _, meta, arrays = saved[of]
    return arrays, {**{k: v for k, v in meta.items() if k not in drop}, **changes}
  return build


def _arrays_with(**changes):
  """The paused file with arrays set ("params__1" for params/1) or, where None, removed."""
  def build(saved):
    _, meta, arrays = saved["paused"]
    out = {**arrays, **{k.replace("__", "/"): v for k, v in changes.items() if v is not None}}
    return {k: v for k, v in out.items() if changes.get(k.replace("/", "__"), 0) is not None}, meta
  return build


META_CASES = [
    ("meta a list", _meta_with(), [], "not a Tune checkpoint (format None"),
    ("another format", _meta_with(format="hx-tune-checkpoint/0"), None,
     "not a Tune checkpoint (format 'hx-tune-checkpoint/0', expected 'hx-tune-checkpoint/1')"),
    ("unknown kind", _meta_with(kind="running"), None,
     "meta.kind: expected one of 'paused', 'finished', got \"running\""),
    ("no kind", _meta_with(drop=("kind",)), None, "meta.kind: expected a string, got null"),
    ("no epoch", _meta_with(drop=("epoch",)), None, "meta: missing 'epoch'"),
    ("negative epoch", _meta_with(epoch=-1), None, "meta.epoch: expected an integer >= 0, got -1"),
    ("epoch a float", _meta_with(epoch=2.0), None, "meta.epoch: expected an integer >= 0, got 2.0"),
    ("epoch a text", _meta_with(epoch="2"), None, "meta.epoch: expected an integer >= 0, got \"2\""),
    ("batch size 0", _meta_with(batch_size=0), None, "meta.batch_size: expected an integer >= 1, got 0"),
    ("no steps per epoch", _meta_with(steps_per_epoch=0), None,
     "meta.steps_per_epoch: expected an integer >= 1"),
    ("negative learning rate", _meta_with(learning_rate=-0.05), None,
     "meta.learning_rate: expected a finite number > 0, got -0.05"),
    ("score a list", _meta_with(score=[1]), None,
     "meta.score: expected a score (a number or \"nan\"), got [1]"),
    ("has_best a number", _meta_with(has_best=1), None, "meta.has_best: expected true or false, got 1"),
    ("history not a list", _meta_with(history={}), None, "meta.history: expected an array, got {}"),
    ("a history row short", _meta_with(history=[[1, 0.5, 0.5]]), None,
     "meta.history[0]: expected an array of 6 values, got 3"),
    ("a history epoch 0", _meta_with(history=[[0, 0.5, 0.5, 0.5, 0.1, 0.1]]), None,
     "meta.history[0][0]: expected an integer >= 1, got 0"),
    ("history seconds negative", _meta_with(history=[[1, 0.5, 0.5, 0.5, -0.1, 0.1]]), None,
     "meta.history[0][4]: expected a finite number >= 0, got -0.1"),
    ("seconds not an object", _meta_with(seconds=3), None, "meta.seconds: expected an object, got 3"),
    ("seconds negative", _meta_with(seconds={"train_seconds": -1}), None,
     "meta.seconds.train_seconds: expected a finite number >= 0, got -1"),
    ("key a number", _meta_with(key=7), None, "meta.key: expected a string, got 7"),
    ("another key", _meta_with(key="another run"), None, "saved for 'another run', not for"),
    ("finished without failed", _meta_with("finished", drop=("failed",)), None, "meta: missing 'failed'"),
    ("failed a number", _meta_with("finished", failed=3), None, "meta.failed: expected a string, got 3"),
    ("test score a text", _meta_with("finished", test_score="low"), None,
     "meta.test_score: expected a score (a number or \"nan\"), got \"low\""),
    ("has_variables missing", _meta_with("finished", drop=("has_variables",)), None,
     "meta: missing 'has_variables'"),
    ("has_best false, best arrays kept", _meta_with(has_best=False), None,
     "array 'best/0' is none of a paused run's with meta.has_best false"),
    ("has_variables false, variables kept", _meta_with("finished", has_variables=False), None,
     "array 'variables/0' is none of a finished run's with meta.has_variables false"),
    ("best arrays gone", _arrays_with(best__0=None, best__1=None, best__2=None), None,
     "meta.has_best is true, but best holds 0 arrays where the program's has 3"),
    ("a params array gone", _arrays_with(params__1=None), None,
     "params holds 1 arrays where the program's has 2"),
    ("a params array reshaped", _arrays_with(params__1=np.zeros((5, 1), np.float32)), None,
     "params['w'] is float32[5, 1] where the program's is float32[4, 1]"),
    ("a params array retyped", _arrays_with(params__0=np.zeros((1,), np.float64)), None,
     "params['b'] is float64[1] where the program's is float32[1]"),
    ("an opt_state array retyped", _arrays_with(opt_state__0=np.zeros((), np.float32)), None,
     "opt_state[0].count is float32[] where the program's is int32[]"),
    ("an array renumbered", _arrays_with(params__1=None, params__7=np.zeros((4, 1), np.float32)), None,
     "params holds arrays ['params/7'] where the program's are params/0 to params/1"),
    ("an array of no group", _arrays_with(extra__0=np.zeros(2)), None,
     "array 'extra/0' is none of a paused run's"),
    ("an array numbered 01", _arrays_with(params__01=np.zeros(2)), None, "array 'params/01' is none of"),
]


@pytest.mark.parametrize("name, build, meta_override, message", META_CASES, ids=[c[0] for c in META_CASES])
def test_each_damage_is_refused_naming_the_file_and_the_field(saved, tmp_path, name, build, meta_override,
                                                             message):
  arrays, meta = build(saved)
  path = _write(tmp_path / "run.npz", arrays, meta if meta_override is None else meta_override)
  assert message in str(_refused(path)), str(_refused(path))


FILE_CASES = [
    ("not a zip", lambda p: p.write_bytes(b"not an archive"), "not a Tune checkpoint (ValueError: "),
    ("empty", lambda p: p.write_bytes(b""), "not a Tune checkpoint"),
    ("one .npy array", lambda p: p.write_bytes(_npy(np.zeros(3))),
     "not a Tune checkpoint (ValueError: one NumPy array, not an .npz archive of them)"),
    ("a directory", lambda p: p.mkdir(), "cannot be read (Is a directory)"),
    ("no meta", lambda p: _zip(p, {"params/0.npy": _npy(np.zeros(1))}),
     "not a Tune checkpoint (no meta array)"),
    ("meta not a .npy", lambda p: _zip(p, {"meta": b"{}"}),
     "meta: expected a JSON text (a 0-d str array), got bytes"),
    ("meta a vector", lambda p: _zip(p, {"meta.npy": _npy(np.array(["{}", "{}"]))}),
     "meta: expected a JSON text (a 0-d str array), got <U2[2]"),
    ("meta a number", lambda p: _zip(p, {"meta.npy": _npy(np.float64(3))}),
     "meta: expected a JSON text (a 0-d str array), got float64[]"),
    ("meta bytes", lambda p: _zip(p, {"meta.npy": _npy(np.array(b"{}"))}), "got |S2[]"),
    ("meta not JSON", lambda p: _zip(p, {"meta.npy": _npy(np.array('{"format": '))}),
     "meta is not valid JSON (line 1, column 12: Expecting value)"),
    ("meta nested too deep", lambda p: _zip(p, {"meta.npy": _npy(np.array("[" * 100000))}),
     "meta is not JSON hx reads (it nests too deep)"),
    ("a pickled member", lambda p: _zip(p, {"meta.npy": _npy(np.array([{}], dtype=object))}),
     "not a Tune checkpoint (ValueError: Object arrays cannot be loaded when allow_pickle=False)"),
    ("a member cut short", lambda p: _zip(p, {"meta.npy": _npy(np.array("{}" * 50))[:-7]}),
     "not a Tune checkpoint (ValueError: "),
]


@pytest.mark.parametrize("name, damage, message", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_each_file_that_is_no_checkpoint_is_refused_naming_it(tmp_path, name, damage, message):
  path = tmp_path / "run.npz"
  damage(path)
  assert message in str(_refused(path)), str(_refused(path))


def test_a_missing_file_is_no_checkpoint_to_load_and_one_to_describe_is_refused(tmp_path):
  assert load_checkpoint(tmp_path / "none.npz", KEY, MODEL, CONFIG) is None
  with pytest.raises(CheckpointError, match=r"none\.npz: cannot be read \(No such file or directory\)"):
    describe_checkpoint(tmp_path / "none.npz")


def test_a_member_without_npy_among_the_arrays_is_refused(saved, tmp_path):
  _, meta, arrays = saved["finished"]
  path = _write(tmp_path / "run.npz", arrays, meta)
  with zipfile.ZipFile(path, "a") as z:
    z.writestr("variables/9", b"raw")
  assert "array 'variables/9' is not a NumPy array (.npy)" in str(_refused(path))
