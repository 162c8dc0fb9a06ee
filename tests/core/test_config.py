"""RecalliteConfig checks its choices when they are set: a misspelt choice used to be accepted and
then changed what recall returned (channels="hybird" returned nothing)."""

import dataclasses

import pytest

from recallite_core import Recallite, RecalliteConfig
from recallite_core.errors import InvalidInputError
from recallite_core.index.scan_workers import WorkerOptions
from recallite_core.learning.learner import LearningConfig
from recallite_core.policy import rules as policy


def test_misspelled_channels_is_rejected():
    with pytest.raises(ValueError) as err:
        RecalliteConfig(channels="hybird")
    assert str(err.value) == "channels must be one of 'hybrid', 'keyword', 'vector', not 'hybird'."


@pytest.mark.parametrize("field, bad, allowed", [
    ("fusion", "z-score", "'zscore', 'rrf'"),
    ("fusion", "RRF", "'zscore', 'rrf'"),
    ("channels", None, "'hybrid', 'keyword', 'vector'"),
    ("working_overflow", "keep", "'archive', 'drop'"),
    ("rerank", "bm25", "'cross-encoder'"),
    ("rerank", 3, "'cross-encoder'"),
    ("workers", "atuo", "'auto'"),
    ("workers", 4, "'auto'"),
    ("chunk_types", ("episdoe",), "'episode'"),
    ("chunk_types", "episode", "tuple of memory types"),
    ("learning", LearningConfig(mode="contextal"), "'contextual', 'global', 'ema'"),
])
def test_misspelled_choice_is_rejected_in_one_line_naming_field_value_and_choices(field, bad, allowed):
    with pytest.raises(InvalidInputError) as err:
        RecalliteConfig(**{field: bad})
    message = str(err.value)
    assert "\n" not in message and field in message and allowed in message
    shown = bad.mode if isinstance(bad, LearningConfig) else bad[0] if isinstance(bad, tuple) else bad
    assert repr(shown) in message


@pytest.mark.parametrize("kw", [
    {"fusion": "zscore"}, {"fusion": "rrf"}, {"channels": "keyword"}, {"channels": "vector"},
    {"working_overflow": "drop"}, {"rerank": None}, {"rerank": False}, {"rerank": "cross-encoder"},
    {"rerank": "Cross_Encoder"}, {"rerank": "crossencoder"}, {"rerank": lambda q, texts: [1.0] * len(texts)},
    {"workers": False}, {"workers": True}, {"workers": "auto"}, {"workers": None}, {"workers": {"size": 1}},
    {"workers": WorkerOptions(size=1)}, {"chunk_types": ()}, {"chunk_types": ("episode", "fact")},
    {"chunk_types": ["episode"]}, {"learning": LearningConfig(mode="ema")}, {"learning": LearningConfig(mode="global")},
])
def test_choices_accepted_before_are_still_accepted(kw):
    config = RecalliteConfig(**kw)
    (name, value), = kw.items()
    assert getattr(config, name) is value


def test_misspelled_choice_set_on_a_live_config_is_rejected():
    """Evaluations switch channels on a live config between modes."""
    config = RecalliteConfig()
    config.channels = "keyword"
    with pytest.raises(InvalidInputError):
        config.channels = "keywords"
    assert config.channels == "keyword"
    with pytest.raises(InvalidInputError):
        dataclasses.replace(config, fusion="zcore")


def test_misspelled_workers_fails_before_the_file_is_opened(tmp_path):
    with pytest.raises(InvalidInputError):
        Recallite.open(str(tmp_path / "m.db"), embedder="hash", workers="atuo")
    assert not (tmp_path / "m.db").exists()


def test_outcome_gains_have_one_home():
    assert RecalliteConfig().outcome_gain == policy.OUTCOME_GAIN
    assert policy.outcome_factor(1.0) == pytest.approx(2.718281828 ** (policy.OUTCOME_GAIN / 2))
    assert LearningConfig().gain == policy.LEARNED_OUTCOME_GAIN
