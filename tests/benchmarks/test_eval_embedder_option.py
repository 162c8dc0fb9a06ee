"""`eval nearmiss|history|locomo --embedder MODULE:FACTORY` (issue 14): another model is measured on
the same sets through an importable factory, and a wrong name is refused in one line."""

import argparse

import pytest

from recallite_mcp.benchmarks import evalsets, locomo


def test_a_factory_builds_the_embedder_that_the_eval_then_reports(capsys):
    assert evalsets.main(["nearmiss", "--embedder", "recallite_core.embedding.embedder:HashEmbedder",
                          "--modes", "vector-only"]) == 0
    out = capsys.readouterr().out
    assert "embedder hash-v1-384" in out and "vector-only" in out


def test_the_named_embedders_still_pass_through_as_names():
    assert locomo.embedder_arg("hash") == "hash"
    assert locomo.embedder_arg("default") == "default"


@pytest.mark.parametrize("spec", ["minilm-fp32", "no_such_module_xyz:make", "recallite_core.embedding.embedder:Nope"])
def test_an_unknown_embedder_is_refused_with_what_to_name(spec):
    with pytest.raises(argparse.ArgumentTypeError, match="MODULE:FACTORY|importable"):
        locomo.embedder_arg(spec)


def test_the_command_line_refuses_it_before_storing_anything(capsys):
    with pytest.raises(SystemExit) as exc:
        evalsets.main(["nearmiss", "--embedder", "no_such_module_xyz:make"])
    assert exc.value.code == 2
    assert "importable" in capsys.readouterr().err
