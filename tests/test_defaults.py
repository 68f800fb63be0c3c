"""Every default has one source: a flag left out means the Python parameter left out, and the
classifiers' sampler parameters mean HDPOptions' own defaults."""

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
from fastpath.pipeline._config import HDP_PARAMETERS, LEGACY_SAMPLER
from fastpath.structure import ENSEMBLE_SELECTION_ROWS

BNC = {n: p.default for n, p in inspect.signature(BayesNetClassifier).parameters.items()}
ESKDB = {n: p.default for n, p in inspect.signature(ESKDBClassifier).parameters.items()}
OPTIONS = {f.name: f.default for f in dataclasses.fields(HDPOptions)}
# the flag of each classifier parameter that the command line always passes
FLAGS = {"structure": "structure", "estimator": "estimator", "m": "m", "m_backoff": "m_backoff",
         "n_jobs": "threads"}
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
    for name in set(BNC) & set(ESKDB) - {"k", "sampler", "selection_rows", "discriminative"}:
        assert BNC[name] == ESKDB[name], name
    # where they differ, the difference is a named constant
    assert BNC["sampler"] == DEFAULT_SAMPLER
    assert ESKDB["sampler"] == DEFAULT_ENSEMBLE_SAMPLER
    assert BNC["selection_rows"] is None
    assert ESKDB["selection_rows"] == ENSEMBLE_SELECTION_ROWS
    # the single classifier is the paper's model; the ensemble's default is weighed
    assert (BNC["discriminative"], ESKDB["discriminative"]) == (None, "attribute_class")


def test_the_classifiers_sampler_defaults_to_its_preset():
    assert not set(HDP_PARAMETERS) & (set(BNC) | set(ESKDB))  # one parameter: the sampler
    assert BayesNetClassifier().hdp_options() == HDPOptions.preset(DEFAULT_SAMPLER)
    preset = HDPOptions.preset(DEFAULT_ENSEMBLE_SAMPLER)
    assert ESKDBClassifier().hdp_options() == dataclasses.replace(
        preset, mcse_tolerance=ensemble_tolerance(preset.mcse_tolerance, ESKDB["n_estimators"]))

    assert FitConfig.selection_rows is None


def test_fit_config_defaults():
    params = BayesNetClassifier().get_params()
    assert FitConfig.from_params(params).m_backoff == BNC["m_backoff"] == FitConfig.m_backoff
    assert FitConfig.from_params(params).verbose == BNC["verbose"] == FitConfig.verbose
    # a model file without a sampler parameter was fitted with the paper's sampler
    assert hdp_options({}) == HDPOptions.preset(LEGACY_SAMPLER) == HDPOptions.preset("paper")


def test_hdp_options_defaults_are_the_paper_preset():
    assert HDPOptions() == HDPOptions.preset("paper")
    assert SAMPLER_PRESETS["paper"]["n_iter"] == PAPER_ITERATIONS == OPTIONS["n_iter"]
    assert (SAMPLER_PRESETS["paper"]["concentration_every"] == PAPER_CONCENTRATION_EVERY
            == OPTIONS["concentration_every"])
    assert HDPOptions(n_iter=100_000).burn_in_iterations == BURN_IN_CAP


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
