"""`hx.jsonread`'s messages: where a value that does not fit is, on one line, whatever its keys hold."""

import pytest

from hx.jsonread import Invalid, obj, text


def test_a_member_is_named_by_its_key_and_an_odd_key_is_quoted_on_one_line():
  schema = obj({"ranked": obj({}, values=text())})
  with pytest.raises(Invalid, match=r"^ranked\.nn_1: expected a string, got null$"):
    schema({"ranked": {"nn_1": None}}, "")
  for key, shown in (("", '""'), ("a\nb", '"a\\nb"'), ("x.y", '"x.y"'), ("two words", '"two words"')):
    with pytest.raises(Invalid) as err:
      schema({"ranked": {key: None}}, "")
    assert str(err.value) == f"ranked[{shown}]: expected a string, got null"
    assert len(str(err.value).splitlines()) == 1
