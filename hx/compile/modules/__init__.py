"""Neural module templates: a fresh function's architecture follows from its type (paper, appendix C).

Templates (B below is the number of rows a module is called on; types exclude that axis):

  mlp           one or two non-image tensors -> tensor. The arguments are flattened and concatenated
                (a fold step `S -> A -> S` takes (state, element)); Dense(hidden) -> masked batch norm ->
                ReLU -> dropout -> Dense(prod(output shape)) -> output activation.
  cnn           image `Tensor<real>[C][H][W]` (channel-first) -> tensor. Per channel size c in
                `cnn_channels`: conv k x k (stride 1, no padding) -> ReLU -> 2x2 max-pool (floor); then
                spatial dropout (whole channels) after the last block; features flattened in (H, W, C)
                order. In training on a CPU each block runs hx's own kernels where they apply
                (`hx.compile.conv_pool`: the paper's 32 and 64 channels); otherwise under YNNPACK's
                convolutions the rows are run in unrolled slices (same values and gradients, much
                faster there; see `hx.compile.cnn_blocks` and `hx.cpu_convolutions`).
                The paper's CNN has no output layer: when the output type is exactly
                `Tensor<real>[F]` with F the feature size (64*4*4 = 1024 for 28x28 inputs) the features are
                the output. Otherwise a linear output layer Dense(F -> prod(output shape)) and the output
                activation are added.
  lstm          `List<T>` (T a non-image tensor, flattened) -> tensor: an LSTM (hidden `lstm_hidden`,
                forget-gate bias 1, gates i, f, g, o) run over the valid prefix of each list, then
                Dense(last valid hidden state) -> output activation. An empty list gives the zero state.
  graph_kernel  `List<T> -> U` in the kernel position of conv_g / conv_l (role="kernel"). The list's first
                element is the node itself (conv_g puts u first; conv_l puts the window's centre first).
                Per pair (self, element_j) for every valid j (self included):
                  m_j = Dense(M) . ReLU . Dense(graph_hidden) (concat(self, element_j)),
                aggregated over the valid j with masked reductions (`graph_aggregations`, default min,
                max, mean, concatenated), then
                  out = activation(Dense(U) . ReLU . Dense(graph_hidden) (concat(self, aggregates))).
                This expresses Bellman-Ford relaxation on a (cost, distance) node state exactly, in
                hx.data.grids' convention (a path costs the sum of its cells' costs, both ends
                included): m_j = d_j, agg = min_j m_j, out = (w_self, d_self - relu(d_self - w_self -
                agg)) = (w, min(d, w + min_j d_j)); see `relaxation_params` in
                tests/compile/lowering_helpers.py for the weights. No batch norm and no dropout.
                With `ModuleConfig.graph_update="residual"` (ours, not the paper's) and an output type
                equal to the element type, out = activation(self + Dense(U) . ReLU . Dense(...)(...)),
                the last Dense starting at zero: a fresh kernel is the identity, whose fixed point is
                its input (a random replacing kernel is a contraction that forgets it), and a kernel
                that leaves a settled node unchanged needs only a zero update.
                Its input comes in one of two forms, one function with the same parameters: a ListBatch
                of lists (R, K, ...) (conv_l's windows), reduced over the K axis; or `Neighbourhoods`, R
                nodes and the edges into them (conv_g, on a neighbour table or on edge lists): the pair
                network runs once per edge (receiver as self, sender as element j) and once per node for
                its self pair, and the reductions are segment operations (`jax.ops.segment_min` /
                `segment_max` / `segment_sum`) over the receivers.

  slot_kernel   `List<T> -> U` in the kernel position of conv_g / conv_l when `ModuleConfig.graph_kernel` is
                "slots": a network over the neighbour list in its slot order, as the authors' grid kernel
                (their `NetGRAPHNew`: a 3x3 convolution with its corners held at zero over the (cost,
                distance) grid, then 1x1 convolutions of 100 channels, ReLU after each, then a 1x1
                convolution to the new distance). With K = `graph_slots` slots (a grid's neighbour table:
                the node, up, down, left, right; `hx.data.grids`) and H = `graph_slot_hidden`:
                  h = ReLU(Dense(H)(concat(x_1 .. x_K, m_1 .. m_K))), then `graph_slot_layers` - 1 times
                  h = ReLU(Dense(H)(h)), out = activation(Dense(U)(h)),
                x_k the k-th entry of the list (zero where the slot is empty: the authors' zero padding)
                and m_k 1 where it is filled (ours: so that a value 0 and an empty slot differ). The slots
                are directions, so the kernel tells a cell's up neighbour from its down one and a grid's
                corners apart (the start of a shortest-path grid is the top-left one), which no
                order-invariant reduction can. With `graph_update="residual"` and U the element type,
                out = activation(x_1 + Dense(U)(h)), the last Dense starting at zero. Only on neighbour
                lists whose slots mean something (a grid's table, conv_l's windows of K elements): edge
                lists have no slot order and are refused. No batch norm, no dropout. Its layers start
                as PyTorch's do (uniform in +-1/sqrt(fan in), biases too: the authors'), except a
                residual kernel's last, which starts at zero.

  Both kernels, where their output type is their element type, pass the first `graph_keep` components
  of the node's own value through unchanged (the authors' grid kernel passes the cost through and
  predicts only the distance): their last Dense then produces the other components alone, replaced or
  added to the node's (`graph_update`).

  user          a module of the user's own, registered for one exact function type with `register_module`
                (a flax linen Module, or an init/apply pair of pure functions): it takes precedence over
                the templates above for fresh functions of exactly that type. Its parameters are the
                user's (no batch statistics: stats {}), it sees no mask, dropout keys or training flag
                (a pure function of its parameters and inputs), and hx applies the output type's
                activation to what it returns, as for the other templates.

Output activation from the output type: `Tensor<bool>[1]` sigmoid, `Tensor<bool>[k]` (k > 1) softmax
over the k entries, any other bool shape elementwise sigmoid, `real` none.

Batch norm uses masked statistics: only rows whose mask is True enter the batch mean and (biased)
variance, so padding never changes a statistic; running statistics are updated as
`momentum * old + (1 - momentum) * batch` only when at least one row is valid. Dropout draws its
randomness per row from a per-row key (see `hx.compile.lower`), so a valid row's dropout mask does not
depend on how much padding sits beside it. Frozen (library) modules always run in inference mode.

Parameters are plain nested dicts of arrays; the static structure lives in the hashable `ModuleSpec`.
Each template is written in one place, a file of this package (`mlp`, `cnn`, `lstm`, `graph_kernel`,
`slot_kernel`, `user`): its initialisation, its application (JAX, R rows) and its float64 NumPy
reference (one example, for `hx.compile.reference`), gathered in the table `TEMPLATES` (`templates`) with
the name of its linear output layer (`set_output_bias`); the user's modules go through `USER_TEMPLATE`,
outside that table. The other files: `spec` (`ModuleSpec`), `config` (`ModuleConfig`), `choice`
(`module_spec`: which template a type gets), `registry` (`register_module`: the user's modules),
`layers` (the JAX layers the templates share) and `reference_layers` (their float64 NumPy
counterparts). How the CNN's blocks run on a CPU (hx's kernels, or YNNPACK's convolutions in slices)
is `hx.compile.cnn_blocks`, beside the kernels. This file defines nothing: it gathers the package's
names, and keeps the paths that pickles written before the package name (`ModuleConfig`,
`_config_with_modules`, `ModuleSpec`, `Registration`) and the names tests and benchmarks reach for.
"""

from hx.compile.cnn_blocks import CNN_MAX_SLICES as CNN_MAX_SLICES
from hx.compile.cnn_blocks import CNN_SLICE_WINDOW_FLOATS as CNN_SLICE_WINDOW_FLOATS
from hx.compile.cnn_blocks import CNN_TRAIN_ROWS as CNN_TRAIN_ROWS
from hx.compile.cnn_blocks import _cnn_blocks as _cnn_blocks
from hx.compile.cnn_blocks import _cnn_kernels as _cnn_kernels
from hx.compile.cnn_blocks import _cnn_slice_rows as _cnn_slice_rows
from hx.compile.cnn_blocks import _cnn_slices as _cnn_slices
from hx.compile.modules.choice import module_spec
from hx.compile.modules.cnn import cnn_feature_size, cnn_features, cnn_layout
from hx.compile.modules.config import GRAPH_KERNELS, ModuleConfig
from hx.compile.modules.config import _config_with_modules as _config_with_modules
from hx.compile.modules.graph_kernel import _RECOMPUTED as _RECOMPUTED
from hx.compile.modules.graph_kernel import Neighbourhoods
from hx.compile.modules.layers import PRECISION, Rows, activate, apply_dense, batch_norm, matmul, row_dropout
from hx.compile.modules.lstm import lstm_scan
from hx.compile.modules.mlp import mlp_layers
from hx.compile.modules.registry import (
  Registration,
  UnregisteredModuleError,
  register_module,
  registered_modules,
  registration_of,
  unregister_module,
)
from hx.compile.modules.spec import ModuleSpec, NoTemplateError, UnresolvedTypeError
from hx.compile.modules.templates import (
  TEMPLATES,
  USER_TEMPLATE,
  Template,
  apply_module,
  init_module,
  linear_output,
  reference_module,
  set_output_bias,
)

__all__ = [
  "GRAPH_KERNELS", "ModuleConfig", "ModuleSpec", "NoTemplateError", "UnresolvedTypeError", "module_spec",
  "init_module", "apply_module", "Rows", "reference_module", "cnn_feature_size", "cnn_layout", "cnn_features",
  "Template", "TEMPLATES", "USER_TEMPLATE",
  "linear_output", "set_output_bias", "mlp_layers", "lstm_scan", "Neighbourhoods", "apply_dense", "activate",
  "batch_norm", "row_dropout", "PRECISION", "matmul",
  "Registration", "UnregisteredModuleError", "register_module", "registered_modules", "unregister_module",
  "registration_of",
]
