import pytest

from hx.data import AUTHORS_DIGIT_PAIRS, SEQUENCES, Sources, TaskSizes, sequence
from hx.data.sequences import AUTHORS_CLASSES
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


def test_ls_and_cs3_seeds_0_to_4_are_the_authors_instantiations():
  # capergroup/houdini, HOUDINI/Eval/CS_LS.py: ls_idx_pairs and cs3_idx_pairs, in task order.
  authors_ls = [(7, 4, 0, 9, 2, 9, 0, 7, 2), (1, 0, 1, 5, 4, 5, 1, 1, 8), (9, 1, 2, 1, 3, 1, 2, 9, 3),
                (6, 2, 3, 8, 1, 8, 3, 6, 5), (4, 3, 4, 7, 0, 7, 4, 4, 0)]
  kinds = ["count_digit", "count_toy", "recognize_toy", "recognize_digit", "count_toy", "count_digit",
           "count_toy", "recognize_digit", "count_digit"]
  for seed, classes in enumerate(authors_ls):
    assert [t.name for t in sequence("ls", seed).tasks] == [f"{k}({c})" for k, c in zip(kinds, classes)]
  for seed, (d, t) in enumerate([(0, 1), (3, 2), (5, 3), (2, 0), (9, 4)]):
    assert [t_.name for t_ in sequence("cs3", seed).tasks] == [
        f"recognize_digit({d})", f"count_digit({d})", f"count_toy({t})", f"recognize_toy({t})"]
  assert len(AUTHORS_CLASSES["ls"]) == 5


def test_later_ls_seeds_draw_at_random_with_the_authors_repeats():
  for seed in (5, 7, 11):
    ls = sequence("ls", seed=seed)
    c = [t.cls for t in ls.tasks]
    assert c[5] == c[3] and c[6] == c[2] and c[7] == c[0]  # the repeats of every authors' instantiation
    assert len({c[0], c[3], c[8]}) == 3 and len({c[1], c[2], c[4]}) == 3
    assert all(0 <= d <= 9 for d in (c[0], c[3], c[8])) and all(0 <= t <= 4 for t in (c[1], c[2], c[4]))
    assert sequence("ls", seed=seed) == ls
  assert len({sequence("ls", seed=s).classes for s in range(5, 12)}) > 1


def test_the_listing_shows_the_repeated_classes():
  text = str(sequence("ls", seed=0))
  assert "Task 6: count_digit(9)" in text and "(the digit of task 4)" in text
  assert "Task 7: count_toy(0)" in text and "(the toy of task 3)" in text
  assert "Task 8: recognize_digit(7)" in text and "(the digit of task 1)" in text
  assert "(the" not in text.split("Task 6")[0]


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
