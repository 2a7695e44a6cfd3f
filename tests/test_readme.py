"""README.md as a front page: the two commands as they must stay, links that resolve, paragraphs a reader
can take in, the headline table of the reproduction against the results files it is taken from
(`benchmarks/reproduction/results.md` and `fraction_*/results.md`, generated from the records), and its
Python example run (slow: it trains)."""

from __future__ import annotations

import contextlib
import io
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text("utf-8")
REPRODUCTION = ROOT / "benchmarks" / "reproduction"

INSTALL_AND_RUN = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
                   "hx-cs1 --methods=houdini,standalone")
INSTALL_AND_TEST = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && "
                    "python -m pytest -q -n 2")
BASELINES = ("low-level transfer", "progressive NN", "standalone", "standalone_with_fold")
HEADLINE = "<!-- headline: tests/test_readme.py checks these numbers against the results files -->"
# The sequences whose 2% run has one instantiation (the README's sentence above the table says so).
ONE_INSTANTIATION = {"GS1", "GS2"}


def blocks(text: str) -> list[tuple[str, str]]:
  """(language, code) of each fenced block, in order."""
  return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def paragraphs(text: str) -> list[str]:
  """The prose paragraphs: blank-line separated, without fenced blocks, tables, headings or images."""
  prose = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)
  found = []
  for chunk in re.split(r"\n\s*\n", prose):
    lines = [line for line in chunk.splitlines() if line.strip()]
    if lines and not any(line.lstrip().startswith(("|", "#", "![", "<!--")) for line in lines):
      found.append(" ".join(lines))
  return found


def test_the_readme_opens_with_what_hx_is_then_the_two_commands():
  head = TEXT.split("```", 1)[0]
  assert re.search(r"^hx is ", head, re.M), "the first paragraph says what hx is"
  (first, second) = [code.strip() for lang, code in blocks(TEXT)[:2]]
  assert (first, second) == (INSTALL_AND_RUN, INSTALL_AND_TEST)


def test_the_readme_is_a_front_page():
  lines = TEXT.splitlines()
  assert len(lines) <= 140
  long = [p[:60] for p in paragraphs(TEXT) if len(p.split()) > 130]
  assert not long, long


def test_every_relative_link_resolves():
  links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", TEXT)
  for wanted in ("docs/guide.md", "docs/DESIGN.md", "docs/search.md", "benchmarks/RESULTS.md",
                 "benchmarks/reproduction/README.md", "BUILD.md", "docs/cs1-quick.png"):
    assert wanted in links, wanted
  missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
  assert not missing, missing


def test_the_readme_links_the_paper_the_authors_code_and_the_licence_and_gives_a_citation():
  links = re.findall(r"\]\(([^)\s]+)\)", TEXT)
  assert "https://arxiv.org/abs/1804.00218" in links and "https://github.com/capergroup/houdini" in links
  declared = re.search(r"^license = (\S+)$", (ROOT / "setup.cfg").read_text("utf-8"), re.M).group(1)
  assert f"hx's licence: [{declared}](LICENSE)" in TEXT
  licence = (ROOT / "LICENSE").read_text("utf-8")
  assert declared == "Apache-2.0" and "Apache License\n                           Version 2.0" in licence
  (bibtex,) = [code for lang, code in blocks(TEXT) if lang == "bibtex"]
  assert bibtex.startswith("@inproceedings{") and bibtex.count("{") == bibtex.count("}")
  for field in ("title = {{HOUDINI}: Lifelong Learning as Program Synthesis}", "year = {2018}",
                "eprint = {1804.00218}", "Valkov, Lazar", "Chaudhuri, Swarat"):
    assert field in bibtex, field


def test_the_readme_gives_the_gpu_install_of_an_extra_setup_cfg_has():
  (extra,) = re.findall(r"`pip install -e '\.\[(\w+)\]'`", TEXT)
  extras = (ROOT / "setup.cfg").read_text("utf-8").split("[options.extras_require]", 1)[1].split("\n[", 1)[0]
  assert re.search(rf"^{extra} =\n +jax\[cuda", extras, re.M), extras


def test_the_readme_spells_out_each_sequences_name_and_says_what_the_test_command_runs():
  text = " ".join(TEXT.split())
  for name in ("the counting sequences CS1-CS3", "the summing sequence SS", "the graph sequences GS1 and GS2",
               "the long sequence LS"):
    assert text.count(name) == 1, name
  # The test command has no -m: it runs everything; the fast part is the command with `-m "not slow"` added.
  assert "-m" not in INSTALL_AND_TEST.split("pytest", 1)[1]
  assert 'runs every test, as CI does, in two processes (`-m "not slow"` added: the fast part alone' in text


# --- The headline table against the results files. ---------------------------------------------------

def results(path: Path) -> dict[str, list[dict[str, str]]]:
  """A results file's rows per sequence ("CS1": [{column: cell}, ...]), as `benchmarks/reproduce.py
  --results_only` writes them: a `### NAME` heading, then a table whose first column is "N: task"."""
  sections: dict[str, list[dict[str, str]]] = {}
  name = header = None
  for line in path.read_text("utf-8").splitlines():
    if line.startswith("### "):
      name, header = line[4:].strip(), None
    elif line.startswith("| Task |"):
      header = [c.strip() for c in line.strip("|").split(" | ")]
    elif name and header and re.match(r"\| \d+: ", line):
      cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
      assert len(cells) == len(header), (path, line)
      sections.setdefault(name, []).append(dict(zip(header, cells)))
  return sections


def _score(cell: str) -> tuple[float, str, int] | None:
  """(value, its text, instantiations) of a score cell such as "0.850 (n=5)" or "1.62%"; None for a
  method not run."""
  m = re.fullmatch(r"(-?[\d.]+%?)(?: \(n=(\d+)\))?", cell)
  if not m:
    return None
  return float(m.group(1).rstrip("%")), m.group(1), int(m.group(2) or 1)


def _paper(cell: str) -> str:
  """The paper's rank-1 score(s) in a results cell: the number after each backquoted program; several
  (LS: one table per instantiation) as their mean."""
  found = re.findall(r"` (-?[\d.]+)(%)?", cell)
  assert found, cell
  if len(found) == 1:
    return found[0][0] + found[0][1]
  mean = statistics.fmean(float(v) for v, _ in found)
  return f"{mean:.2f}{found[0][1]} (mean of {len(found)})"


def _best_baseline(row: dict[str, str]) -> tuple[float, str]:
  scored = [(s[0], f"{s[1]} ({name})") for name in BASELINES if name in row and (s := _score(row[name]))]
  return min(scored)


def _pair(houdini: tuple[float, str, int], baseline: tuple[float, str]) -> tuple[str, str]:
  """The two cells, the better in bold."""
  h, b = houdini[1], baseline[1]
  if houdini[0] < baseline[0]:
    return f"**{h}**", b
  value, label = b.split(" ", 1)
  return h, f"**{value}** {label}"


def expected_rows() -> dict[str, list[str]]:
  """Per sequence, the headline row the results files give: its last task at 2% (results.md) and at the
  largest fraction any `fraction_*/results.md` holds for it, HOUDINI against the best baseline, and the
  paper's figure."""
  at_two = results(REPRODUCTION / "results.md")
  largest: dict[str, tuple[float, dict[str, str]]] = {}
  for path in REPRODUCTION.glob("fraction_*/results.md"):
    fraction = float(path.parent.name.split("_", 1)[1])
    for name, rows in results(path).items():
      if fraction > largest.get(name, (0.0, {}))[0]:
        largest[name] = (fraction, rows[-1])
  out = {}
  for name, rows in at_two.items():
    last = rows[-1]
    assert last["fraction"] == "2%", (name, last)
    index, task = last["Task"].split(": ", 1)
    synthetic = "synthetic" in task
    metric = "error" if last["HOUDINI"].split(" ")[0].endswith("%") else "RMSE"
    houdini = _score(last["HOUDINI"])
    n = houdini[2]
    assert (n == 1) == (name in ONE_INSTANTIATION), (name, n)
    fraction, big = largest[name]
    assert big["Task"] == last["Task"], (name, big["Task"])
    label = f"{index} {task.split(' [')[0]}, {metric}" + (", **synthetic**" if synthetic else "")
    out[name] = [name, label, *_pair(houdini, _best_baseline(last)), f"{100 * fraction:g}%",
                 *_pair(_score(big["HOUDINI"]), _best_baseline(big)),
                 _paper(last["the paper (100% of its data)"])]
  return out


def headline_rows() -> dict[str, list[str]]:
  """The README's headline table, the rows after the line `HEADLINE`, per sequence."""
  assert TEXT.count(HEADLINE) == 1
  table = TEXT.split(HEADLINE, 1)[1].lstrip("\n").split("\n\n", 1)[0].splitlines()
  rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in table[2:]]
  return {row[0]: row for row in rows}


def test_the_headline_tables_header_states_its_bases():
  """Its 2% columns are the mean of the instantiations the results give (GS1 and GS2: one), its largest
  fraction columns instantiation 0, the paper's column the paper's HOUDINI at 100% (LS: a mean)."""
  first = TEXT.split(HEADLINE, 1)[1].lstrip("\n").splitlines()[0]
  header = [c.strip() for c in first.strip("|").split(" | ")]
  at_two = {name: _score(rows[-1]["HOUDINI"])[2]
            for name, rows in results(REPRODUCTION / "results.md").items()}
  (many,) = {n for name, n in at_two.items() if name not in ONE_INSTANTIATION}
  assert header[2] == f"2%, mean of {many} instantiations (GS1, GS2: 1): HOUDINI", header[2]
  for path in REPRODUCTION.glob("fraction_*/results.md"):
    assert all(_score(rows[-1]["HOUDINI"])[2] == 1 for rows in results(path).values()), path
  assert header[4] == "largest fraction run, instantiation 0"
  assert headline_rows()["LS"][-1].endswith(f"(mean of {many})")
  assert header[7] == f"the paper: HOUDINI at 100% (LS: mean of its {many})"


def test_the_headline_table_is_what_the_results_files_give():
  want, got = expected_rows(), headline_rows()
  assert list(got) == list(want)
  for name in want:
    assert got[name] == want[name], "| " + " | ".join(want[name]) + " |"


def test_the_headline_parsers_read_a_results_table(tmp_path):
  path = tmp_path / "results.md"
  path.write_text("Generated.\n\n### LS\n\n| Task | fraction | the paper (100% of its data) | HOUDINI | "
                  "standalone | low-level transfer |\n|---|---|---|---|---|---|\n"
                  "| 1: count_digit(7) | 2% | `a` 0.46 RMSE; `b` 0.40 RMSE | 0.906 (n=5) | 1.267 (n=5) | "
                  "not run |\n", "utf-8")
  (row,) = results(path)["LS"]
  assert _score(row["HOUDINI"]) == (0.906, "0.906", 5) and _score(row["low-level transfer"]) is None
  assert _best_baseline(row) == (1.267, "1.267 (standalone)")
  assert _paper(row["the paper (100% of its data)"]) == "0.43 (mean of 2)"
  assert _pair(_score(row["HOUDINI"]), _best_baseline(row)) == ("**0.906**", "1.267 (standalone)")
  assert _pair((2.0, "2.00%", 1), (1.5, "1.50% (standalone)")) == ("2.00%", "**1.50%** (standalone)")


# --- The Python example. -------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_streams_figures_are_its_reports():
  # The README's stream figures are the committed CTrL-size run's stream.md, read back here.
  stream = (ROOT / "benchmarks" / "stream" / "length_100_seed_0_ctrl" / "stream.md").read_text("utf-8")
  names = ("HOUDINI (top-down)", "standalone", "low-level transfer", "experience replay", "EWC")
  row = r"^\| ([^|]+) \| 100 \| ([\d.]+%) ± [\d.]+ \| ([\d.]+) ± [\d.]+ \| [^|]+ \| ([^|]+) \|"
  rows = {m.group(1): m.groups()[1:] for m in re.finditer(row, stream, re.M)}
  assert set(names) <= set(rows), rows
  text = " ".join(TEXT.split())
  (h, s, low, replay, ewc) = (rows[k] for k in names)
  assert (f"mean error HOUDINI **{h[0]}**") in text and f"standalone {s[0]}, low-level transfer {low[0]}, " \
         f"replay {replay[0]}, EWC {ewc[0]}" in text
  rmses = sorted(float(r[1]) for r in (s, low, replay, ewc))
  assert f"mean RMSE {h[1]} against {rmses[0]:.2f}-{rmses[-1]:.2f}" in text
  assert float(h[1]) < rmses[0]
  forgetting = {k: rows[k][2].split(" / ")[0] for k in names}
  assert forgetting["HOUDINI (top-down)"] == "+0.00" and "forgetting 0 for HOUDINI" in text
  assert f"{forgetting['experience replay']} and {forgetting['EWC']} error points for replay and EWC" in text
  assert "largest change of a test score **0**" in stream
  search = re.search(r"^\| search .*\(([\d.]+)x; ([\d.]+)x\) \|$", stream, re.M)
  assert f"Its search at task 100 costs {search.group(2)}x tasks 10-20's" in text
  memory = re.search(r"after task 100: \d+ MB \(\*\*([\d.]+)x\*\*\)", stream)
  assert f"memory grew {memory.group(1)}x from task 20" in text


def test_the_python_example_runs(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (code,) = [code for lang, code in blocks(TEXT) if lang == "python"]
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    exec(compile(code, f"{README}:python", "exec"), {"__name__": "readme"})  # noqa: S102 - the README's own
  printed = out.getvalue()
  assert re.search(r"HOUDINI \(top-down\): +\d+\.\d\d%", printed) and "standalone:" in printed
  assert (tmp_path / "runs" / "mine" / "report.md").exists()
