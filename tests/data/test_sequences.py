import pytest

from hx.data import AUTHORS_DIGIT_PAIRS, SEQUENCES, Sources, TaskSizes, sequence
from hx.lang.paper import TASK_TYPES


def test_the_seven_sequences_as_the_paper_lists_them():
  assert set(SEQUENCES) == {"cs1", "cs2", "cs3", "ss", "gs1", "gs2", "ls"}
  cs1 = sequence("cs1", seed=0)
  assert [t.name for t in cs1.tasks] == ["recognize_digit(0)", "recognize_digit(1)", "count_digit(0)",
                                         "count_digit(1)"]
  cs2 = sequence("CS2", seed=1)
  assert [t.name for t in cs2.tasks] == ["recognize_digit(3)", "count_digit(3)", "count_digit(4)",
                                         "recognize_digit(4)"]
  assert [t.kind for t in sequence("gs2").tasks] == ["regress_mnist", "shortest_path_mnist",
                                                     "shortest_path_street"]
  assert [t.kind for t in sequence("ss").tasks] == ["classify_digit", "sum_digits"]
  assert len(sequence("ls")) == 9


def test_cs1_and_cs2_use_the_authors_digit_pairs_for_seeds_0_to_4():
  for seed, pair in enumerate(AUTHORS_DIGIT_PAIRS):
    for name in ("cs1", "cs2"):
      assert dict(sequence(name, seed).classes) == {"d1": pair[0], "d2": pair[1]}


def test_ls_draws_distinct_classes_deterministically():
  ls = sequence("ls", seed=7)
  classes = dict(ls.classes)
  digits = [classes[f"d{i}"] for i in range(1, 6)]
  toys = [classes[f"t{i}"] for i in range(1, 5)]
  assert len(set(digits)) == 5 and len(set(toys)) == 4
  assert all(0 <= d <= 9 for d in digits) and all(0 <= t <= 4 for t in toys)
  assert sequence("ls", seed=7) == ls
  assert any(sequence("ls", seed=s).classes != ls.classes for s in range(8, 12))
  assert [t.name for t in ls.tasks][2] == f"recognize_toy({classes['t2']})"


def test_a_sequence_prints_its_tasks_and_types_and_says_what_is_synthetic():
  text = str(sequence("cs3", seed=0))
  assert text.splitlines()[0].startswith("CS3 (seed 0; d=")
  assert "Task 3: count_toy(" in text
  assert str(TASK_TYPES["count_toy"]) in text
  assert "smallnorb-synthetic" in text
  assert "synthetic" not in str(sequence("cs1"))
  assert "gtsrb-synthetic" in str(sequence("gs1"))


def test_build_gives_the_task_with_its_data():
  seq = sequence("cs1", seed=2, sources=Sources(), sizes=TaskSizes(binary=(50, 20, 20)))
  task = seq.build(1)
  assert task.spec == seq.tasks[1] and len(task.train.targets) == 50
  assert seq.build(1) is task  # cached


def test_unknown_sequence():
  with pytest.raises(KeyError, match="unknown task sequence"):
    sequence("cs9")
