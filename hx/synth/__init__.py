"""hx.synth: the library of neural functions, top-down and evolutionary search, `synthesize`, and the
lifelong runner::

    library = hx.Library()
    config = hx.synth.SynthesisConfig(strategy=hx.synth.TopDown(), budget=hx.synth.Budget(candidates=20))
    frontier = hx.synthesize(task, library, config)    # a Frontier: the ranked candidates, the library
    for candidate in hx.synth.enumerate(task.type, frontier.library, limit=10):  # the order, untrained
      print(candidate)
    run = hx.synth.run_sequence(hx.data.sequence("cs1"), "runs/cs1", config)
"""

from hx.synth.config import Budget, SynthesisConfig
from hx.synth.evolution import EvolutionConfig, Generation, evolve
from hx.synth.executors import (
  Checkpoints,
  Executor,
  ExecutorSettings,
  Job,
  JobResult,
  Local,
  LocalExecutor,
  Processes,
  Ray,
  TaskContext,
  default_executor,
  job_seed,
  train_program,
)
from hx.synth.frontier import Frontier, FrontierEntry
from hx.synth.library import FORMAT_VERSION, Added, Entry, Library, LibraryError, Provenance, Trained
from hx.synth.lifelong import SequenceRun, SettingsMismatch, run_sequence
from hx.synth.predict import Predictor
from hx.synth.saved_run import RunProgram, SavedRun, load_run
from hx.synth.schedules import CheapFirst, Estimate, Halving, ToEnd, parse_schedule
from hx.synth.space import (
  COMBINATORS,
  ORDERS,
  Candidate,
  Costs,
  SearchSpace,
  equivalence_key,
  normal_form,
  paper_space,
)
from hx.synth.strategies import Evolutionary, Strategy, TopDown
from hx.synth.synthesize import synthesize, task_context
from hx.synth.topdown import EnumerationStats, enumerate_programs

enumerate = enumerate_programs  # noqa: A001 -- the short name users call: hx.synth.enumerate(...)

__all__ = [
    "FORMAT_VERSION", "Added", "Entry", "Library", "LibraryError", "Provenance", "Trained",
    "COMBINATORS", "ORDERS", "Candidate", "Costs", "SearchSpace", "equivalence_key", "normal_form",
    "paper_space",
    "EnumerationStats", "enumerate", "enumerate_programs",
    "EvolutionConfig", "Generation", "evolve", "Strategy", "TopDown", "Evolutionary",
    "Checkpoints", "Executor", "Job", "JobResult", "LocalExecutor", "TaskContext", "job_seed",
    "train_program", "ExecutorSettings", "Local", "Processes", "Ray", "default_executor",
    "ToEnd", "Halving", "Estimate", "CheapFirst", "parse_schedule",
    "Budget", "SynthesisConfig", "Frontier", "FrontierEntry", "synthesize", "task_context",
    "SequenceRun", "SettingsMismatch", "run_sequence",
    "Predictor", "RunProgram", "SavedRun", "load_run",
]
