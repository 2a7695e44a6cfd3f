"""benchmarks/machine.py: the CPU's name from lscpu, /proc/cpuinfo or platform, in that order."""

import builtins
import io
import subprocess

from benchmarks import machine


def _lscpu(stdout):
  def run(cmd, **kwargs):
    assert cmd == ["lscpu"]
    return subprocess.CompletedProcess(cmd, 0, stdout=stdout)
  return run


def test_lscpu_model_name_is_used_first(monkeypatch):
  monkeypatch.setattr(machine.subprocess, "run", _lscpu("Arch: x86_64\nModel name:   Some CPU 9000\n"))
  assert machine.cpu_model() == "Some CPU 9000"


def test_proc_cpuinfo_when_lscpu_is_missing(monkeypatch):
  def missing(cmd, **kwargs):
    raise FileNotFoundError(cmd[0])
  real_open = builtins.open

  def fake_open(path, *args, **kwargs):
    if path == "/proc/cpuinfo":
      return io.StringIO("processor\t: 0\nmodel name\t: Other CPU\n")
    return real_open(path, *args, **kwargs)
  monkeypatch.setattr(machine.subprocess, "run", missing)
  monkeypatch.setattr(builtins, "open", fake_open)
  assert machine.cpu_model() == "Other CPU"


def test_unknown_when_nothing_answers(monkeypatch):
  def failing(cmd, **kwargs):
    raise subprocess.CalledProcessError(1, cmd)

  def no_file(path, *args, **kwargs):
    raise OSError(path)
  monkeypatch.setattr(machine.subprocess, "run", failing)
  monkeypatch.setattr(builtins, "open", no_file)
  monkeypatch.setattr(machine.platform, "processor", lambda: "")
  assert machine.cpu_model() == "unknown"
