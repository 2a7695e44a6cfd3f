"""The neural library: naming as the paper numbers functions, immutability, frozen functions computing
what they computed when trained, versions, and the on-disk format (round trip, damage, interrupted saves).

Everything is real: programs from the paper's CS1 table compiled with `hx.compile_program` at small sizes,
their parameters initialised and then perturbed (a stand-in for training: any values must survive), real
files on disk.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
from pathlib import Path

import jax
import numpy as np
import pytest

import hx
from hx import atomic
from hx.compile import ListBatch, ModuleConfig, compile_program, init_module, module_spec
from hx.lang import program as P
from hx.lang.paper import paper_programs
from hx.lang.types import (
  FunctionType,
  TypeVar,
  function_parts,
  is_image,
  parse_type,
  substitute,
  type_variables,
)
from hx.synth import library as L
from hx.synth.library import Entry, Library, LibraryError, Provenance, Trained

CFG = ModuleConfig(mlp_hidden=8, cnn_channels=(4,), cnn_kernel=3, lstm_hidden=6, graph_hidden=6,
                   graph_message=3)
IMG = parse_type("Tensor<real>[1][12][12]")
FEATURES = parse_type("Tensor<real>[100]")  # 12x12 -> 3x3 conv: 10x10 -> 2x2 pool: 5x5, 4 channels
FLAG = parse_type("Tensor<bool>[1]")
TASK_TYPES = {
  "recognize_digit": FunctionType(IMG, FLAG),
  "count_digit": parse_type(f"List<{IMG}> -> Tensor<real>[1]"),
}
WHEN = "2018-12-03T09:00:00+00:00"


def task_type(task: str):
  return TASK_TYPES[task.split("(")[0]]


def resolve(fresh: dict) -> dict:
  """The paper's conventions for unconstrained types, at this test's sizes: a function of an image gives
  the CNN's features, any other unknown is a Tensor<bool>[1] (as `hx.lang.paper.default_type_variables`)."""
  mapping = {}
  for t in fresh.values():
    args, result = function_parts(t)
    if len(args) == 1 and is_image(args[0]) and isinstance(result, TypeVar):
      mapping[result.name] = FEATURES
  out = {}
  for name, t in fresh.items():
    t = substitute(t, mapping)
    out[name] = substitute(t, {v: FLAG for v in type_variables(t)})
  return out


def perturb(tree, seed: int):
  """Every parameter and running statistic moved away from its initial value (variances kept > 0)."""
  rng = np.random.default_rng(seed)

  def move(path, leaf):
    leaf = np.asarray(leaf)
    if getattr(path[-1], "key", None) == "var":
      return rng.uniform(0.5, 2.0, leaf.shape).astype(leaf.dtype)
    return (leaf + rng.normal(0.0, 0.3, leaf.shape)).astype(leaf.dtype)

  return jax.tree_util.tree_map_with_path(move, tree)


def synth_names(p):
  """The program as a synthesizer might name it: fresh names sorting opposite to their order of use."""
  return P.rename_fresh(p, {n: f"nn_{chr(ord('z') - i)}" for i, n in enumerate(P.fresh_names(p))})


def train_stand_in(program, library: Library, task: str, seed: int) -> Trained:
  typing = hx.infer(program, library.types(), task_type(task))
  compiled = compile_program(program, resolve(typing.fresh), CFG, library=library.specs())
  variables = perturb(compiled.init(jax.random.key(seed)), seed)
  return Trained(compiled, variables, validation=0.1 * seed, test=0.1 * seed + 0.05)


def inputs(task: str, seed: int):
  rng = np.random.default_rng(seed)
  if task.startswith("recognize"):
    return rng.normal(size=(5, *IMG.shape)).astype(np.float32)
  values = rng.normal(size=(5, 4, *IMG.shape)).astype(np.float32)
  mask = np.arange(4)[None, :] < np.array([4, 1, 0, 3, 2])[:, None]
  return ListBatch(values, mask)


def run(compiled, variables, library: Library, x) -> np.ndarray:
  return np.asarray(compiled.apply(variables, compiled.make_frozen(library.variables()), x, train=False))


NO_VARIABLES = {"params": (), "batch_stats": ()}


@dataclasses.dataclass
class Step:
  task: str
  before: Library
  before_version: str
  best: Trained
  added: L.Added
  paper: tuple  # the paper's ranked programs for the task


@pytest.fixture(scope="module")
def cs1() -> list[Step]:
  """CS1's four tasks as the paper reports them (tab:CS1Progs), added to a library one after another."""
  rows = [p for p in paper_programs() if p.table == "tab:CS1Progs"]
  library = Library()
  steps = []
  for number in sorted({p.task_number for p in rows}):
    ranked = sorted((p for p in rows if p.task_number == number), key=lambda p: p.rank)
    task = ranked[0].task
    best = train_stand_in(synth_names(ranked[0].program), library, task, seed=number)
    before, version = library, library.version
    added = library.add(best, sequence="cs1", task=task, when=WHEN,
                        runners_up=[synth_names(p.program) for p in ranked[1:]])
    steps.append(Step(task, before, version, best, added, tuple(p.program for p in ranked)))
    library = added.library
  return steps


# --- naming, immutability, frozen functions ---------------------------------------------------------

def test_functions_are_numbered_as_the_paper_numbers_them(cs1):
  for step in cs1:
    assert step.added.programs == step.paper, step.task
  assert [s.added.library.names for s in cs1] == [
    ("nn_cs1_1", "nn_cs1_2"),
    ("nn_cs1_1", "nn_cs1_2", "nn_cs1_3", "nn_cs1_4"),
    ("nn_cs1_1", "nn_cs1_2", "nn_cs1_3", "nn_cs1_4", "nn_cs1_7", "nn_cs1_8"),
    ("nn_cs1_1", "nn_cs1_2", "nn_cs1_3", "nn_cs1_4", "nn_cs1_7", "nn_cs1_8", "nn_cs1_14", "nn_cs1_15"),
  ]
  assert [s.added.library.counter("cs1") for s in cs1] == [2, 6, 13, 17]
  assert str(cs1[1].added.frozen) == "compose(lib.nn_cs1_3, lib.nn_cs1_4)"
  assert dict(cs1[2].added.renamings[0]) == {"nn_z": "nn_cs1_7", "nn_y": "nn_cs1_8"}
  assert str(cs1[2].added.frozen) == "compose(lib.nn_cs1_7, map_l(compose(lib.nn_cs1_8, lib.nn_cs1_2)))"


def test_entries_record_type_spec_and_provenance(cs1):
  step = cs1[2]
  new = step.added.library
  old_names = step.best.compiled.fresh_slots  # nn_z, nn_y
  for old in old_names:
    entry = new[step.added.renamings[0][old]]
    assert entry.spec == step.best.compiled.specs[old]
    assert entry.type == step.best.compiled.specs[old].type
  assert new["nn_cs1_8"].type == FunctionType(FEATURES, FLAG) and new["nn_cs1_8"].spec.template == "mlp"
  assert new["nn_cs1_7"].spec.template == "lstm"
  assert new["nn_cs1_7"].provenance == Provenance(
    sequence="cs1", task="count_digit(d1)", program=str(step.paper[0]), validation=0.30000000000000004,
    test=0.35000000000000003, when=WHEN)
  assert new["nn_cs1_2"] is cs1[0].added.library["nn_cs1_2"]  # older entries are shared, not copied
  assert len(set(new.versions().values())) == len(new)


def test_adding_never_changes_the_library_it_started_from(cs1):
  for step in cs1:
    assert step.before.version == step.before_version
  assert len(cs1[0].before) == 0 and cs1[0].before == Library()
  assert cs1[1].before.names == ("nn_cs1_1", "nn_cs1_2") and cs1[1].before.counter("cs1") == 2
  lib = cs1[-1].added.library
  w = lib["nn_cs1_8"].variables["params"]["hidden"]["w"]
  with pytest.raises(ValueError, match="read-only"):
    w[0, 0] = 1.0
  handed_out = lib.variables()
  handed_out["nn_cs1_8"]["params"]["hidden"] = {}  # the caller's containers are its own
  handed_out.pop("nn_cs1_1")
  assert lib.variables()["nn_cs1_8"]["params"]["hidden"]["w"] is not None and "nn_cs1_1" in lib
  assert Library(lib.entries, lib.counters).version == lib.version


def test_frozen_program_types_compiles_and_computes_the_trained_function(cs1):
  for i, step in enumerate(cs1):
    new = step.added.library
    frozen = step.added.frozen
    assert not P.fresh_names(frozen)
    typing = hx.infer(frozen, new.types(), task_type(step.task))
    assert typing.type == task_type(step.task) and typing.fresh == {}
    compiled = compile_program(frozen, typing, CFG, library=new.specs())
    x = inputs(step.task, seed=i)
    want = run(step.best.compiled, step.best.variables, step.before, x)
    got = run(compiled, NO_VARIABLES, new, x)
    np.testing.assert_array_equal(got, want)
    assert np.std(want) > 0  # the test would notice parameters that do nothing


def test_add_refuses_bad_input(cs1):
  lib, best = cs1[0].added.library, cs1[1].best
  with pytest.raises(ValueError, match="sequence name"):
    lib.add(best, sequence="cs-1", task="t")
  swapped = {"params": best.variables["params"][::-1], "batch_stats": best.variables["batch_stats"][::-1]}
  with pytest.raises(ValueError, match="do not fit its module"):
    lib.add(Trained(best.compiled, swapped), sequence="cs1", task="t")
  with pytest.raises(ValueError, match="one entry per fresh slot"):
    lib.add(Trained(best.compiled, {"params": (), "batch_stats": ()}), sequence="cs1", task="t")
  reset = Library(lib.entries)  # a counter that lost track: the new names would clash
  with pytest.raises(ValueError, match="already has nn_cs1_1, nn_cs1_2"):
    reset.add(best, sequence="cs1", task="t")


def test_a_best_program_without_fresh_functions_only_advances_the_numbering(cs1):
  lib = cs1[0].added.library
  program = hx.parse("compose(lib.nn_cs1_1, lib.nn_cs1_2)")
  compiled = compile_program(program, {}, CFG, library=lib.specs())
  added = lib.add(Trained(compiled, NO_VARIABLES), sequence="cs1", task="t",
                  runners_up=[hx.parse("compose(nn_a, lib.nn_cs1_2)")])
  assert added.library.names == lib.names and added.library.counter("cs1") == 3
  assert added.programs[1] == hx.parse("compose(nn_cs1_3, lib.nn_cs1_2)") and added.frozen == program


# --- versions and equality --------------------------------------------------------------------------

def _entry(name="nn_t_1", seed=0, spec_text="Tensor<real>[3] -> Tensor<bool>[1]", config=CFG, when=WHEN):
  spec = module_spec(parse_type(spec_text), config)
  params, stats = init_module(spec, jax.random.key(seed))
  return Entry.of(name, spec, perturb({"params": params, "batch_stats": stats}, seed),
                  Provenance("t", "task", "nn_t_1", 0.5, None, when))


def test_versions_follow_what_an_entry_computes():
  a = _entry()
  assert a.version == _entry().version and len(a.version) == 64
  assert _entry(name="nn_other", when="2020-01-01").version == a.version  # name and provenance: no
  assert _entry(seed=1).version != a.version  # parameters: yes
  assert _entry(config=dataclasses.replace(CFG, mlp_dropout=0.25)).version != a.version  # spec: yes
  leaves = list(a.leaves)
  moved = leaves[0].copy()
  moved.flat[0] = np.nextafter(moved.flat[0], np.inf)
  leaves[0] = moved
  b = Entry(a.name, a.spec, a.provenance, a.structure, tuple(leaves))
  assert b.version != a.version and b != a
  one = Library((a,), (("t", 1),))
  assert one.version != Library((a,), (("t", 2),)).version
  assert Library((_entry(when="later"),), (("t", 1),)).version == one.version


def test_library_equality():
  a, b = _entry("nn_t_1"), _entry("nn_t_2", seed=3)
  assert Library() == Library() and hash(Library()) == hash(Library())
  assert Library((a, b), (("t", 2),)) == Library((b, a), (("t", 2),))
  assert hash(Library((a, b))) == hash(Library((b, a)))
  assert Library((a,)) != Library((b,)) and Library((a,)) != Library((a,), (("t", 1),))
  later = _entry("nn_t_1", when="2020-01-01")
  assert Library((later,)) != Library((a,)) and Library((later,)).version == Library((a,)).version
  with pytest.raises(ValueError, match="two library entries are named nn_t_1"):
    Library((a, later))
  with pytest.raises(KeyError, match="no library function 'nn_x'; the library has nn_t_1"):
    Library((a,))["nn_x"]


# --- saving and loading -----------------------------------------------------------------------------

def test_save_load_round_trip(cs1, tmp_path):
  lib = cs1[-1].added.library
  lib.save(tmp_path / "lib")
  loaded = Library.load(tmp_path / "lib")
  assert loaded == lib and loaded.version == lib.version and loaded.names == lib.names
  assert loaded.counters == lib.counters == (("cs1", 17),)
  assert dict(loaded.types()) == dict(lib.types())
  for name in lib:
    assert loaded[name].version == lib[name].version and loaded[name].provenance == lib[name].provenance
    assert loaded.specs()[name] == lib.specs()[name] and hash(loaded.specs()[name]) == hash(lib.specs()[name])
  assert isinstance(loaded["nn_cs1_2"].variables["params"]["convs"], tuple)  # tuples stay tuples
  for i, step in enumerate(cs1[2:], 2):
    typing = hx.infer(step.added.frozen, loaded.types(), task_type(step.task))
    compiled = compile_program(step.added.frozen, typing, CFG, library=loaded.specs())
    x = inputs(step.task, seed=i)
    np.testing.assert_array_equal(run(compiled, NO_VARIABLES, loaded, x),
                                  run(step.best.compiled, step.best.variables, step.before, x))
  # The numbering goes on where the saved library left it.
  again = loaded.add(cs1[0].best, sequence="cs1", task="t", when=WHEN)
  assert again.library.names[-2:] == ("nn_cs1_18", "nn_cs1_19")
  manifest = json.loads((tmp_path / "lib" / "library.json").read_text())
  assert manifest["format"] == "hx-library" and manifest["format_version"] == 1
  record = manifest["entries"][1]
  data = (tmp_path / "lib" / record["file"]).read_bytes()
  assert record["bytes"] == len(data) and record["sha256"] == hashlib.sha256(data).hexdigest()
  assert Library.load(_saved(Library(), tmp_path / "empty")) == Library()


def test_module_specs_of_every_template_round_trip_exactly(tmp_path):
  cfg = dataclasses.replace(CFG, graph_aggregations=("min", "sum"))
  specs = {
    "nn_step": module_spec(parse_type("Tensor<real>[2] -> Tensor<real>[3] -> Tensor<real>[2]"), cfg),
    "nn_cnn": module_spec(parse_type(f"{IMG} -> Tensor<bool>[3]"), cfg),  # output layer, softmax
    "nn_feat": module_spec(FunctionType(IMG, FEATURES), cfg),  # the paper's CNN without an output layer
    "nn_lstm": module_spec(parse_type("List<Tensor<bool>[1]> -> Tensor<real>[1]"), cfg),
    "nn_kernel": module_spec(parse_type("List<Tensor<real>[2]> -> Tensor<real>[2]"), cfg, role="kernel"),
  }
  entries = []
  for i, (name, spec) in enumerate(specs.items()):
    params, stats = init_module(spec, jax.random.key(i))
    entries.append(Entry.of(name, spec, {"params": params, "batch_stats": stats},
                            Provenance("t", "task", name, None, None, WHEN)))
  loaded = Library.load(_saved(Library(tuple(entries)), tmp_path / "lib"))

  def same_types(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, tuple):
      for x, y in zip(a, b, strict=True):
        same_types(x, y)

  uses = {"nn_step": "fold_l(lib.nn_step, zeros(2))", "nn_cnn": "lib.nn_cnn", "nn_feat": "lib.nn_feat",
          "nn_lstm": "lib.nn_lstm", "nn_kernel": "conv_g(lib.nn_kernel)"}
  for name, spec in specs.items():
    back = loaded.specs()[name]
    assert back == spec and hash(back) == hash(spec)
    same_types(back.hyper, spec.hyper)
    program = hx.parse(uses[name])
    assert (compile_program(program, {}, cfg, library=loaded.specs()).key
            == compile_program(program, {}, cfg, library=specs).key)


def _saved(library: Library, path: Path) -> Path:
  library.save(path)
  return path


def _edit_manifest(path: Path, edit) -> None:
  manifest = json.loads((path / "library.json").read_text())
  edit(manifest)
  (path / "library.json").write_text(json.dumps(manifest))


def _first_array(path: Path) -> Path:
  return path / "arrays" / "nn_t_1.msgpack"


def _truncate(path: Path) -> None:
  f = _first_array(path)
  f.write_bytes(f.read_bytes()[:-7])


def _flip_byte(path: Path) -> None:
  f = _first_array(path)
  data = bytearray(f.read_bytes())
  data[-3] ^= 0x55  # inside the last array's bytes: same length, different content
  f.write_bytes(bytes(data))


def _set(key, value):
  return lambda p: _edit_manifest(p, lambda m: m.__setitem__(key, value))


def _edit_entry(edit):
  return lambda p: _edit_manifest(p, lambda m: edit(m["entries"][0]))


def _change_dropout(record):
  record["spec"]["hyper"] = [[k, 0.25 if k == "dropout" else v] for k, v in record["spec"]["hyper"]]


DAMAGE = {
  "other format version": (_set("format_version", 2), "format version 2; this hx reads version 1"),
  "no format marker": (_set("format", "something-else"), "not an hx library: library.json has no"),
  "truncated array file": (_truncate, "arrays/nn_t_1.msgpack of nn_t_1 is truncated"),
  "altered array bytes": (_flip_byte, "arrays/nn_t_1.msgpack of nn_t_1 is altered: its sha256 is"),
  "missing array file": (lambda p: _first_array(p).unlink(), "arrays/nn_t_1.msgpack of nn_t_1 is missing"),
  "missing library.json": (lambda p: (p / "library.json").unlink(),
                           "not an hx library: it has no library.json"),
  "garbled library.json": (lambda p: (p / "library.json").write_text('{"format": "hx-library", "ent'),
                           "library.json is not valid JSON"),
  "binary library.json": (lambda p: (p / "library.json").write_bytes(b"\xff\xfe\x00"), "is not valid JSON"),
  "library.json not an object": (lambda p: (p / "library.json").write_text("[1, 2]"), "not an hx library"),
  "entry without spec": (_edit_entry(lambda r: r.pop("spec")),
                         "malformed or inconsistent: missing key 'spec'"),
  "spec edited": (_edit_entry(_change_dropout), "entry nn_t_1 has version"),
  "type edited": (_edit_entry(lambda r: r.__setitem__("type", "Tensor<real>[4] -> Tensor<bool>[1]")),
                  "entry nn_t_1 has type Tensor<real>[4]"),
  "file outside the library": (_edit_entry(lambda r: r.__setitem__("file", "../elsewhere.msgpack")),
                               "names file '../elsewhere.msgpack'"),
  "counters edited": (_set("counters", {"t": 9}), "the library has version"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_libraries_are_refused(damage, tmp_path):
  path = _saved(Library((_entry("nn_t_1"), _entry("nn_t_2", seed=2)), (("t", 2),)), tmp_path / "lib")
  assert Library.load(path) is not None
  spoil, message = DAMAGE[damage]
  spoil(path)
  with pytest.raises(LibraryError, match=message.replace("[", r"\[").replace("(", r"\(")) as err:
    Library.load(path)
  assert str(path) in str(err.value) and isinstance(err.value, ValueError)


def test_what_is_not_a_library_is_refused(tmp_path):
  (tmp_path / "random").mkdir()
  (tmp_path / "random" / "notes.txt").write_text("hello")
  (tmp_path / "file").write_text("hello")
  cases = {tmp_path / "random": "not an hx library: it has no library.json",
           tmp_path / "file": "it is not a directory", tmp_path / "absent": "it does not exist",
           tmp_path / "empty": "not an hx library"}
  (tmp_path / "empty").mkdir()
  for path, message in cases.items():
    with pytest.raises(LibraryError, match=message) as err:
      Library.load(path)
    assert err.value.path == str(path) and f"cannot load library {path}: " in str(err.value)


def test_save_never_replaces_what_is_not_a_library(tmp_path):
  lib = Library((_entry(),), (("t", 1),))
  (tmp_path / "random").mkdir()
  (tmp_path / "random" / "notes.txt").write_text("hello")
  (tmp_path / "file").write_text("hello")
  for path in (tmp_path / "random", tmp_path / "file"):
    with pytest.raises(LibraryError, match="cannot save library to .*exists and is not an hx library"):
      lib.save(path)
  assert (tmp_path / "random" / "notes.txt").read_text() == "hello"
  assert (tmp_path / "file").read_text() == "hello"
  (tmp_path / "empty").mkdir()
  assert Library.load(_saved(lib, tmp_path / "empty")) == lib  # an empty directory may become one
  assert Library.load(_saved(lib, tmp_path / "new" / "nested")) == lib  # parents are made
  assert sorted(os.listdir(tmp_path)) == ["empty", "file", "new", "random"]  # no temporary left behind


def _two_libraries():
  old = Library((_entry("nn_t_1"),), (("t", 1),))
  new = Library((_entry("nn_t_1"), _entry("nn_t_2", seed=5)), (("t", 2),))
  return old, new


def test_saving_replaces_a_library_atomically(tmp_path):
  old, new = _two_libraries()
  path = _saved(old, tmp_path / "lib")
  assert Library.load(_saved(new, path)) == new
  assert Library.load(_saved(old, path)) == old
  assert os.listdir(tmp_path) == ["lib"] and sorted(os.listdir(path / "arrays")) == ["nn_t_1.msgpack"]


def test_replacing_without_an_atomic_exchange_moves_the_old_library_aside(tmp_path, monkeypatch):
  def unsupported(a, b):
    raise OSError(errno.ENOSYS, "no renameat2 here")

  monkeypatch.setattr(atomic, "_exchange", unsupported)
  old, new = _two_libraries()
  path = _saved(old, tmp_path / "lib")
  assert Library.load(_saved(new, path)) == new and os.listdir(tmp_path) == ["lib"]


@pytest.mark.parametrize("where", ["writing an array file", "writing library.json", "installing"])
def test_an_interrupted_save_leaves_the_previous_library(where, tmp_path, monkeypatch):
  old, new = _two_libraries()
  path = _saved(old, tmp_path / "lib")
  real_write = atomic.write_new_file

  def write(file, data):
    if (where == "writing an array file" and file.name == "nn_t_2.msgpack"
        or where == "writing library.json" and file.name == "library.json"):
      real_write(file, data[: len(data) // 2])
      raise KeyboardInterrupt  # the process is stopped half way through a file
    real_write(file, data)

  def exchange(a, b):
    raise OSError(errno.EIO, "input/output error")

  monkeypatch.setattr(atomic, "write_new_file", write)
  monkeypatch.setattr(atomic, "_exchange", exchange)
  expected = LibraryError if where == "installing" else KeyboardInterrupt
  with pytest.raises(expected):
    new.save(path)
  assert Library.load(path) == old
  assert os.listdir(tmp_path) == ["lib"]  # the temporary directory is gone


def test_the_temporaries_of_a_killed_save_go_with_the_next_save(tmp_path):
  old, new = _two_libraries()
  path = _saved(old, tmp_path / "lib")
  stale = tmp_path / ".lib.tmp-k1ll3d"  # what a save killed midway leaves
  (stale / "arrays").mkdir(parents=True)
  (stale / "arrays" / "nn_t_2.msgpack").write_bytes(b"half")
  assert Library.load(_saved(new, path)) == new
  assert os.listdir(tmp_path) == ["lib"]


def test_a_library_that_cannot_be_written_is_one_error_naming_the_path(tmp_path):
  (tmp_path / "file").write_text("mine")
  with pytest.raises(LibraryError, match=f"cannot save library to {tmp_path / 'file' / 'lib'}: ") as err:
    Library().save(tmp_path / "file" / "lib")
  assert err.value.path == str(tmp_path / "file" / "lib")


def test_load_points_at_a_library_left_aside_by_an_interrupted_replacement(tmp_path):
  _saved(Library(), tmp_path / ".lib.old-abc123")
  with pytest.raises(LibraryError, match=r"does not exist; an interrupted save left the previous library"):
    Library.load(tmp_path / "lib")


def test_entries_check_what_they_are_given():
  good = _entry()
  with pytest.raises(ValueError, match="identifier"):
    dataclasses.replace(good, name="lib.nn_x")
  with pytest.raises(ValueError, match="the structure has"):
    Entry(good.name, good.spec, good.provenance, good.structure, good.leaves[:-1])
  with pytest.raises(ValueError, match="finite number or None"):
    Provenance("t", "task", "nn_t_1", float("nan"), None, WHEN)
  hidden = json.loads(good.structure)
  with pytest.raises(ValueError, match="do not fit its module"):
    Entry.of("nn_x", good.spec, {"params": {"w": np.zeros(3, np.float32)}, "batch_stats": {}},
             good.provenance)
  assert json.loads(Entry(good.name, good.spec, good.provenance, json.dumps(hidden, indent=2),
                          good.leaves).structure) == hidden
  swapped = jax.tree_util.tree_map(lambda a: a.astype(a.dtype.newbyteorder(">")), good.variables)
  assert Entry.of(good.name, good.spec, swapped, good.provenance) == good  # same values, same version


def test_saving_through_a_symbolic_link_replaces_the_library_it_points_at(tmp_path):
  old, new = _two_libraries()
  _saved(old, tmp_path / "real")
  (tmp_path / "link").symlink_to(tmp_path / "real")
  new.save(tmp_path / "link")
  assert (tmp_path / "link").is_symlink() and Library.load(tmp_path / "link") == new
  assert sorted(os.listdir(tmp_path)) == ["link", "real"]
