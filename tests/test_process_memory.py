"""`hx.process_memory`: the resident memory it reports follows what the process really holds."""

import numpy as np

from hx.process_memory import process_memory


def test_resident_memory_grows_by_an_array_touched_and_the_peak_holds_it():
  before = process_memory()
  assert isinstance(before["rss_bytes"], int) and isinstance(before["peak_rss_bytes"], int)
  assert 0 < before["rss_bytes"] <= before["peak_rss_bytes"]
  block = np.ones(64 * 2**20, np.uint8)  # 64 MiB, every page written
  during = process_memory()
  assert during["rss_bytes"] - before["rss_bytes"] >= 60 * 2**20
  assert during["peak_rss_bytes"] >= during["rss_bytes"]
  del block
  after = process_memory()
  assert after["rss_bytes"] < during["rss_bytes"] - 32 * 2**20  # freed back to the system
  # Linux counts resident pages per thread and adds them up every few dozen faults: two readings agree
  # to within a few pages, not exactly.
  assert after["peak_rss_bytes"] >= during["rss_bytes"] - 2**20
