"""The batched values programs run on, and the split format Tune consumes: `hx.lang.values` (NumPy only),
re-exported here under the name the compile layer has always used."""

from hx.lang.values import (
  ELEMENT_BATCHES,
  EdgeGraphBatch,
  GraphBatch,
  GraphLayouts,
  ListBatch,
  SharedGraphs,
  Split,
  check_graphs,
  edges_from_table,
  gather,
  images_per_example,
  index_dtype,
  num_examples,
  pack_graphs,
  real_elements,
  rows,
  size_bucket,
  table_from_edges,
  take,
)

__all__ = ["ListBatch", "GraphBatch", "EdgeGraphBatch", "GraphLayouts", "SharedGraphs", "Split", "gather",
           "take", "rows", "num_examples", "images_per_example", "real_elements", "index_dtype",
           "ELEMENT_BATCHES",
           "edges_from_table", "table_from_edges", "check_graphs", "pack_graphs", "size_bucket"]
