"""hx.baselines: the paper's baselines, trained by the same Tune as HOUDINI's candidates.

    from hx import baselines
    r = baselines.standalone(task, config, tune_config, seed=0)      # a new network per task
    r = baselines.llt(task, earlier, config, tune_config, seed=0)    # low-level transfer
    r = baselines.pnn(task, columns, config, tune_config, seed=0)    # progressive neural networks
    r = baselines.from_scratch(task, program, types, lib_types, ...)  # standalone_with_fold
    r, state = baselines.continual("replay", task, state, config, tune_config, seed=0)  # or "ewc"

The architectures (`networks`): MLP ∘ CNN for image tasks, MLP ∘ MLP for vector tasks, RNN(map(MLP ∘ E))
for list tasks (hx programs; E the image's CNN or the vector's MLP), and for graph tasks an LSTM over
the row-wise flattened grid of a regressor's outputs (`graph`); low-level transfer is in `llt`,
progressive networks in `pnn`, experience replay and EWC over a trunk shared per input kind with a head
per task in `continual`. `refusal` says, before anything trains, which task of a sequence a
baseline cannot take. This layer knows nothing of
search: standalone_with_fold is handed the program to train.
"""

from hx.baselines.continual import CONTINUAL, ContinualSettings, ContinualState, rescore, rescore_networks
from hx.baselines.continual import footprint as continual_footprint
from hx.baselines.continual import learn as continual_learn
from hx.baselines.networks import (
  CNN,
  ENC,
  MLP,
  RNN,
  Architecture,
  Network,
  NetworkError,
  architecture,
  count_parameters,
  element_type,
  load_network,
  save_network,
)
from hx.baselines.train import (
  BASELINES,
  BaselineResult,
  EwcChoice,
  choose_ewc_strength,
  continual,
  from_scratch,
  llt,
  pnn,
  refusal,
  standalone,
)

__all__ = [
    "CNN", "ENC", "MLP", "RNN", "Architecture", "Network", "NetworkError", "architecture", "count_parameters",
    "element_type", "load_network", "save_network", "BASELINES", "BaselineResult", "from_scratch", "llt",
    "pnn", "refusal", "standalone", "continual", "choose_ewc_strength", "EwcChoice", "ContinualSettings",
    "ContinualState", "rescore", "rescore_networks", "CONTINUAL", "continual_learn",
    "continual_footprint",
]
