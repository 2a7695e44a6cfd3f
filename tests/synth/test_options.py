"""Settings as one line of text (`hx.synth.options`): names, keys and values read by their kinds, and each
mistake one line that names it."""

import pytest

from hx.synth.options import option_text, read_options, read_value

CHOICES = {"plain": {}, "full": {"n": "int", "x": "float | None", "on": "bool", "word": "str | None"}}


def test_a_name_alone_and_with_keys():
  assert read_options("plain", CHOICES, "thing") == ("plain", {})
  assert read_options(" full : n=3 , x=none, on=TRUE, word=auto ", CHOICES, "thing") == (
      "full", {"n": 3, "x": None, "on": True, "word": "auto"})
  assert read_options("full:x=1e-3,on=0", CHOICES, "thing") == ("full", {"x": 0.001, "on": False})


@pytest.mark.parametrize("text, message", [
    ("empty", "unknown thing 'empty'; the things are plain, full"),
    ("emptier:n=1", "unknown thing 'emptier' in 'emptier:n=1'; the things are plain, full"),
    ("plain:n=1", "plain: unknown key 'n'; it takes no keys"),
    ("full:m=1", "full: unknown key 'm'; its keys are n, x, on, word"),
    ("full:n", "full: 'n' is not KEY=VALUE; its keys are n, x, on, word"),
    ("full:n=1,", "full: '' is not KEY=VALUE"),
    ("full:n=1,n=2", "full: n is given twice"),
    ("full:n=none", "full: n='none' is not an integer"),
    ("full:x=big", "full: x='big' is not a number or none"),
    ("full:on=yes", "full: on='yes' is not true or false"),
    ("full:word=", "full: word='' is not a word or none"),
])
def test_each_mistake_is_one_line(text, message):
  with pytest.raises(ValueError) as err:
    read_options(text, CHOICES, "thing")
  assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_values_written_read_back():
  for value, kind in ((None, "int | None"), (True, "bool"), (False, "bool"), (3, "int"), (0.1, "float"),
                      (2.0, "float"), ("geomean", "str")):
    assert read_value(option_text(value), kind, "here") == value
  with pytest.raises(ValueError, match="the kind 'list' is none of"):
    read_value("1", "list", "here")
