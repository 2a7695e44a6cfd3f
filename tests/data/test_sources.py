"""What a run's settings record of its data sources (`hx.data.Sources.identity`)."""

import hashlib

from hx.data import Sources
from hx.data.sources import content_identity


def test_a_data_file_is_recorded_by_its_content_not_its_place(tmp_path):
  data = b"not really mnist" * 1000
  a, b = tmp_path / "a" / "mnist.pkl.gz", tmp_path / "b" / "mnist.pkl.gz"
  for p in (a, b):
    p.parent.mkdir()
    p.write_bytes(data)
  digest = hashlib.sha256(data).hexdigest()[:16]
  assert content_identity(str(a)) == f"mnist.pkl.gz sha256:{digest}"
  assert Sources(mnist=str(a)).identity() == Sources(mnist=str(b)).identity()
  b.write_bytes(data + b"!")
  assert Sources(mnist=str(a)).identity() != Sources(mnist=str(b)).identity()
  assert Sources().identity()["mnist"] is None and Sources(mnist="tfds").identity()["mnist"] == "tfds"
  assert content_identity(str(tmp_path / "missing")) == str(tmp_path / "missing")


def test_a_data_directory_is_recorded_by_its_listing(tmp_path):
  for root in ("x", "y"):
    (tmp_path / root / "sub").mkdir(parents=True)
    (tmp_path / root / "sub" / "f.mat").write_bytes(b"12345")
  x, y = content_identity(str(tmp_path / "x")), content_identity(str(tmp_path / "y"))
  assert x.startswith("x/ files:1 ") and x.split()[-1] == y.split()[-1]
  (tmp_path / "y" / "sub" / "g.mat").write_bytes(b"1")
  assert content_identity(str(tmp_path / "y")).split()[-1] != x.split()[-1]
