# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Structure learning for Bayesian network classifiers: a class notebook
#
# The structure half of the course: which parents each attribute gets. The paper (Petitjean,
# Buntine, Webb, Zaidi, Machine Learning 107, 2018, section 2) estimates the tables of naive
# Bayes, TAN, kDB and selective kDB; its successors average selective kDBs (ESKDB). This
# notebook builds each of them by hand, checks the hand computation against `fastpath`'s
# functions, and draws what they learn. The site's page "Structure learning" states the
# definitions and references.
#
# The path: mutual information and conditional mutual information by hand (1); the tic-tac-toe
# data, whose attributes sit on a board (2); Chow-Liu's maximum spanning tree and TAN (3); kDB's
# parents (4); selective kDB's leave-one-out choice of $k$ and the attributes (5); ESKDB's
# sampled orders, its members' structures and why their diversity helps (6); exercises (7).
#
# It executes in about 20 s once fastpath's numba kernels are compiled (a first run compiles
# them). Figures for slides: set `TEACHING_FIGURES` to a folder, as for the teaching notebook.

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fastpath import ESKDBClassifier, TableEncoder, load_dataset
from fastpath.pipeline._members import members_proba  # one member's P(y | x) (section 6)
from fastpath.structure import (
    conditional_mutual_information,
    kdb,
    loo_scores,
    mutual_information,
    sample_order,
    select_skdb,
    tan,
)

from classroom import show  # examples/classroom.py: display, and save for slides

np.set_printoptions(precision=4, suppress=True)


def encode(X, y):
    """Integer codes of the attributes and the class, as the classifiers see them."""
    classes, y_codes = np.unique(np.asarray(y), return_inverse=True)
    encoder = TableEncoder().fit(X, y_codes, len(classes))
    return encoder.transform(X), y_codes, list(encoder.cardinalities_), len(classes)

# %% [markdown]
# ## 1. Mutual information by hand
#
# A table of 12 rows: the class is the exclusive or of $X_1$ and $X_2$ (except in two rows),
# and $X_3$ copies the class in 10 rows of 12.
#
# $$I(X; Y) = \sum_{x, y} p(x, y) \log\frac{p(x, y)}{p(x)\,p(y)}, \qquad
# I(X_i; X_j \mid Y) = \sum_y p(y) \sum_{x_i, x_j} p(x_i, x_j \mid y)
# \log\frac{p(x_i, x_j \mid y)}{p(x_i \mid y)\,p(x_j \mid y)}$$
#
# with the empirical probabilities, in nats.

# %%
small = pd.DataFrame({
    "X1": list("aabbaabbaabb"),
    "X2": list("ababababbaab"),
    "X3": list("pqqppqqppqpq"),
})
y_small = np.array(["-", "+", "+", "-", "-", "+", "+", "-", "+", "-", "+", "+"])
print(pd.concat([small, pd.Series(y_small, name="Y")], axis=1).T.to_string(header=False))


def mi_by_hand(x, y):
    joint = pd.crosstab(x, y).to_numpy() / len(x)
    px, py = joint.sum(axis=1, keepdims=True), joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / (px @ py)[nz])).sum())


def cmi_by_hand(xi, xj, y):
    return sum((y == c).mean() * mi_by_hand(xi[y == c], xj[y == c]) for c in np.unique(y))


codes_s, yc_s, cards_s, nc_s = encode(small, y_small)
lib_mi = mutual_information(codes_s, yc_s, cards_s, nc_s)
lib_cmi = conditional_mutual_information(codes_s, yc_s, cards_s, nc_s)
for i, name in enumerate(small.columns):
    print(f"I({name}; Y): by hand {mi_by_hand(small[name].to_numpy(), y_small):.4f},"
          f" fastpath {lib_mi[i]:.4f}")
for i, j in ((0, 1), (0, 2), (1, 2)):
    a, b = small.columns[i], small.columns[j]
    hand = cmi_by_hand(small[a].to_numpy(), small[b].to_numpy(), y_small)
    print(f"I({a}; {b} | Y): by hand {hand:.4f}, fastpath {lib_cmi[i, j]:.4f}")
print("log 2 =", round(np.log(2), 4))

# %% [markdown]
# **What to notice.** $X_1$ and $X_2$ each say almost nothing about the class, yet together they
# nearly determine it: their conditional mutual information given $Y$ is large (it would be
# $\log 2$ for an exact exclusive or). A naive Bayes, which scores attributes one at a time,
# cannot use them; a structure that makes $X_1$ a parent of $X_2$ can. $X_3$ carries the most
# information alone.
#
# ## 2. The tic-tac-toe data
#
# The bundled UCI Tic-Tac-Toe Endgame data: 958 final boards, each square `x`, `o` or `b`
# (blank), and the class "positive" when `x` has three in a row. The nine attributes sit on a
# board, so every structure below can be drawn on it.

# %%
X, y = load_dataset("tic-tac-toe")
codes, y_codes, cards, n_classes = encode(X, y)
names = [c.replace("-square", "") for c in X.columns]
mi = mutual_information(codes, y_codes, cards, n_classes)
cmi = conditional_mutual_information(codes, y_codes, cards, n_classes)
pos = {j: (j % 3, 2 - j // 3) for j in range(9)}  # square j at column j % 3, row j // 3

fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
im = axes[0].imshow(mi.reshape(3, 3), cmap="Blues")
for j in range(9):
    axes[0].text(j % 3, j // 3, f"{mi[j]:.3f}", ha="center", va="center", fontsize=9)
axes[0].set_xticks([])
axes[0].set_yticks([])
axes[0].set_title("I(square; class), nats", fontsize=10)
im = axes[1].imshow(cmi, cmap="Oranges")
axes[1].set_xticks(range(9), names, rotation=90, fontsize=7)
axes[1].set_yticks(range(9), names, fontsize=7)
axes[1].set_title("I(square i; square j | class), nats", fontsize=10)
fig.colorbar(im, ax=axes[1], shrink=0.8)
fig.suptitle("Tic-tac-toe: what each square, and each pair, says about the class", fontsize=10)
show(fig, "information")
print("squares by decreasing I(X; Y):", [names[j] for j in np.argsort(-mi, kind="stable")])

# %% [markdown]
# **What to notice.** The centre, on four of the eight lines, carries six times the
# information of a corner (on three) and twelve times that of an edge square (on two). The
# conditional mutual information is symmetric, and its largest values (0.045) join squares a
# knight's move apart, which share no line: it measures any dependence between two squares
# given the class, whatever its cause, not the rules a human reads into the board.
#
# ## 3. Chow-Liu and TAN
#
# Chow and Liu (1968): the tree over the attributes that maximises the likelihood is the
# **maximum spanning tree** of the complete graph weighted by mutual information. TAN (Friedman,
# Geiger and Goldszmidt 1997) uses the conditional mutual information given the class as the
# weight, roots the tree at an attribute (fastpath: the one with the highest $I(X; Y)$) and
# directs the edges away from the root; the class is a parent of every attribute. Kruskal's
# algorithm, by hand: take the edges by decreasing weight (ties: the smaller pair first) and
# keep each that joins two components.

# %%
edges = sorted(((-cmi[i, j], i, j) for i in range(9) for j in range(i + 1, 9)))
component = list(range(9))


def find(a):
    while component[a] != a:
        a = component[a]
    return a


tree_edges = []
for w, i, j in edges:
    if find(i) != find(j):
        component[find(i)] = find(j)
        tree_edges.append((i, j))
        print(f"edge {names[i]:>13s} - {names[j]:<13s} CMI {-w:.4f}")
root = int(np.argmax(mi))
parent_by_hand = {root: None}
frontier = [root]
while frontier:  # orient away from the root
    v = frontier.pop()
    for i, j in tree_edges:
        for a, b in ((i, j), (j, i)):
            if a == v and b not in parent_by_hand:
                parent_by_hand[b] = a
                frontier.append(b)
tan_structure = tan(codes, y_codes, cards, n_classes)
print("root:", names[tan_structure.root])
print("fastpath.structure.tan gives the same parents:",
      all(tan_structure.parents[j] == (() if parent_by_hand[j] is None else
                                       (parent_by_hand[j],)) for j in range(9)))
print("total weight of the tree:", round(sum(cmi[i, j] for i, j in tree_edges), 4))


# %%
def draw_structure(ax, parents, title, selected=None, colour="tab:blue"):
    """The attributes on the board; an arrow from each attribute parent to its child."""
    selected = range(9) if selected is None else selected
    for j in range(9):
        ax.add_patch(plt.Circle(pos[j], 0.28, fc="white" if j in selected else "0.85",
                                ec="black" if j in selected else "0.6", zorder=2))
        ax.text(*pos[j], names[j].replace("-", "\n"), ha="center", va="center", fontsize=5.5,
                zorder=3)
    for child, ps in enumerate(parents):
        for rank, p in enumerate(ps):
            ax.annotate("", xy=pos[child], xytext=pos[p],
                        arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.4 - 0.3 * rank,
                                        alpha=1.0 - 0.2 * rank, shrinkA=12, shrinkB=12,
                                        connectionstyle=f"arc3,rad={0.1 + 0.1 * rank}"))
    ax.set_xlim(-0.5, 2.5)
    ax.set_ylim(-0.5, 2.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9)


kdb2 = kdb(codes, y_codes, cards, n_classes, k=2)
fig, axes = plt.subplots(1, 2, figsize=(8, 4))
draw_structure(axes[0], tan_structure.parents, "TAN: Chow-Liu tree on I(Xi; Xj | Y)\n"
               "rooted at the centre")
draw_structure(axes[1], kdb2.parents, "kDB-2: each square's 2 parents\n"
               "(thinner: the second)", colour="tab:purple")
fig.suptitle("Attribute parents learnt from the tic-tac-toe data (the class, a parent of every "
             "square, not drawn)", fontsize=10)
show(fig, "tan_kdb")

# %% [markdown]
# **What to notice.** Kruskal took the seven knight's-move edges of weight 0.045 first; the
# eighth, the lightest that connects the centre, joins it to a corner (0.017). A spanning tree
# connects every attribute, however small the weight that reaches it, and it maximises the
# total weight: no other tree has more. TAN gives every attribute but the root exactly one
# attribute parent; kDB-2, beside it, makes the centre a parent of every corner, because its
# order puts the centre first and a corner's only earlier candidates are the centre and other
# corners.
#
# ## 4. kDB: $k$ parents each
#
# kDB (Sahami 1996) ranks the attributes by $I(X; Y)$; each attribute, in turn, takes as parents
# the $k$ attributes **ranked before it** with the highest $I(X_i; X_j \mid Y)$. The ranking
# makes the graph acyclic; $k$ sets the bias: $k = 0$ is naive Bayes, larger $k$ means deeper
# context trees (paper, section 2) with fewer rows per leaf, which is where the HDP's smoothing
# pays.

# %%
order = [int(j) for j in np.lexsort((np.arange(9), -mi))]  # decreasing MI, ties by index
print(f"{'attribute':>13s}  {'candidates (earlier in the order) by CMI':48s} parents")
by_hand = [()] * 9
for position, i in enumerate(order):
    earlier = order[:position]
    ranked = sorted(earlier, key=lambda j, i=i: (-cmi[i, j], j))
    by_hand[i] = tuple(ranked[:2])
    listing = ", ".join(f"{names[j]} {cmi[i, j]:.3f}" for j in ranked[:3])
    print(f"{names[i]:>13s}  {listing:48s} {[names[j] for j in by_hand[i]]}")
print("fastpath.structure.kdb(k=2) gives the same parents:", tuple(by_hand) == kdb2.parents)

# %% [markdown]
# ## 5. Selective kDB: $k^*$ and the attributes by leave-one-out
#
# Selective kDB (Martinez, Webb, Chen and Zaidi 2016) learns kDB-$K$, then picks
# $n^* \le n$ (the first $n^*$ attributes of the MI ranking) and $k^* \le K$ that minimise the
# **leave-one-out** RMSE of the class probabilities, $\sqrt{\frac1N \sum_r (1 - P_{-r}(y_r \mid
# x_r))^2}$, where $P_{-r}$ is the model fitted without row $r$. Because the parents of kDB-$k^*$
# are the first $k^*$ of kDB-$K$'s and the candidates are prefixes of one order, one pass scores
# all $n \times (K + 1)$ candidates: each row's counts are subtracted on the fly
# (`fastpath.structure.loo_scores`; `tests/test_selective.py` checks it against brute-force
# refits).

# %%
K = 3
full = kdb(codes, y_codes, cards, n_classes, k=K)
rmse = loo_scores(codes, y_codes, cards, n_classes, full)  # rmse[n* - 1, k*]
choice = select_skdb(codes, y_codes, cards, n_classes, K)
n_best, k_best = np.unravel_index(np.argmin(rmse), rmse.shape)
fig, ax = plt.subplots(figsize=(7, 3.4))
for k_star in range(K + 1):
    ax.plot(np.arange(1, 10), rmse[:, k_star], "o-", ms=4, label=f"k* = {k_star}")
ax.plot(choice.n_selected, rmse[choice.n_selected - 1, choice.k_selected], "*", ms=16,
        color="black", label="selected")
ax.set_xlabel("n*, the first attributes of the MI ranking kept")
ax.set_ylabel("leave-one-out RMSE")
ax.set_title(f"Selective kDB on tic-tac-toe: every (n*, k*) of kDB-{K}, one pass", fontsize=10)
ax.legend(fontsize=8)
show(fig, "skdb_curve")
print(choice)
print("the argmin of the curves:", (int(n_best) + 1, int(k_best)),
      " select_skdb:", (choice.n_selected, choice.k_selected))
print("selected squares:", [names[j] for j in choice.attributes])

# %% [markdown]
# **What to notice.** With $k^* = 0$ (naive Bayes on the first $n^*$ squares) the error falls
# over the first five squares and then rises: squares taken one at a time cannot express
# "three in a row", and naive Bayes counts their correlated evidence several times. Each parent
# more lowers the curve from four squares on, because a line is an interaction of three
# squares; on these 958 boards the lowest error is the largest model, all nine squares with
# $k^* = K = 3$. The leave-one-out error, unlike the training error, is an honest estimate of
# the error on new rows, so a model too rich for its data would show here as a rise; the
# curves are validation curves computed on the training data, without a refit.
#
# ## 6. ESKDB: many selective kDBs, each in its own order
#
# ESKDB (Zhang, Petitjean and Buntine 2020) averages the class posteriors of selective kDBs
# that differ in their attribute order: each member draws its order **without replacement with
# probability proportional to** $I(X_j; Y)$ (`fastpath.structure.sample_order`), then learns its
# kDB parents and its $(n^*, k^*)$ in that order. First a check of the draw: the first attribute
# of an order is attribute $j$ with probability $I(X_j; Y) / \sum_l I(X_l; Y)$.

# %%
rng = np.random.default_rng(0)
firsts = np.array([sample_order(mi, rng)[0] for _ in range(4000)])
freq = np.bincount(firsts, minlength=9) / len(firsts)
expected = mi / mi.sum()
print("first attribute, frequency:", freq.round(3))
print("                 expected: ", expected.round(3))
print("largest |difference| in standard errors:",
      round(float(np.max(np.abs(freq - expected) / np.sqrt(expected * (1 - expected) / 4000))), 2))

# %% [markdown]
# Now an ensemble of 8 members, fitted on two thirds of the boards and scored on the rest; each
# member's selected structure is drawn on the board (a square a member leaves out would be
# grey; on these boards every member keeps all nine, and they differ in $k^*$ and the
# parents).

# %%
test = np.random.default_rng(1).random(len(X)) < 1 / 3
ensemble = ESKDBClassifier(n_estimators=8, k=3, random_state=0)
ensemble.fit(X[~test], y[~test])
fig, axes = plt.subplots(2, 4, figsize=(11, 6))
for m, (member, ax) in enumerate(zip(ensemble.members_, axes.ravel(), strict=True)):
    sel = member.selection
    draw_structure(ax, sel.structure.parents, f"member {m}: n* = {sel.n_selected}, "
                   f"k* = {sel.k_selected}\nfirst in order: {names[member.order[0]]}",
                   selected=set(sel.attributes))
fig.suptitle("The members of ESKDB on tic-tac-toe: each a selective kDB in a sampled order",
             fontsize=10)
show(fig, "members")

# %%
labels = ensemble.classes_
truth = (np.asarray(y[test])[:, None] == labels[None, :]).astype(float)


def scores(proba):
    """Accuracy, log loss and Brier score (squared error summed over the classes)."""
    p_true = (proba * truth).sum(axis=1)
    return ((proba.argmax(axis=1) == truth.argmax(axis=1)).mean(),
            -np.log(np.maximum(p_true, 1e-300)).mean(), ((proba - truth) ** 2).sum(axis=1).mean())


member_proba = np.array([members_proba([mem], X[test]) for mem in ensemble.members_])
mean_proba = member_proba.mean(axis=0)
print(f"{'':12s} {'accuracy':>9s} {'log loss':>9s} {'Brier':>7s}")
for m, proba in enumerate(member_proba):
    print(f"member {m:<5d} {scores(proba)[0]:9.4f} {scores(proba)[1]:9.4f} {scores(proba)[2]:7.4f}")
each = np.array([scores(p) for p in member_proba])
print(f"{'mean member':12s} {each[:, 0].mean():9.4f} {each[:, 1].mean():9.4f} "
      f"{each[:, 2].mean():7.4f}")
ens = scores(ensemble.predict_proba(X[test]))
print(f"{'ensemble':12s} {ens[0]:9.4f} {ens[1]:9.4f} {ens[2]:7.4f}")
ambiguity = ((member_proba - mean_proba) ** 2).sum(axis=2).mean(axis=1).mean()
print(f"Brier: mean member {each[:, 2].mean():.4f} - ambiguity {ambiguity:.4f} = "
      f"{each[:, 2].mean() - ambiguity:.4f}, the ensemble's {scores(mean_proba)[2]:.4f}")
print("predict_proba is the members' mean:", np.allclose(mean_proba,
                                                          ensemble.predict_proba(X[test])))

# %% [markdown]
# **What to notice.** The members differ in their order and so in the parents they choose and
# the $k^*$ they select, and their errors differ too. Averaging cannot do worse than the
# average member under a convex loss: for the squared error exactly, the ensemble's Brier score
# is the mean member's minus the **ambiguity**, the members' spread around their mean (Krogh and
# Vedelsby 1995: the identity printed above), and for the log loss by Jensen's inequality. The
# more diverse the members, while each stays accurate, the larger the gain; sampling the order
# in proportion to the mutual information keeps the informative squares early (each member
# stays good) while still varying the rest (they disagree).
#
# ## 7. Exercises
#
# Each has a hint; the solutions are folded away below the exercise (the student edition,
# `make student`, has none). Try first.
#
# **1. Units and bounds.** Show that $0 \le I(X; Y) \le \min(\log|X|, \log|Y|)$ and compute the
# upper bound for a square of the board and the class. Is the centre's 0.060 nats a lot?
#
# *Hint:* $I(X; Y) = H(Y) - H(Y \mid X)$, and an entropy is at most the log of the number of
# values.
#
# <details markdown="1"><summary>Solution</summary>
#
# $I(X; Y) = H(Y) - H(Y \mid X) \le H(Y) \le \log|Y|$, symmetric in $X$ and $Y$, and $I \ge 0$
# as a Kullback-Leibler divergence. Here $\log 2 = 0.693$ bounds it, and $H(Y)$ itself is
# ```python
# p = y.value_counts(normalize=True).to_numpy()
# print(-(p * np.log(p)).sum())  # 0.645 nats
# ```
# so the centre removes under a tenth of the class's entropy: no single square decides the game.
# </details>
#
# **2. TAN's root.** Root the Chow-Liu tree of section 3 at a corner instead of the centre. Does
# the likelihood of the model change? Does the classifier change?
#
# *Hint:* a tree's joint distribution can be written from any root: $p(x_r) \prod_{j \ne r}
# p(x_j \mid x_{\mathrm{pa}(j)})$, with every factor conditioned on the class as well.
#
# <details markdown="1"><summary>Solution</summary>
#
# With maximum-likelihood tables the joint distribution of an undirected tree is the same from
# every root ($p(x_a, x_b)/p(x_a)$ and $p(x_a, x_b)/p(x_b)$ reorganise the same product), so the
# likelihood and the class posterior are unchanged. With smoothed tables (m-estimates or the
# HDP) the tables differ: each context tree branches on the parent, and the root changes which
# squares are conditioned on which, so the estimates, and the predictions, change slightly.
# </details>
#
# **3. Diversity.** Fit `ESKDBClassifier(n_estimators=8, k=3, random_state=0)` with
# `stochastic_discretization=False` and then members that all use the MI order (hint below).
# Which has the larger ambiguity?
#
# *Hint:* members with the same order on nominal data learn the same structure; the ambiguity
# of identical members is 0.
#
# <details markdown="1"><summary>Solution</summary>
#
# On nominal data the order is the only source of diversity. Eight members in the MI order
# are one selective kDB eight times: the ambiguity is 0 and the ensemble is that one
# classifier (`BayesNetClassifier(structure="skdb", k=3)`, with the ensemble's estimates).
# The sampled orders give a positive ambiguity, and with it the ensemble's lower Brier score
# and log loss than the average member's, as section 6 prints.
# </details>
