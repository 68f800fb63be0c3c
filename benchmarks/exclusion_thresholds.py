"""The measurement behind ``exclude_features="auto"``'s thresholds (fastpath.io._column_types,
docs/usage.md "Identifiers and dates").

    python benchmarks/exclusion_thresholds.py DATASETS/*.csv.gz     # the 41 datasets
    python benchmarks/exclusion_thresholds.py --customers           # issue 46's kind of table

With dataset files (class last): the columns the rule leaves out on all the rows and on every
training half of five stratified 2-fold splits (seeds 0-4), then the attributes nearest each
threshold (the most distinct nominal ones, the most distinct integer ones of 1,000 rows or
more). With ``--customers``: a seeded 20,000-row customer table (an identifier, dates in three
formats, a city of about 1,500 values, a balance with 10 % stray tokens, about 3.5 % positives)
fitted on its even rows by the default ``BayesNetClassifier`` and tested on its odd rows, with
the rule and with each left-out column put back (train and test log loss).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath import BayesNetClassifier
from fastpath.io import read_table
from fastpath.pipeline._members import typed_columns


def datasets(paths: list[str]) -> None:
    from sklearn.model_selection import StratifiedKFold

    config = BayesNetClassifier().fit_config()
    left_out, nominal, integer = [], [], []
    for path in paths:
        name = Path(path).name.removesuffix(".csv.gz")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = read_table(path, nominal_columns=[-1])
            frame = table.frame[table.frame.iloc[:, -1].notna()]
            X, y = frame.iloc[:, :-1], frame.iloc[:, -1].astype(str)
            left_out += [(name, "all rows", c) for c in typed_columns(config, X)[2]]
            if y.value_counts().min() >= 2:
                for seed in range(5):
                    split = StratifiedKFold(2, shuffle=True, random_state=seed).split(X, y)
                    for train, _ in split:
                        left_out += [(name, f"2-fold seed {seed}", c)
                                     for c in typed_columns(config, X.iloc[train])[2]]
        for c in X.columns:
            present = X[c].dropna()
            if table.types[c] == "nominal":
                nominal.append((present.astype(str).nunique(), len(present), name, c))
            elif len(present) >= 1000 and np.all(present == np.round(present)):
                integer.append((present.nunique() / len(present), len(present), name, c))
    print(f"columns left out over {len(paths)} datasets (all rows, 10 training halves): "
          f"{left_out or 'none'}")
    print("most distinct nominal attributes (values, rows, dataset, column):")
    for row in sorted(nominal, reverse=True)[:5]:
        print("  ", row)
    print("most distinct integer attributes of >= 1,000 rows (share, rows, dataset, column):")
    for share, n, name, c in sorted(integer, reverse=True)[:5]:
        print(f"   {share:.3f} {n} {name} {c}")


def customer_table(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    tenure = rng.exponential(4, n).round(1)
    plan = rng.choice(["basic", "plus", "pro", "family"], n, p=[.5, .25, .15, .1])
    income = rng.lognormal(10.5, .5, n).round(0)
    products = rng.poisson(2, n)
    weights = 1 / np.arange(1, 1501) ** 0.8
    city = rng.choice(1500, n, p=weights / weights.sum())
    city_effect = rng.normal(0, .3, 1500)
    balance = rng.normal(600, 80, n).round(2)
    logit = (-3.45 + .025 * (age - 45) - .15 * tenure + .9 * (plan == "pro")
             - .4 * (plan == "family") + .6 * (products == 0) + .004 * (balance - 600)
             + city_effect[city] - .3 * (np.log(income) - 10.5))
    y = rng.random(n) < 1 / (1 + np.exp(-logit))
    income = income.astype(object)
    income[rng.random(n) < .02] = "n/a"
    balance = balance.astype(object)
    stray = rng.random(n) < .10
    balance[stray] = rng.choice(["?", "-", "unknown"], stray.sum())
    t0 = pd.Timestamp("2015-01-01")
    signup = t0 + pd.to_timedelta(rng.integers(0, 3000 * 86400, n), unit="s")
    visit = t0 + pd.to_timedelta(rng.integers(2000, 3600, n), unit="D")
    birth = pd.Timestamp("1990-01-01") + pd.to_timedelta(rng.integers(-15000, 9000, n), unit="D")
    return pd.DataFrame({
        "customer_id": rng.permutation(np.arange(100_001, 100_001 + n)),
        "signup": signup.strftime("%Y/%m/%d %H:%M:%S"),
        "last_visit": visit.strftime("%d.%m.%Y"),
        "birthday": birth.strftime("%b %d, %Y"),
        "age": age, "tenure": tenure, "plan": plan,
        "region": rng.choice([f"R{i}" for i in range(8)], n),
        "income": income, "products": products, "city": [f"city-{c:04d}" for c in city],
        "balance": balance, "churn": np.where(y, "yes", "no"),
    })


def customers(estimation: str) -> None:
    from sklearn.metrics import log_loss

    frame = customer_table()
    # as a user reads the file: every field text but numbers, only empty fields missing
    frame = frame.astype(str).replace({"nan": np.nan})
    frame = frame.apply(lambda c: pd.to_numeric(c) if pd.to_numeric(
        c, errors="coerce").notna().all() else c)
    X, y = frame.drop(columns="churn"), frame["churn"]
    train = np.arange(len(X)) % 2 == 0
    print(f"positives {np.mean(y == 'yes'):.3f}; city {X.city.nunique()} values; balance "
          f"{X.balance.nunique()} values")

    def run(label: str, **params) -> BayesNetClassifier:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = BayesNetClassifier(estimation=estimation, random_state=0, **params).fit(
                X[train], y[train])
        yes = list(clf.classes_).index("yes")
        losses = [log_loss(y[rows] == "yes", clf.predict_proba(X[rows])[:, yes])
                  for rows in (train, ~train)]
        print(f"{label:<28} train {losses[0]:.4f} test {losses[1]:.4f}  left out "
              f"{list(clf.excluded_features_)} ({time.perf_counter() - t0:.0f} s)", flush=True)
        return clf

    auto = run("the auto rule")
    for back in ("city", "balance", "customer_id"):
        run(f"{back} put back",
            exclude_features=[c for c in auto.excluded_features_ if c != back])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", help="dataset files, class last")
    parser.add_argument("--customers", action="store_true", help="the customer table")
    parser.add_argument("--estimation", default="hdp", choices=["hdp", "m"])
    args = parser.parse_args()
    if args.datasets:
        datasets(args.datasets)
    if args.customers:
        customers(args.estimation)
    return 0


if __name__ == "__main__":
    sys.exit(main())
