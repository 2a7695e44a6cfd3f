"""hx.atomic: a file or directory is the old one or the new one, and what a killed write left goes."""

import os

import pytest

from hx.atomic import write_atomically, write_directory_atomically


def test_a_file_is_replaced_whole_and_a_failed_write_leaves_the_old_one(tmp_path):
  path = tmp_path / "sub" / "a.json"
  write_atomically(path, lambda f: f.write("old"), text=True)

  def half(f):
    f.write(b"ne")
    raise KeyboardInterrupt

  with pytest.raises(KeyboardInterrupt):
    write_atomically(path, half)
  assert path.read_text() == "old" and os.listdir(path.parent) == ["a.json"]
  (path.parent / ".a.json.tmp-k1ll3d").write_bytes(b"what a killed write left")
  write_atomically(path, lambda f: f.write(b"new"))
  assert path.read_text() == "new" and os.listdir(path.parent) == ["a.json"]


def test_a_directory_is_replaced_whole_and_a_failed_fill_leaves_the_old_one(tmp_path):
  path = tmp_path / "d"
  write_directory_atomically(path, lambda tmp: (tmp / "x").write_text("old"))

  def fails(tmp):
    (tmp / "x").write_text("new")
    raise OSError("disk full")

  with pytest.raises(OSError, match="disk full"):
    write_directory_atomically(path, fails)
  assert (path / "x").read_text() == "old" and os.listdir(tmp_path) == ["d"]
  (tmp_path / ".d.tmp-k1ll3d").mkdir()
  (tmp_path / ".d.tmp-k1ll3d" / "x").write_text("half")
  (tmp_path / ".other.tmp-k1ll3d").mkdir()  # another directory's temporary is not this write's to remove
  write_directory_atomically(path, lambda tmp: (tmp / "y").write_text("new"))
  assert os.listdir(path) == ["y"] and sorted(os.listdir(tmp_path)) == [".other.tmp-k1ll3d", "d"]
