"""`hx.synthesize`'s default module sizes (`hx.SynthesisConfig`'s) are the paper's, large ones: the
config's docstring and the guide say what they are (the numbers of `hx.ModuleConfig()`) and where the quick
preset's smaller ones are."""

from pathlib import Path

import hx
from hx.presets import EVALUATION_PRESETS

GUIDE = " ".join((Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text("utf-8").split())


def _sizes(config) -> list[str]:
  first, second = config.cnn_channels
  return [f"MLP with one hidden layer of {config.mlp_hidden:,} units",
          f"CNN of {first} and {second} channels", f"LSTM of {config.lstm_hidden} units"]


def test_the_configs_docstring_and_the_guide_give_the_default_sizes():
  doc = " ".join(hx.SynthesisConfig.__doc__.split())
  for text in (doc, GUIDE):
    for phrase in _sizes(hx.ModuleConfig()):
      assert phrase in text, phrase
    assert 'hx.presets.EVALUATION_PRESETS["quick"].module_config' in text


def test_the_quick_sizes_they_name_are_the_quick_presets():
  quick = EVALUATION_PRESETS["quick"].module_config
  first, second = quick.cnn_channels
  phrase = (f"an MLP of {quick.mlp_hidden}, a CNN of {first} and {second} channels, an LSTM of "
            f"{quick.lstm_hidden}")
  assert phrase in " ".join(hx.SynthesisConfig.__doc__.split()) and phrase in GUIDE
