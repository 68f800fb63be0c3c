"""Every default has one source: a flag left out means the Python parameter left out, and
HDPOptions' own defaults are the single classifier's sampler."""

import dataclasses
import inspect

import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier
from fastpath.cli import build_parser
from fastpath.cli._estimate import ESTIMATE_SEED
from fastpath.cli._main import CLI_SEED, FIT_STRUCTURE
from fastpath.estimate.hdp import (
    DEFAULT_ENSEMBLE_SAMPLER,
    DEFAULT_SAMPLER,
    PAPER_ITERATIONS,
    SAMPLER_PRESETS,
    HDPOptions,
)
from fastpath.estimate.hdp._options import (
    BURN_IN_CAP,
    ESTIMATE_SAMPLER,
    PAPER_CONCENTRATION_EVERY,
    ensemble_tolerance,
)
from fastpath.pipeline import FitConfig, hdp_options
from fastpath.structure import ENSEMBLE_SELECTION_ROWS

BNC = {n: p.default for n, p in inspect.signature(BayesNetClassifier).parameters.items()}
ESKDB = {n: p.default for n, p in inspect.signature(ESKDBClassifier).parameters.items()}
OPTIONS = {f.name: f.default for f in dataclasses.fields(HDPOptions)}
# the flag of each classifier parameter that the command line always passes
FLAGS = {"structure": "structure", "estimation": "estimation", "m": "m",
         "m_backoff": "m_backoff", "n_jobs": "threads"}
# the flag of each sampler option that the command line always passes
SAMPLER_FLAGS = {"tying": "tying", "n_chains": "chains"}


def _defaults(*argv: str):
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize("command", [["fit", "data.csv", "--model", "m.npz"],
                                     ["evaluate", "data.csv"]])
def test_the_model_flags_default_to_the_classifiers_defaults(command):
    args = _defaults(*command)
    for param, flag in FLAGS.items():
        if param == "structure" and command[0] == "fit":
            # hdpbn fit leads with the product, the ensemble (issue 55, point 5)
            assert args.structure == FIT_STRUCTURE == "eskdb"
            continue
        assert getattr(args, flag) == BNC[param], param
    for option, flag in SAMPLER_FLAGS.items():
        assert getattr(args, flag) == OPTIONS[option], option
    assert args.n_estimators == ESKDB["n_estimators"]
    assert args.seed == CLI_SEED
    # the sampler options left out are not passed: each classifier's own preset applies
    for flag in ("sampler", "iterations", "min_iter", "max_iter", "mcse_tolerance",
                 "burn_in", "concentration_every", "overrelax", "k"):
        assert getattr(args, flag) is None, flag


def test_the_classifiers_share_their_defaults():
    for name in set(BNC) & set(ESKDB) - {"structure", "k", "sampler", "selection_rows",
                                          "discriminative"}:
        assert BNC[name] == ESKDB[name], name
    # the ensemble's members are selective kDB (ESKDB), the single classifier a kDB
    assert (BNC["structure"], ESKDB["structure"]) == ("kdb", "skdb")
    # where they differ, the difference is a named constant
    assert BNC["sampler"] == DEFAULT_SAMPLER
    assert ESKDB["sampler"] == DEFAULT_ENSEMBLE_SAMPLER
    assert BNC["selection_rows"] is None
    assert ESKDB["selection_rows"] == ENSEMBLE_SELECTION_ROWS
    # the single classifier is the paper's model; the ensemble's default is weighed
    assert (BNC["discriminative"], ESKDB["discriminative"]) == (None, "attribute_class")


def test_the_classifiers_sampler_defaults_to_its_preset():
    assert BayesNetClassifier().hdp_options() == HDPOptions.preset(DEFAULT_SAMPLER) == HDPOptions()
    preset = HDPOptions.preset(DEFAULT_ENSEMBLE_SAMPLER)
    assert ESKDBClassifier().hdp_options() == preset
    # the members sample to the tolerance of their average, a preset named or passed alike
    members = dataclasses.replace(
        preset, mcse_tolerance=ensemble_tolerance(preset.mcse_tolerance, ESKDB["n_estimators"]))
    assert ESKDBClassifier().fit_config().hdp.for_members(ESKDB["n_estimators"]) == members
    assert ESKDBClassifier(sampler=preset).fit_config() == ESKDBClassifier().fit_config()

    assert FitConfig.selection_rows is None


def test_fit_config_defaults():
    params = BayesNetClassifier().get_params()
    assert FitConfig.from_params(params).m_backoff == BNC["m_backoff"] == FitConfig.m_backoff
    assert FitConfig.from_params(params).verbose == BNC["verbose"] == FitConfig.verbose
    assert hdp_options({}) == HDPOptions.preset(DEFAULT_SAMPLER) == HDPOptions()


def test_hdp_options_defaults_are_the_default_preset():
    assert HDPOptions() == HDPOptions.preset(DEFAULT_SAMPLER)
    assert SAMPLER_PRESETS[DEFAULT_SAMPLER] == {}  # every preset: its changes to the defaults
    assert SAMPLER_PRESETS["paper"]["n_iter"] == PAPER_ITERATIONS != OPTIONS["n_iter"]
    assert (SAMPLER_PRESETS["paper"]["concentration_every"] == PAPER_CONCENTRATION_EVERY
            != OPTIONS["concentration_every"])
    assert HDPOptions.preset("paper", n_iter=100_000).burn_in_iterations == BURN_IN_CAP


def test_the_estimate_flags_default_to_hdp_options():
    args = _defaults("estimate", "data.csv")
    for flag, field in (("tying", "tying"), ("update", "update"), ("root", "root"),
                        ("chains", "n_chains")):
        assert getattr(args, flag) == OPTIONS[field], flag
    for flag in ("sampler", "iterations", "min_iter", "max_iter", "mcse_tolerance", "burn_in",
                 "overrelax"):
        assert getattr(args, flag) is None, flag
    assert args.seed == ESTIMATE_SEED
    assert ESTIMATE_SAMPLER in SAMPLER_PRESETS


def test_the_help_texts_quote_the_defaults(capsys):
    parser = build_parser()
    for command in ("fit", "estimate"):
        with pytest.raises(SystemExit):
            parser.parse_args([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for number in (OPTIONS["min_iter"], OPTIONS["max_iter"], OPTIONS["mcse_tolerance"],
                       PAPER_ITERATIONS, BURN_IN_CAP):
            assert f"{number}" in text, (command, number)
    with pytest.raises(SystemExit):
        parser.parse_args(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {BNC['k']}; eskdb: {ESKDB['k']})" in text
    assert f"(default: {DEFAULT_SAMPLER}; eskdb: {DEFAULT_ENSEMBLE_SAMPLER})" in text
