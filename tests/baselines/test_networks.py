"""Saved baseline networks: written as libraries are (atomic, synced, with a checksum), and a damaged file
is refused with its path rather than loaded."""

import json
import os

import jax
import numpy as np
import pytest

from hx.baselines import Network, NetworkError, architecture, load_network, save_network
from tests.baselines.tiny import TINY, TYPES


def _network(seed=0, task="tiny_recognize"):
  arch = architecture(TYPES["recognize"], TINY)
  modules = jax.tree.map(np.asarray, arch.init(jax.random.key(seed)))
  return Network("standalone", task, arch, modules)


def _same(a, b):
  return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(dict(a.modules)),
                                                   jax.tree.leaves(dict(b.modules))))


def test_a_saved_network_loads_back_equal_and_is_replaced_atomically(tmp_path):
  first, second = _network(0), _network(1, task="other")
  save_network(first, tmp_path / "net")
  back = load_network(tmp_path / "net", TINY)
  assert back.task == "tiny_recognize" and back.architecture == first.architecture and _same(back, first)
  save_network(second, tmp_path / "net")
  again = load_network(tmp_path / "net", TINY)
  assert again.task == "other" and _same(again, second) and not _same(again, first)
  assert os.listdir(tmp_path) == ["net"]  # nothing left beside it


def _flip_a_byte(path):
  f = path / "variables.msgpack"
  data = bytearray(f.read_bytes())
  data[len(data) // 2] ^= 0x01
  f.write_bytes(bytes(data))


def _truncate(path):
  f = path / "variables.msgpack"
  f.write_bytes(f.read_bytes()[:-10])


def _old_format(path):
  meta = json.loads((path / "network.json").read_text())
  for key in ("format_version", "sha256", "bytes"):
    del meta[key]
  (path / "network.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("damage, where, message", [
    (_flip_a_byte, "variables.msgpack", "altered: its sha256 is"),
    (_truncate, "variables.msgpack", "bytes where network.json records"),
    (lambda p: (p / "network.json").write_text("{"), "network.json", "not valid JSON"),
    (lambda p: (p / "variables.msgpack").unlink(), "variables.msgpack", "No such file"),
    (_old_format, "", "has format version None; this hx reads version 2 (with checksums) only"),
])
def test_a_damaged_network_is_refused_with_its_path(tmp_path, damage, where, message):
  save_network(_network(), tmp_path / "net")
  damage(tmp_path / "net")
  with pytest.raises(NetworkError, match="cannot load baseline network") as err:
    load_network(tmp_path / "net", TINY)
  assert err.value.path == str(tmp_path / "net" / where).rstrip("/") and message in str(err.value)


def test_the_temporaries_of_a_killed_save_go_with_the_next_save(tmp_path):
  # What a save killed midway leaves: a temporary directory beside the network.
  stale = tmp_path / ".net.tmp-k1ll3d"
  stale.mkdir()
  (stale / "variables.msgpack").write_bytes(b"half")
  save_network(_network(), tmp_path / "net")
  assert os.listdir(tmp_path) == ["net"]


def test_a_network_cannot_be_saved_under_a_file(tmp_path):
  (tmp_path / "file").write_text("mine")
  with pytest.raises(NetworkError, match=f"cannot save baseline network to {tmp_path / 'file' / 'net'}: "):
    save_network(_network(), tmp_path / "file" / "net")
  assert (tmp_path / "file").read_text() == "mine"
