"""A synthesis's result, after DreamCoder's frontier (the programs searched for one task): `Frontier`, the
whole synthesis of a task, and `FrontierEntry`, one candidate program of it with its training's
`hx.compile.fitting.Outcome`.

    frontier = hx.synthesize(task, library, config, seed=0)
    best = frontier.best                                  # a FrontierEntry: the winner
    print(best.display, best.outcome.val_score, best.outcome.test_score)
    library = frontier.library                            # the winner's fresh functions frozen in

A frontier is also what a run's record holds, in one form written and read here only: `Frontier.to_json`
gives the synthesis's fields of a record (`hx.synth.lifelong.record` adds where it stands: the sequence,
the task, the fraction, the data) and `FrontierEntry.to_json` each item of its "ranked" list;
`Frontier.from_json` and `FrontierEntry.from_json` read them back, checked against the record's schema
(`hx.synth.jsonfiles.RECORD`, `RANKED`), with no variables and no library (a record holds neither), so
that a record read back and written again is the same JSON. A baseline's record
(`hx.evaluation.records.baseline_record`) holds its network as a "ranked" list of one entry in the short
form of the same function (`FrontierEntry.fresh_types` None), so that readers read both alike.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from hx.compile.fitting import Outcome, ReadsOutcome, score_json
from hx.lang import program as P
from hx.lang.parser import parse
from hx.lang.types import Type, parse_type
from hx.synth.jsonfiles import RANKED, RECORD, from_jsonable
from hx.synth.topdown import EnumerationStats

if TYPE_CHECKING:
  from hx.compile.modules import ModuleConfig
  from hx.jsonread import JsonValue
  from hx.synth.library import Added, Library
  from hx.synth.predict import Predictor

__all__ = ["FrontierEntry", "Frontier", "METRIC_WORDS", "library_size"]

METRIC_WORDS = {"error": "classification error (%), lower is better", "rmse": "RMSE, lower is better"}
"""A task's metric (`hx.lang.objectives.Objective.metric`) in words, as a synthesis's summary names it."""


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class FrontierEntry(ReadsOutcome):
  """One candidate program of a synthesis, as ranked and recorded.

  Its training's outcome is the field `outcome` (`hx.compile.fitting.Outcome`), read as it is
  (`entry.outcome.test_score`); as a synthesis reports it:

    - status: "trained", "failed", "equivalent" (not trained: it computes what an earlier candidate
      does, which the reason names) or "estimated" (not trained to the end: under an `Estimate` schedule,
      its estimate was not among the best; under `Halving(val_examples=...)`, halving stopped it before
      the last rung; under `CheapFirst`, its probe was behind the cheap candidates, or its halving rungs
      stopped it; `estimate` holds its score).
    - reason: why it failed, which program it is equivalent to, or why it was not trained to the end.
    - val_score, test_score: scores (the task's metric, lower is better); nan / None if none.
    - variables: the trained variables, kept for the synthesis's first `keep` ranks only (else None; always
      None read back from a record).
    - seconds: its wall time (training, scoring, compiling); compile_seconds, train_seconds, eval_seconds
      split it.
    - epochs_run: epochs it trained (fewer than the task's when early stopping or halving stopped it; 0 for
      one an `Estimate` schedule did not train to the end).
    - state: always None (nothing of a synthesis resumes from its result).

  Attributes:
    rank: 1 for the winner (among trained candidates by validation score, failed ones last).
    program: the program as the search built it, its fresh functions nn_1, nn_2, ... (what a record's
      "program" holds). In a baseline's entry, the network's description: text in a program's style that
      hx need not parse (e.g. "pnn(column 2 of 2: compose(nn_mlp, nn_cnn))").
    outcome: its training (above).
    named: the program with its fresh functions named as the library names them (nn_<sequence>_<k>, as
      the paper's tables number them: the winner's are the library's new entries), for the ranks the
      synthesis reports (`keep`) when it extended the library; else None. A baseline's: its description.
    fresh_types: each fresh function's type, by its name in `program`; None in a baseline's entry, which
      is what makes its record item the short form (`to_json`).
    order: its place in the search's order (0 first; -1 for an equivalent program, never trained).
    val_history: the validation score after each full epoch trained, from the first (the outcome's
      `val_history`; read back from a record, the record's, since a record holds no epochs' records).
    estimate: under an `Estimate` schedule, its estimated validation score (`hx.synth.schedules.estimate`:
      the task's metric on a validation subsample; nan if none), for every candidate, trained or not; under
      `Halving(val_examples=...)`, a stopped candidate's best score on the subsample; under `CheapFirst`,
      a stopped candidate's best validation score when it stopped (after its probe, or at a rung).
    estimate_method: "short", "head", "halving" or "probe", the estimate it got; None without one.
    estimate_seconds: the estimate's wall time (part of the outcome's `seconds`).
    estimate_epochs: epochs of training the estimate ran (a short run's; not in `epochs_run`).
  """
  rank: int
  program: P.Program | str
  outcome: Outcome
  named: P.Program | str | None = None
  fresh_types: dict[str, Type] | None = None
  order: int = -1
  val_history: tuple[float, ...] = ()
  estimate: float = math.nan
  estimate_method: str | None = None
  estimate_seconds: float = 0.0
  estimate_epochs: float = 0.0

  @property
  def display(self) -> P.Program | str:
    """The program as a reader is shown it: `named` where the library names its functions, else
    `program`."""
    return self.program if self.named is None else self.named

  @property
  def display_types(self) -> dict[str, Type] | None:
    """`fresh_types` by the names of `display` (None in a baseline's entry)."""
    if self.fresh_types is None or self.named is None:
      return None if self.fresh_types is None else dict(self.fresh_types)
    # A synthesis's candidate (fresh_types given): both are programs, their fresh functions in one order.
    return {new: self.fresh_types[old]
            for old, new in zip(P.fresh_names(self.program), P.fresh_names(self.named))}

  def __str__(self) -> str:
    o = self.outcome
    test = "-" if o.test_score is None else f"{o.test_score:.4g}"
    return (f"{self.rank:3d}. {self.display}  val {o.val_score:.4g} test {test}  "
            f"[{o.status}{': ' + o.reason if o.reason else ''}]")

  def to_json(self) -> dict[str, JsonValue]:
    """This entry as a record's "ranked" item holds it: "rank", "program", "named", the outcome's
    "status", "reason", "val" and "test" (`hx.compile.fitting.score_json`) and "seconds"; then, for a
    synthesis's candidate (not a baseline's network, whose `fresh_types` is None), "fresh_types", the
    outcome's "compile_seconds", "train_seconds", "eval_seconds" and "epochs_run", "order",
    "val_history" and, under an estimate (`estimate_method` not None), "estimate", "estimate_method",
    "estimate_seconds" and "estimate_epochs"."""
    o = self.outcome
    short = {"rank": self.rank, "program": str(self.program),
             "named": None if self.named is None else str(self.named), "status": o.status, "reason": o.reason,
             "val": score_json(o.val_score), "test": score_json(o.test_score), "seconds": o.seconds}
    if self.fresh_types is None:
      return short
    return {
        **short, "fresh_types": {n: str(t) for n, t in self.fresh_types.items()},
        "compile_seconds": o.compile_seconds, "train_seconds": o.train_seconds,
        "eval_seconds": o.eval_seconds, "order": self.order, "epochs_run": o.epochs_run,
        "val_history": list(self.val_history),
        # Under an estimate only (records without one keep the fields they had).
        **({} if self.estimate_method is None else {
            "estimate": score_json(self.estimate), "estimate_method": self.estimate_method,
            "estimate_seconds": self.estimate_seconds, "estimate_epochs": self.estimate_epochs})}

  @staticmethod
  def from_json(item: dict, rank: int = 1) -> FrontierEntry:
    """The entry a record's "ranked" item `item` holds (`to_json`'s inverse: `from_json(x).to_json() == x`
    for every item hx writes), without variables. A synthesis's candidate (an item with "fresh_types")
    gets its programs and types parsed; a baseline's network (an item without) keeps its description as
    text. A field an older record lacks takes its default; `rank` is the rank of an item without one.

    Raises:
      hx.jsonread.Invalid (a ValueError): `item` does not fit `hx.synth.jsonfiles.RANKED` (the message
        says where), or a program or type that does not parse.
    """
    RANKED(item, "ranked item")
    outcome = Outcome(status=item["status"], reason=item.get("reason"), val_score=_score(item.get("val")),
                      test_score=_score_or_none(item["test"]), epochs_run=item.get("epochs_run", 0),
                      compile_seconds=item.get("compile_seconds", 0.0),
                      train_seconds=item.get("train_seconds", 0.0),
                      eval_seconds=item.get("eval_seconds", 0.0), seconds=item.get("seconds", 0.0))
    estimate = {}
    if item.get("estimate_method") is not None:
      estimate = {"estimate": _score(item.get("estimate")), "estimate_method": item["estimate_method"],
                  "estimate_seconds": item.get("estimate_seconds", 0.0),
                  "estimate_epochs": item.get("estimate_epochs", 0.0)}
    program, named, fresh = item["program"], item["named"], item.get("fresh_types")
    if fresh is not None:  # a synthesis's candidate: programs as the search and the library built them
      program, named = parse(program), None if named is None else parse(named)
      fresh = {n: parse_type(t) for n, t in fresh.items()}
    return FrontierEntry(rank=item.get("rank", rank), program=program, outcome=outcome, named=named,
                         fresh_types=fresh, order=item.get("order", -1),
                         val_history=tuple(item.get("val_history", ())), **estimate)


def _score(x: JsonValue) -> float:
  """A recorded score as a float: "nan" and the infinities from their text, None (not scored) nan."""
  return math.nan if x is None else float(x)


def _score_or_none(x: JsonValue) -> float | None:
  return None if x is None else float(x)


@dataclasses.dataclass(frozen=True, eq=False)
class Frontier:
  """A synthesis of one task: what `hx.synthesize` returns, and what a run's record holds of it
  (`to_json`, `from_json`).

  Attributes:
    task: the task's name.
    strategy: the strategy's name (`Strategy.name`): "topdown" or "evolutionary".
    entries: every candidate considered, best first (trained by validation score, then those an
      `Estimate` schedule did not train to the end by their estimate, then failed, then equivalent ones).
    library: the library extended with the winner's fresh functions (the input library if nothing
      trained, or the winner has no fresh function); None read back from a record.
    added: the `hx.synth.Added` of that extension, or None (always None read back from a record).
    search_seconds: time spent proposing programs; compile_seconds, train_seconds, eval_seconds: summed
      over candidates; wall_seconds: the whole call.
    candidates_trained: candidates handed to the executor (under an `Estimate` schedule, every candidate
      estimated, whether trained to the end or not).
    enumeration: the top-down search's counters (None for evolution).
    estimate_seconds: the estimates' wall time, summed over candidates (part of the other sums for
      short runs).
    no_program: where the search proposed no candidate, why a single fresh function of the task's type
      cannot be built (`hx.compile.module_spec`'s reason), else None (not recorded: None read back).
    offered: under `SearchSpace.library_tasks`, the names of the library functions the search was
      offered (`hx.synth.prior.offered_library`; their choice is in `search_seconds`) when they were a
      part of the library; None when it was offered the whole library.
    module_config: the `hx.compile.ModuleConfig` the candidates were built with (what `predictor`
      compiles them with again); None read back from a record (a run's settings.json holds it).
    metric: what the scores are: "error" (classification error, %) or "rmse" (the task's objective's);
      None where unknown.
    shortfall: why fewer candidates were trained than `Budget.candidates` asked for, with the size of the
      space searched (also logged as a warning); None where the budget was spent (not recorded: None read
      back).
  """
  task: str
  strategy: str
  entries: tuple[FrontierEntry, ...]
  library: Library | None
  added: Added | None
  search_seconds: float
  compile_seconds: float
  train_seconds: float
  eval_seconds: float
  wall_seconds: float
  candidates_trained: int
  enumeration: EnumerationStats | None = None
  estimate_seconds: float = 0.0
  no_program: str | None = None
  offered: tuple[str, ...] | None = None
  module_config: ModuleConfig | None = dataclasses.field(default=None, repr=False)
  metric: str | None = None
  shortfall: str | None = None

  def predictor(self, rank: int = 1, batch_size: int = 1024) -> Predictor:
    """The candidate ranked `rank` (1: the winner) as a jitted, batched function of new inputs in
    `hx.Task.from_arrays`' layout: an `hx.synth.predict.Predictor` (its docstring gives the outputs),
    its program as `FrontierEntry.display` names it.

    Raises:
      ValueError: no such rank, or one that did not train or kept no variables (ranks beyond `keep`),
        or a frontier read back from a record (no library, no variables).
    """
    from hx.synth.predict import predictor

    if not 1 <= rank <= len(self.entries):
      raise ValueError(f"{self.task} ranked {len(self.entries)} candidates; there is no rank {rank}")
    e = self.entries[rank - 1]
    if e.outcome.status != "trained":
      raise ValueError(f"rank {rank} of {self.task}, {e.display}, did not train ({e.outcome.status}: "
                       f"{e.outcome.reason})")
    if e.outcome.variables is None or self.library is None:
      raise ValueError(f"rank {rank} of {self.task}, {e.display}, kept no variables: a synthesis keeps "
                       "those of its `keep` best candidates only, and a record none")
    return predictor(e.display, self.library, fresh_types=e.display_types, variables=e.outcome.variables,
                     module_config=self.module_config, batch_size=batch_size)

  @property
  def best(self) -> FrontierEntry:
    """The winner.

    Raises:
      ValueError: no candidate trained (the message says why: none proposed, or the first reasons).
    """
    if not self.entries or self.entries[0].outcome.status != "trained":
      if not self.entries:
        why = f"the search proposed no program: {self.no_program or 'no library function fits its type'}"
      else:
        reasons = sorted({e.outcome.reason for e in self.entries if e.outcome.reason})
        why = f"{len(self.entries)} tried; " + ("; ".join(reasons[:3]) or "none finished")
      raise ValueError(f"no candidate of {self.task} trained successfully ({why})")
    return self.entries[0]

  @property
  def trained(self) -> tuple[FrontierEntry, ...]:
    """The entries that trained, best first."""
    return tuple(e for e in self.entries if e.outcome.status == "trained")

  def __repr__(self) -> str:
    # A summary: the dataclass's own repr would print the library's every trained weight.
    trained = self.trained
    best = f"best {trained[0].display}" if trained else "no candidate trained"
    scores = f"; scores: {METRIC_WORDS.get(self.metric, self.metric)}" if self.metric else ""
    count = _count(self.candidates_trained, "candidate")
    return f"Frontier({self.task}: {self.strategy}, {count} in {self.wall_seconds:.1f} s, {best}{scores})"

  def __str__(self) -> str:
    top = 5
    lines = [repr(self)] + ([f"  ({self.shortfall})"] if self.shortfall else []) + [
        str(e) for e in self.entries[:top]]
    if len(self.entries) > top:
      lines.append(f"  ... {len(self.entries) - top} more")
    return "\n".join(lines)

  def to_json(self) -> dict[str, JsonValue]:
    """The synthesis's fields of a run's record (`hx.synth.lifelong.record`): "strategy",
    "candidates_trained", "enumeration" (top-down only), "library_offered" (where the search was offered
    a part of the library), "library_after" (the library's version) and "library_after_size"
    (`library_size`), "seconds" ({"search", "compile", "train", "eval", "wall"}) and "ranked" (each
    entry's `FrontierEntry.to_json`).

    Raises:
      ValueError: a frontier without its library (read back from a record: the record holds it already).
    """
    if self.library is None:
      raise ValueError(f"the synthesis of {self.task} has no library (read back from a record): its record "
                       "holds what it wrote")
    return {
        "strategy": self.strategy, "candidates_trained": self.candidates_trained,
        # What the search did and what the library holds after the task: for the growth of search and memory
        # along a long sequence (`hx.evaluation.stream_metrics`).
        **({} if self.enumeration is None else {"enumeration": dataclasses.asdict(self.enumeration)}),
        # The library functions a bounded search was offered (SearchSpace.library_tasks), when a part.
        **({} if self.offered is None else {"library_offered": list(self.offered)}),
        "library_after": self.library.version, "library_after_size": library_size(self.library),
        "seconds": {"search": self.search_seconds, "compile": self.compile_seconds,
                    "train": self.train_seconds, "eval": self.eval_seconds, "wall": self.wall_seconds},
        "ranked": [e.to_json() for e in self.entries],
    }

  @staticmethod
  def from_json(record: dict) -> Frontier:
    """The synthesis a run's record holds (`hx.synth.lifelong.record`): its task, strategy, entries
    (`FrontierEntry.from_json`), seconds, counters, offered functions and metric; no library, no
    variables, and what a record does not hold (`no_program`, `shortfall`, `module_config`) None. Its
    `estimate_seconds` is the sum of its entries'.

    Raises:
      hx.jsonread.Invalid (a ValueError): `record` does not fit `hx.synth.jsonfiles.RECORD` (the message
        says where), or is a baseline's (no "strategy": not a synthesis).
    """
    RECORD(record, "")
    if "strategy" not in record:
      raise ValueError(f"the record of {record['task']} holds no synthesis (no strategy: a baseline's?)")
    seconds = record["seconds"]
    entries = tuple(FrontierEntry.from_json(x, rank=k) for k, x in enumerate(record["ranked"], 1))
    enumeration = record.get("enumeration")
    offered = record.get("library_offered")
    return Frontier(
        task=record["task"], strategy=record["strategy"], entries=entries, library=None, added=None,
        search_seconds=seconds.get("search", 0.0), compile_seconds=seconds.get("compile", 0.0),
        train_seconds=seconds.get("train", 0.0), eval_seconds=seconds.get("eval", 0.0),
        wall_seconds=seconds["wall"], candidates_trained=record.get("candidates_trained") or 0,
        enumeration=None if enumeration is None else from_jsonable(EnumerationStats, enumeration,
                                                                   "enumeration"),
        estimate_seconds=sum(e.estimate_seconds for e in entries),
        offered=None if offered is None else tuple(offered), metric=record["metric"])


def library_size(library: Library) -> dict[str, int]:
  """{"functions", "parameters", "bytes"} of `library`: its entries, their trainable parameters, and the
  bytes of all their arrays (parameters and batch statistics) in memory."""
  import jax

  params = [leaf for e in library.entries for leaf in jax.tree.leaves(e.variables["params"])]
  return {"functions": len(library), "parameters": int(sum(leaf.size for leaf in params)),
          "bytes": int(sum(leaf.nbytes for e in library.entries for leaf in e.leaves))}


def _count(n: int, noun: str) -> str:
  """"1 candidate", "2 candidates"."""
  return f"{n} {noun}{'' if n == 1 else 's'}"
