"""hx.data: raw data sets (MNIST, smallNORB, GTSRB and their offline stand-ins), the paper's ten tasks and
its seven task sequences. The training settings of each task kind are in `hx.presets`.

    >>> from hx import data
    >>> print(data.sequence("cs1", seed=0))        # its tasks and their types; no data built yet
    >>> task = data.sequence("cs1", seed=0).build(2)  # count_digit(0) with its splits
"""

from hx.data.errors import DataError, DataFormatError, DataNotFoundError
from hx.data.imageset import TEST, TRAIN, VAL, ImageSet
from hx.data.sequences import AUTHORS_DIGIT_PAIRS, SEQUENCES, Sequence, TaskStream, sequence
from hx.data.sources import SIGN_ROLES, Sources, digits, signs, toys
from hx.data.streams import (
  STREAM_GROUPS,
  StreamSettings,
  StreamTask,
  StreamTraining,
  long_stream,
  stream_plan,
)
from hx.data.task import ArrayTaskSpec, task_from_arrays
from hx.data.tasks import (
  CELL_COSTS,
  DISTANCE_BOUND,
  FRACTIONS,
  GRAPH_FAMILIES,
  KINDS,
  START_DISTANCE,
  Task,
  TaskSizes,
  TaskSpec,
  build_task,
  read_data_sets,
  regression_targets,
  task_spec,
)
from hx.data.tfds import tfds_split

__all__ = [
    "DataError", "DataFormatError", "DataNotFoundError", "ImageSet", "TRAIN", "VAL", "TEST",
    "ArrayTaskSpec", "task_from_arrays", "AUTHORS_DIGIT_PAIRS", "SEQUENCES", "Sequence", "TaskStream",
    "sequence", "SIGN_ROLES", "Sources", "digits", "signs",
    "toys", "CELL_COSTS", "DISTANCE_BOUND", "FRACTIONS", "GRAPH_FAMILIES", "KINDS",
    "START_DISTANCE", "Task", "TaskSizes", "TaskSpec", "build_task", "read_data_sets", "regression_targets",
    "task_spec", "tfds_split", "STREAM_GROUPS", "StreamSettings", "StreamTraining", "StreamTask",
    "long_stream", "stream_plan",
]
