# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Hierarchical Dirichlet estimates for Bayesian network classifiers: a class notebook
#
# Petitjean, Buntine, Webb, Zaidi, *Accurate parameter estimation for Bayesian network
# classifiers using hierarchical Dirichlet processes*, Machine Learning 107 (2018),
# [doi:10.1007/s10994-018-5718-0](https://doi.org/10.1007/s10994-018-5718-0). Equation and
# algorithm numbers are the paper's; the site's page "From the paper to the code"
# (`docs/theory.md`) derives each one.
#
# Everything here runs on a laptop CPU in about a minute. It uses
#
# * `hdpbn_ppl.teaching`: the paper's Algorithms 1-5 in plain NumPy (read it beside the paper),
# * `hdpbn_ppl.worked_example`: exact posteriors of small trees, by enumerating the table counts.
#
# Install: `pip install -e ".[teach]"` from the repository root, then open this notebook in any
# Jupyter front end (or run its paired script: `python examples/teaching.py`).

# %%
import matplotlib.pyplot as plt
import numpy as np

from hdpbn_ppl import teaching
from hdpbn_ppl.worked_example import (
    DATASETS,
    concentration_profile,
    m_estimate,
    mle,
    table_posterior,
    worked_example_tree,
)

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. The worked example (section 4.6)
#
# Naive Bayes, $P(X_1 \mid Y)$, both binary. The rows are $Y = 0, 1$; the columns are the
# counts of $X_1 = 0, 1$. Dataset 1: the small leaf $Y = 0$ agrees with the big one; dataset 2:
# it does not.

# %%
for name, counts in DATASETS.items():
    exact = table_posterior(counts)  # enumeration of every table count, quadrature over alpha
    print(name, "counts", counts.tolist())
    print("   MLE            ", mle(counts)[:, 0])
    print("   m-estimate, m=1", m_estimate(counts, 1.0)[:, 0])
    print("   HDP, exact     ", exact.theta[:, 0], " E[alpha] =", round(exact.alpha, 3))

# %% [markdown]
# The same numbers from the Gibbs sampler of the paper (Algorithm 1 = `teaching.gibbs`),
# under the same prior: the concentration $\alpha \sim \mathrm{Gamma}(2, 1)$ and $\alpha_0 = 2$
# (the reference code's choices; the paper's experiments use an improper prior, section 3
# below).

# %%
tree = worked_example_tree("DS1")
run = teaching.gibbs(tree, n_iter=3000, burn_in=300, seed=1)
print("teaching sampler, P(X1=0 | Y=y):", run.probabilities[1:, 0])
print("exact:                           ", table_posterior(DATASETS["DS1"]).theta[:, 0])

# %% [markdown]
# ## 2. Tables: the Chinese restaurant (eqs. 7-8, 15)
#
# A node's $n$ observations of one value sit at $t$ tables; the parent sees only the tables.
# $P(t \mid n, \alpha) = \frac{\Gamma(\alpha)}{\Gamma(\alpha+n)}\alpha^t S(n, t)$ (eq. 8). A
# small concentration seats everybody together (the node is its own evidence, $t$ near 1), a
# large one passes nearly every observation up ($t$ near $n$).

# %%
n = 25
log_s = teaching.log_stirling_table(n)
fig, ax = plt.subplots(figsize=(7, 3))
for a in (0.3, 2.0, 10.0, 100.0):
    p = teaching.crd_probabilities(n, a, log_s)
    mean = p @ np.arange(n + 1)
    ax.plot(np.arange(n + 1), p, "-o", ms=3, label=f"alpha = {a:g}, E[t] = {mean:.1f}")
ax.set_xlabel("t (tables)")
ax.set_ylabel(f"P(t | n = {n}, alpha)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The sampler starts each table count at the rounded mean, eq. (15):
# $t = \max(1, \lfloor \alpha(\psi(\alpha+n) - \psi(\alpha)) \rfloor)$. In the worked example the
# leaves' table counts then move as the sampler runs; here is the posterior distribution of the
# table count of the leaf $Y = 1$, $X_1 = 0$ (20 observations) under the sampler:

# %%
t_leaf = run.table_counts[run.burn_in:, 2, 0]
values, freq = np.unique(t_leaf, return_counts=True)
print(dict(zip(values.tolist(), np.round(freq / freq.sum(), 3).tolist(), strict=True)))

# %% [markdown]
# ## 3. Shrinkage: a leaf pulled towards its parent (eq. 14)
#
# $\hat\theta_j = \frac{n_j + \alpha\hat\phi_{\text{parent}}}{N_j + \alpha}$: the leaf's MLE
# mixed with its parent's estimate, with weight $\alpha / (N_j + \alpha)$ on the parent. The
# m-estimate (eq. 16) has the same form with the uniform $1/K$ in place of the parent. Grow the
# leaf $Y = 0$ (all $X_1 = 0$), once beside the agreeing leaf of dataset 1 and once beside the
# disagreeing one of dataset 2:

# %%
sizes = np.array([1, 2, 4, 8, 16, 32, 64])
fig, ax = plt.subplots(figsize=(7, 3.5))
for other, colour in (([20, 5], "tab:red"), ([4, 9], "tab:purple")):
    hdp = [table_posterior(np.array([[s, 0], other])).theta[0, 0] for s in sizes]
    ax.plot(sizes, hdp, "D-", color=colour, label=f"HDP, other leaf {other}")
ax.plot(sizes, (sizes + 0.5) / (sizes + 1), "o-", color="tab:blue", label="m-estimate, m = 1")
ax.plot(sizes, np.ones(len(sizes)), "s-", color="0.5", label="MLE")
ax.set_xscale("log")
ax.set_xlabel("N, rows of the leaf Y = 0")
ax.set_ylabel("P(X1 = 0 | Y = 0)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 4. The concentration: prior, posterior, and the cap (section 4.4.2)
#
# Summing over every table count leaves a likelihood of the concentration alone, $L(\alpha)$.
# Its posterior is $p(\alpha)L(\alpha)$. The paper's experiments use $\nu_0 = \mu_0 = 0$, the
# improper prior $p(\alpha) \propto 1/\alpha$; $L(\alpha)$ does not vanish as $\alpha$ grows
# (the leaves equal to the root fit these data), so that posterior is improper too and the code
# caps $\alpha$ (at 4,000, as the reference code does).

# %%
counts = DATASETS["DS1"]


def posterior(counts, prior, cap, root="exact", n_grid=600):
    """E[theta | n] and the density of log alpha on a grid, for a prior and a cap."""
    s = np.linspace(-10, np.log(cap), n_grid)
    a = np.exp(s)
    log_lik, theta = concentration_profile(counts, a, root=root)
    log_prior = (np.log(a) - a) if prior == "Gamma(2, 1)" else -np.log(a)  # 1/alpha: nu0 = mu0 = 0
    lp = log_lik + log_prior + s  # the density of log alpha: d alpha = alpha d(log alpha)
    w = np.exp(lp - lp.max())
    w /= np.trapezoid(w, s)
    return np.trapezoid(w[:, None, None] * theta, s, axis=0), s, w


fig, ax = plt.subplots(figsize=(7, 3.5))
for prior in ("Gamma(2, 1)", "1/alpha"):
    _, s, w = posterior(counts, prior, 4000.0)
    ax.plot(s / np.log(10), w, label=f"posterior, prior {prior}")
s = np.linspace(-10, np.log(4000), 600)
ax.plot(s / np.log(10), np.exp(2 * s - np.exp(s)), "--", color="0.5",
        label="Gamma(2, 1) prior (density of log alpha)")
ax.set_xlabel("log10 alpha")
ax.legend(fontsize=8)
plt.show()

for prior in ("Gamma(2, 1)", "1/alpha"):
    for root in ("exact", "reference"):
        row = [posterior(counts, prior, cap, root)[0][0, 0] for cap in (400, 4000, 4e6)]
        print(f"prior {prior:12s} root {root:9s} P(X1=0|Y=0) at caps 400, 4000, 4e6:",
              np.round(row, 4))

# %% [markdown]
# Under Gamma(2, 1) the cap does not matter; under the paper's prior the answer moves with it,
# and the paper's printed 0.89 is reproduced only with the reference code's root shortcut
# (`root="reference"`, Algorithms 2-3) at the reference code's cap.
#
# ## 5. Gibbs traces
#
# The sampler alternates the table counts (Algorithms 3-4) and the concentration
# (Algorithm 5). The estimate of the small leaf follows the concentration: a large $\alpha$
# pulls it to the root.

# %%
fig, axes = plt.subplots(2, 1, figsize=(8, 4), sharex=True)
axes[0].plot(run.alpha[:, 0], lw=0.6)
axes[0].set_ylabel("alpha")
axes[1].plot(run.estimates[:, 1, 0], lw=0.6, color="tab:red")
axes[1].set_ylabel("P(X1=0 | Y=0)")
axes[1].set_xlabel("iteration")
for ax in axes:
    ax.axvline(run.burn_in, color="0.5", ls=":")
plt.show()
print("correlation of alpha and the estimate:",
      round(np.corrcoef(run.alpha[run.burn_in:, 0], run.estimates[run.burn_in:, 1, 0])[0, 1], 3))

# %% [markdown]
# ## 6. Exercises
#
# 1. **Read the sampler.** Open `hdpbn_ppl/teaching.py` beside the paper's Algorithms 1-5. Which
#    line is eq. (10)? Where does the paper's Algorithm 4 use `n[k]` where the code uses the
#    parent's total, and why is the total right (eq. 11)?
# 2. **The root.** Rerun section 1 with the reference code's root:
#    `table_posterior(counts, root="reference")`. Which configurations of the table counts does
#    the shortcut down-weight (compare $\Gamma(n_k + 1)$ with $(n_k - 1)!$)?
# 3. **Tying.** Build a depth-2 tree with `fastpath.counts.ContextTree.from_leaf_counts` and
#    run `teaching.gibbs(tree, tying=...)` with "level", "same-parent" and "single". How do the
#    estimates of the smallest leaves change?
# 4. **Prior sensitivity.** In section 4, replace Gamma(2, 1) by Gamma(1, 0.1) and by
#    Gamma(10, 5). Which estimate moves most, the small leaf's or the large one's? Why?
# 5. **The window.** The paper draws each table count within $\pm 10$ of its current value.
#    Modify `table_count_conditional` to do so and run a leaf with 1,000 observations and a
#    large concentration. Compare with the full-range draw (docs: "The HDP sampler").
# 6. **Speed.** Time `teaching.gibbs` and `fastpath.estimate.hdp.estimate_tree` with
#    `HDPOptions(root="exact", update="exact", concentration_every=1)` on the same tree. Do
#    their estimates agree within their Monte-Carlo errors?
