"""hx.evaluation: the paper's evaluation (section 4) end to end.

    config = EvalConfig.make("cs1", preset="quick")          # methods, fractions, instances, budgets
    outcome = run(config, "runs/cs1-quick", progress=print)  # records, networks, report.md, plots/
    build_report("runs/cs1-quick")                           # the report again, from the records alone
    write_figures(collect_figures("runs"), "runs/figures")   # error against fraction over every run in runs/
    rebuild_libraries(config, "runs/cs1-quick", after=2)     # HOUDINI's library after task 2, again

A layer above `hx.synth` (HOUDINI) and `hx.baselines`, below the binaries (`hx.bin.run`, `hx.bin.report`,
`hx.bin.figures`).
"""

from hx.evaluation.config import (
  BASELINES,
  GRAPH_SEQUENCES,
  METHODS,
  ConfigError,
  EvalConfig,
  Preset,
  default_methods,
  method_label,
)
from hx.evaluation.fraction_plots import collect_figures, write_figures
from hx.evaluation.records import load_records
from hx.evaluation.report import build_report, summary_lines
from hx.evaluation.runner import EvaluationRun, rebuild_libraries, run
from hx.evaluation.stream_forgetting import rescore_winners
from hx.evaluation.stream_report import write_stream_report

evaluate = run
"""`run` as `hx.evaluate`: every method on every task of a sequence (a paper's or a user's)."""

__all__ = [
    "BASELINES", "GRAPH_SEQUENCES", "METHODS", "ConfigError", "EvalConfig", "Preset",
    "default_methods", "method_label", "load_records", "build_report", "summary_lines", "collect_figures",
    "write_figures", "EvaluationRun", "run",
    "evaluate",
    "rebuild_libraries", "rescore_winners", "write_stream_report",
]
