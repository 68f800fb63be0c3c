"""The classifiers' constructors are written out and typed (issue 44): a type checker completes
and checks their keywords, and the sampler's options are one parameter (an ``HDPOptions`` or a
preset's name).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import typing

import pytest
from sklearn.base import clone

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions

CLASSIFIERS = [BayesNetClassifier, ESKDBClassifier]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_the_constructor_is_the_class_own_and_typed(cls):
    assert "__init__" in vars(cls)  # written out, not generated
    hints = typing.get_type_hints(cls.__init__)
    assert set(hints) == {*cls().get_params(), "return"}
    assert hints["sampler"] == str | HDPOptions


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_an_unknown_keyword_is_pythons_own_error(cls):
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_iter'"):
        cls(n_iter=200)  # a sampler's option: sampler=HDPOptions(n_iter=200)
    with pytest.raises(ValueError, match="Invalid parameter 'burn_in'"):
        cls().set_params(burn_in=5)  # scikit-learn's own


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_an_hdp_options_sampler_is_a_parameter_like_any_other(cls):
    options = HDPOptions.preset("paper", n_iter=300, tying="single")
    clf = cls(sampler=options)
    assert clf.hdp_options() is options  # used as given
    twin = clone(clf)
    assert twin.get_params() == clf.get_params() and twin.sampler == options
    assert clf.set_params(sampler="strict").hdp_options().mcse_weighting == "max"
    with pytest.raises(ValueError, match=r"sampler must be one of .* or an HDPOptions"):
        cls(sampler={"n_iter": 300}).hdp_options()


# mypy from a cold cache (about 30 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_mypy_flags_a_misspelt_or_removed_keyword(tmp_path):
    pytest.importorskip("mypy")
    script = tmp_path / "use.py"
    script.write_text(textwrap.dedent("""
        from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions

        BayesNetClassifier("kdb", 2, sampler=HDPOptions.preset("paper", n_iter=100))
        ESKDBClassifier(10, sampler="ensemble", n_jobs=2, random_state=0)
        ESKDBClassifier(n_estimater=5)
        BayesNetClassifier("kdb", 2, n_iter=100)
        BayesNetClassifier(k="2")
    """))
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), str(script)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "MYPYPATH": ROOT})
    errors = [line for line in run.stdout.splitlines() if ": error: " in line]
    assert [line.split(":")[1] for line in errors] == ["6", "7", "8"], run.stdout + run.stderr
    assert 'Unexpected keyword argument "n_estimater"' in errors[0]
    assert 'did you mean "n_estimators"' in errors[0]
    assert 'Unexpected keyword argument "n_iter"' in errors[1]
    assert 'Argument "k" to "BayesNetClassifier" has incompatible type "str"' in errors[2]
