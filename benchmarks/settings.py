"""What the benchmarks run: datasets, preprocessing, hyper-parameters and model builders.

Every setting that more than one script uses lives here (the accuracy grids, the attacks that
re-fit their models, the zoo recipes written from them), so that the scripts never import each
other: a script imports :mod:`common` (the runner), this module and, to write its table after
a run, :mod:`summarize`.

``use_smoke_settings()`` (each script's ``--smoke``) adds the embedded ``csbm`` graph to every
dataset table and cuts every epoch count to 1: a run that checks the code path in seconds,
never a result (``smoke.py`` runs every script that way into a temporary folder).
"""

from __future__ import annotations

import math
from pathlib import Path

# -- GAP benchmark (gap_accuracy.py; issue 4 protocol) ---------------------------------------
#: the Facebook100 classes, declared from public knowledge (issue 27): the networks are a
#: September 2005 snapshot, when the undergraduate classes enrolled were those of 2006-2009 and
#: the class of 2005 had just graduated. (They are also the classes with >= 1,000 nodes in both
#: schools, how they were first chosen: by counting labels, which no recipe may rely on.)
YEARS = [2005, 2006, 2007, 2008, 2009]
#: the papers' five feature columns with a public code book: the feature layout does not depend
#: on who is in the graph (the data vocabulary is a private read at node level)
PUBLIC_VOCABULARY = dict(dataset_kwargs={"vocabulary": "public"})
#: ``NodeDataModule`` options per dataset of the GAP / ProGAP / baselines grids
DATASETS = {
    "facebook100/Rutgers89": dict(
        target="year", classes=YEARS, remove_isolated=False, **PUBLIC_VOCABULARY
    ),
    "facebook100/Wisconsin87": dict(
        target="year", classes=YEARS, remove_isolated=False, **PUBLIC_VOCABULARY
    ),
    # page types (4 classes, 0..3), declared: node level may not read the number of classes;
    # public from the dataset's documentation (politicians, governmental organizations,
    # television shows, companies; Rozemberczki et al. 2019)
    "musae-facebook": dict(classes=[0, 1, 2, 3], remove_isolated=False),
}
#: node-level degree bound D per dataset: a promise that no in- or out-degree exceeds it, declared
#: from public knowledge and never read off the private graph (design invariant 1, issue 27).
#: Each value's source is in :data:`DEGREE_BOUND_SOURCE`; recipes, registry and cards repeat it.
#: musae-facebook has none: no public cap on mutual page likes is known, and the round 1,000
#: used before was chosen knowing the graph (review 2, F2), so it has no node-level rows/recipes.
MAX_DEGREE = {
    "facebook100/Rutgers89": 5000,
    "facebook100/Wisconsin87": 5000,
}
#: where each public bound comes from (written into the recipes and the registry)
DEGREE_BOUND_SOURCE = {
    "facebook100/Rutgers89": (
        "Facebook's limit of 5,000 friends per personal profile (a platform rule, public); the "
        "within-school graph holds a subset of each student's friends"
    ),
    "facebook100/Wisconsin87": (
        "Facebook's limit of 5,000 friends per personal profile (a platform rule, public); the "
        "within-school graph holds a subset of each student's friends"
    ),
}
#: the bounds used before issue 27: each graph's observed maximum in/out degree after the
#: preprocessing of DATASETS (``lightning_dpgnn.privacy.aggregation.degrees``; self-loops
#: removed, isolated nodes and undeclared classes kept): musae-facebook 709 held by one node,
#: Rutgers89 568, Wisconsin87 2,999. Read off the private graph, so a model published with them
#: reveals that a node of exactly that degree exists; kept only to measure what honesty costs
#: (honest_degree_bound.py) and to fail a test if a recipe ever uses one again.
OBSERVED_MAX_DEGREE = {
    "facebook100/Rutgers89": 568,
    "facebook100/Wisconsin87": 2999,
    "musae-facebook": 709,
}
#: the papers' delta rule (largest power of ten below 1/#units): accuracy rows that are compared
#: with the papers' tables use it, not the library's stricter default (n * delta <= 0.01)
PAPER_DELTA = "paper"
EDGE_EPS = [0.5, 1.0, 2.0, 4.0, 8.0]
NODE_EPS = [2.0, 4.0, 8.0, 16.0]
# the extra points ProGAP (issue 5) is compared against; DP-MLP stays on NODE_EPS
GAP_EDGE_EPS = [0.25, *EDGE_EPS]
GAP_NODE_EPS = [*NODE_EPS, 32.0]
# the paper's settings (thesis §4.7.3–4.7.4) with hops/degree fixed instead of tuned
GAP_COMMON = dict(hidden=16, encoder_layers=2, base_layers=1, head_layers=1, lr=0.01,
                  combine="cat")  # fmt: skip
GAP_EDGE = dict(hops=2, encoder_epochs=100, classifier_epochs=100)
GAP_NODE = dict(hops=2, encoder_epochs=10, classifier_epochs=10, batch_size=256,
                max_grad_norm=1.0)  # fmt: skip  # + max_degree: MAX_DEGREE[dataset]
MLP = dict(hidden=16, layers=3, lr=0.01)
DPMLP = dict(hidden=16, layers=3, lr=0.01, epochs=10, batch_size=256)
#: the trainer of a grid run (staged models set their own total of epochs)
TRAINER = dict(max_epochs=100)

# -- ProGAP benchmark (progap_accuracy.py; issue 5 protocol) ---------------------------------
PROGAP_EDGE_EPS = [0.25, 0.5, 1.0, 2.0, 4.0]
PROGAP_NODE_EPS = [2.0, 4.0, 8.0, 16.0, 32.0]
DEPTHS = [1, 2, 3, 4, 5]
DEPTH_EPS = [0.25, 1.0]
DEPTH_DATASETS = ("facebook100/Rutgers89", "facebook100/Wisconsin87")
# thesis §5.5.3 with depth fixed to GAP's hops (2) instead of tuned in 1..5; 1 base layer, lr 0.01
PROGAP_COMMON = dict(depth=2, base_layers=1, jk="cat", hidden=16, lr=0.01)
PROGAP_EDGE = dict(epochs_per_stage=100)  # full batch, BatchNorm, best epoch per stage on val/acc
PROGAP_NODE = dict(epochs_per_stage=10, batch_size=256, max_grad_norm=1.0)  # + MAX_DEGREE

# -- baselines benchmark (baselines_accuracy.py; issue 19) -----------------------------------
BASELINE_EDGE_EPS = [1.0, 4.0]
BASELINE_NODE_EPS = [8.0]
SAGE = dict(hidden=16, layers=2, pre_layers=2, post_layers=1, jk="cat", lr=0.01, epochs=100)
DPGNN = dict(hidden=16, layers=2, lr=0.01, epochs=10, batch_size=256, max_grad_norm=1.0)

# -- LPGNN (lpgnn_accuracy.py) and PGC (pgc_accuracy.py): local DP ---------------------------
#: 0/1 features: the public bounds (0, 1) replace per-column min-max (which reads the features)
BINARY_FEATURES = dict(feature_range=(0.0, 1.0), feature_bounds=(0.0, 1.0))
# labels are private (randomized response), so the classes are declared: Cora's 7 topics,
# Facebook's 4 page types (all of them: nothing is filtered)
LPGNN_DATASETS = {
    "cora": dict(split="lpgnn", classes=list(range(7)), **BINARY_FEATURES),
    "musae-facebook": dict(split="lpgnn", classes=list(range(4)), **BINARY_FEATURES),
}
LPGNN_STEPS = {"cora": (16, 8), "musae-facebook": (4, 2)}  # (K_x, K_y), thesis §3.5.2
LPGNN_HPARAMS = dict(lr=0.01, weight_decay=1e-3, dropout=1e-3)
PGC_DATASETS = {
    "cora": dict(split="public", **BINARY_FEATURES),
    "citeseer": dict(split="public", **BINARY_FEATURES),
    "musae-twitch-en": dict(split="lpgnn", **BINARY_FEATURES),
    "musae-facebook": dict(split="lpgnn", **BINARY_FEATURES),
}
# Table 2.2: (lr, weight decay, dropout) for GCN node classification and the VGAE
TABLE_2_2 = {
    "node": {
        "citeseer": (0.01, 0.1, 0.5),
        "cora": (0.01, 0.01, 0.5),
        "musae-twitch-en": (0.001, 1e-4, 0.0),
    },
    "link": {
        "citeseer": (0.01, 0.01, 0.0),
        "cora": (0.01, 0.01, 0.0),
        "musae-twitch-en": (0.01, 0.001, 0.0),
    },
}


def lpgnn_pair_key(x_eps: float, y_eps: float) -> str:
    """The LPGNN search pair a setting borrows its hyper-parameters from (§3.5.2)."""
    return f"{'inf' if math.isinf(x_eps) else 1}|{'inf' if math.isinf(y_eps) else 1}"


def pgc_hparams(task: str, dataset: str) -> dict:
    """Table 2.2's hyper-parameters of ``task`` on ``dataset`` (Cora's where it has none)."""
    lr, wd, dp = TABLE_2_2[task].get(dataset, TABLE_2_2[task]["cora"])
    return dict(lr=lr, weight_decay=wd, dropout=dp)


# -- the reference implementation (reference_parity.py, defaults table) ----------------------
SCHOOLS = ("Rutgers89", "Wisconsin87")
#: reference means (5 repeats) as measured with the authors' code, issue 13
REFERENCE = {
    ("MLP", None): (49.33, 50.16),
    ("GAP-K2", 0.25): (51.11, 53.14),
    ("GAP-K2", 1.0): (61.91, 65.45),
    ("GAP-K2", 4.0): (71.58, 73.15),
    ("GAP-K2", None): (77.22, 78.07),
    ("ProGAP-K3", 0.25): (54.49, 56.33),
    ("ProGAP-K3", 1.0): (70.07, 74.10),
    ("ProGAP-K3", 4.0): (77.26, 79.64),
    ("ProGAP-K3", None): (80.41, 81.65),
    ("ProGAP-K2", 1.0): (69.53, 73.31),
    ("ProGAP-K2", 4.0): (76.44, 78.75),
}
#: suffix of the reference cells run with ``label_counts=True`` (today's default)
COUNTS = "+counts"

# -- attacks (audit_attacks.py, mia_diagnosis.py, mia_recalibration.py) ----------------------
ATTACK_DATASETS = {
    **DATASETS,
    # small schools for reduced grids (the same protocol as the GAP benchmark's schools)
    "facebook100/Swarthmore42": DATASETS["facebook100/Rutgers89"],
    "facebook100/Caltech36": DATASETS["facebook100/Rutgers89"],
}
#: named methods: (class exported by lightning_dpgnn, privacy level); ``*-inf`` is non-private
ATTACK_METHODS = {
    "GAP-NDP": ("GAP", "node"),
    "ProGAP-NDP": ("ProGAP", "node"),
    "DP-MLP": ("DPMLP", "node"),
    "GAP-EDP": ("GAP", "edge"),
    "ProGAP-EDP": ("ProGAP", "edge"),
    "SAGE-inf": ("SAGE", "none"),
    "EdgeRand": ("EdgeRand", "edge"),
    "DPGNN": ("DPGNN", "node"),
    # reads no edges: the link-stealing AUC that features and homophily alone give
    "MLP-inf": ("MLP", "none"),
}
#: the non-private counterpart of a class that has no ``privacy="none"``
NONPRIVATE = {"DPMLP": "MLP", "DPGNN": "SAGE", "EdgeRand": "SAGE"}


def attack_settings(cls: str, level: str) -> dict:
    """Keyword arguments of an attacked model by class and level: the accuracy benchmarks'."""
    return {
        ("GAP", "node"): {**GAP_COMMON, **GAP_NODE},
        ("GAP", "edge"): {**GAP_COMMON, **GAP_EDGE, "edge_unit": "directed"},
        ("GAP", "none"): {**GAP_COMMON, **GAP_EDGE},
        ("ProGAP", "node"): {**PROGAP_COMMON, **PROGAP_NODE},
        ("ProGAP", "edge"): {**PROGAP_COMMON, **PROGAP_EDGE, "edge_unit": "directed"},
        ("ProGAP", "none"): {**PROGAP_COMMON, **PROGAP_EDGE},
        ("DPMLP", "node"): dict(DPMLP),
        ("MLP", "none"): dict(MLP),
        # the baselines benchmark's settings (GraphSAGE with sum aggregation, pre/post MLPs, JK)
        ("SAGE", "none"): dict(SAGE),
        ("EdgeRand", "edge"): {**SAGE, "edge_unit": "directed"},  # as GAP/ProGAP-EDP here
        ("DPGNN", "node"): dict(DPGNN),
    }.get((cls, level), {})


def resolve(method: str) -> tuple[str, str]:
    """``(class name, level)`` of a named attack method or a ``Class:level`` spec."""
    if method in ATTACK_METHODS:
        return ATTACK_METHODS[method]
    cls, _, level = method.partition(":")
    return cls, level or "node"


def inf_model(method: str) -> str:
    """The class a method's ``inf`` column fits (its non-private counterpart)."""
    cls, level = resolve(method)
    return NONPRIVATE.get(cls, cls) if level != "none" else cls


def build(method: str, eps: float, seed: int, max_degree: int, extra: dict):
    """The model of attack ``method`` at ``eps`` (``inf``: non-private), by class name."""
    import inspect

    import lightning_dpgnn

    cls_name, level = resolve(method)
    if math.isinf(eps) or level == "none":
        cls_name, level = NONPRIVATE.get(cls_name, cls_name), "none"
    cls = getattr(lightning_dpgnn, cls_name)
    params = inspect.signature(cls.__init__).parameters
    # a class that forwards ``**kwargs`` to its base (GAP, SAGE, ...) takes every setting
    forwards = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {**attack_settings(cls_name, level), **extra}
    if level != "none":
        kwargs["epsilon"] = eps
    if "privacy" in params:
        kwargs["privacy"] = level
    from lightning_dpgnn.methods.ap import AggregationPerturbationModule

    takes_degree = "max_degree" in params or issubclass(cls, AggregationPerturbationModule)
    if level == "node" and takes_degree:
        kwargs["max_degree"] = max_degree
    if forwards or "seed" in params:
        kwargs["seed"] = seed
    return cls(**{k: v for k, v in kwargs.items() if forwards or k in params})


def shadow_builder(target, method: str, eps: float, seed: int, max_degree: int, extra: dict):
    """The shadow of ``target``: the same class and settings, at the target's noise multiplier
    when it is private. The calibration is a deterministic function of the plan, which the
    shadow shares (class, hyper-parameters, the split's sizes), so it would find the same
    multiplier; passing it skips the search (most of a private fit's time: ~140 s of a 145 s
    GAP-NDP fit at epsilon 1 on Swarthmore42), and the shadow still checks it against epsilon."""
    z = getattr(target, "noise_multiplier", None)
    settings = extra if z is None or math.isinf(eps) else {**extra, "noise_multiplier": z}
    # the shadow's data module declares no classes: the target's shapes are public metadata
    shapes = {k: target.hparams[k] for k in ("num_features", "num_classes") if k in target.hparams}
    return lambda: build(method, eps, seed, max_degree, {**settings, **shapes})


def max_degree(data) -> int:
    """D for the attacked models: the graph's largest in/out degree (an attack-benchmark
    convenience, as :data:`OBSERVED_MAX_DEGREE`; a published model uses a public bound,
    :data:`MAX_DEGREE`)."""
    from lightning_dpgnn.privacy.aggregation import degrees

    d_in, d_out = degrees(data.edge_index, data.num_nodes)
    return int(max(d_in.max(), d_out.max()))


# -- zoo recipes (make_recipes.py, baselines_accuracy.py --recipes) --------------------------
RECIPES = Path(__file__).resolve().parents[1] / "zoo" / "recipes"
SHORT = {
    "facebook100/Rutgers89": "rutgers89",
    "facebook100/Wisconsin87": "wisconsin87",
    "musae-facebook": "facebook",
}


def data_args(data: str, level: str) -> dict:
    """``NodeDataModule`` arguments of ``data`` for a recipe at privacy ``level``: at edge and
    node level exactly the benchmark's (:data:`DATASETS`: declared classes, isolated nodes
    kept, Facebook100's public code book), so a recipe reproduces its benchmark row; without
    privacy the papers' protocol (classes with >= 1,000 nodes, isolated nodes removed)."""
    if level == "none":
        school = data.startswith("facebook100/")
        paper = {"target": "year", "min_class_size": 1000} if school else {}
        return {"name": data, **paper, "remove_isolated": True}
    return {"name": data, **DATASETS[data]}


def node_degree(data: str) -> dict:
    """Node level: ``max_degree`` is a checked bound on every degree, declared from public
    knowledge, never the graph's observed maximum (:data:`MAX_DEGREE` and its source); ``{}``
    for a graph without a public bound (it gets no degree-bounded node-level row or recipe)."""
    return {"max_degree": MAX_DEGREE[data]} if data in MAX_DEGREE else {}


def without_unbounded_node_recipes(recipes: dict[str, dict], data: str) -> dict[str, dict]:
    """``recipes`` less the degree-bounded node-level ones (``*-node-*``) when ``data`` has no
    public degree bound (:data:`MAX_DEGREE`)."""
    if data in MAX_DEGREE:
        return recipes
    return {name: r for name, r in recipes.items() if "-node-" not in name}


def write_recipes(recipes: dict[str, tuple[dict, str]], folder: Path = RECIPES) -> None:
    """Write every ``name -> (config, header comment)`` as ``folder/<name>.yaml``."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    for name, (cfg, header) in recipes.items():
        (folder / f"{name}.yaml").write_text(header + yaml.safe_dump(cfg, sort_keys=False))


def recipes_folder(doc: str) -> Path:
    """The ``--out FOLDER`` of a recipe writer's command line (default: the zoo's recipes)."""
    import argparse

    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=Path, default=RECIPES, help="folder (default: zoo/recipes)")
    return p.parse_args().out


def degree_comment(name: str, data: str) -> str:
    """The header lines of a node-level recipe saying where its ``max_degree`` comes from
    (:data:`DEGREE_BOUND_SOURCE`); empty for the other recipes."""
    if "-node-" not in name:
        return ""
    words = f"max_degree {MAX_DEGREE[data]}: {DEGREE_BOUND_SOURCE[data]}.".split()
    lines, line = [], "#"
    for w in words:
        if len(line) + len(w) + 1 > 96:
            lines.append(line)
            line = "#"
        line += " " + w
    return "\n".join([*lines, line]) + "\n"


def recipe(model_cls: str, init: dict, data: str, epochs: int | None, level: str) -> dict:
    """A ``dpgnn fit --config`` recipe of a GAP / ProGAP / baseline setting; ``epochs=None``:
    no ``trainer.max_epochs`` (a staged model's stages set the length of its fit)."""
    trainer = {} if epochs is None else {"trainer": {"max_epochs": epochs}}
    return {
        "seed_everything": 0,
        **trainer,
        "model": {"class_path": model_cls, "init_args": init},
        "data": {
            "class_path": "lightning_dpgnn.data.NodeDataModule",
            "init_args": data_args(data, level),
        },
    }


# -- honest degree bound (honest_degree_bound.py; issue 27, fault 2) -----------------------
#: the epsilon of the node-level zoo entries, at which the observed and public D are compared
HONEST_EPSILON = 8.0
#: the two kinds of node-level bound compared, by the name a row's method carries
DEGREE_BOUNDS = {"observed": OBSERVED_MAX_DEGREE, "public": MAX_DEGREE}

# -- audits (audit_aggregation.py, audit_power.py) -------------------------------------------


def HalfNoise(z: float, **kw):  # noqa: N802 - reads as the mechanism it builds
    """A broken aggregation: draws noise at ``z / 2`` and records ``z`` on the ledger (what
    the mechanism audits must catch)."""
    from lightning_dpgnn.privacy.aggregation import GaussianAggregation

    class HalfNoise(GaussianAggregation):
        @property
        def std(self) -> float:
            return super().std / 2

    return HalfNoise(z, **kw)


#: audit_power.py: delta of the audited friendship unit
AUDIT_POWER_DELTA = 1e-5
#: audit_power.py: name -> (Gaussians at one multiplier in the fit, the fit's epsilon)
AUDIT_POWER_SETTINGS = {
    "GAP eps 1 (defaults)": (3, 1.0),
    "GAP eps 2, 1 hop": (1, 2.0),
}
#: audit_power.py: trials per hypothesis
AUDIT_POWER_TRIALS = (20_000, 100_000, 300_000, 1_000_000)


# -- GW-LDP (gwldp_accuracy.py, gwldp_clustering.py; summarize.py gwldp, gwldp_clustering) ----
#: epsilons per graph of the sound LDP release (matrix multi-bit encoder, n public)
GWLDP_EPSILONS = (4.0, 64.0)
#: gwldp_accuracy.py: epsilons of the padded release (the size hidden)
GWLDP_PADDED_EPSILONS = (64.0,)
#: gwldp_accuracy.py: a public bound on the molecules' size, declared (not read off the data;
#: MUTAG's largest has 28)
GWLDP_N_MAX = 30
#: gwldp_accuracy.py: its rows, in table order
GWLDP_ROWS = ("size_only", "gw_A", "gcn_end_to_end", "clear_H", "ldp_H", "ldp_padded",
              "noise_only", "paper_code", "dpfedavg_end_to_end", "dpfedavg_ldp_H")  # fmt: skip
#: gwldp_accuracy.py --fedavg-epsilons: the L2 clip of one client's update (DP-FedAvg); set
#: before any run, not tuned on the results
GWLDP_FEDAVG_CLIP = 0.1
#: gwldp_accuracy.py --protocol resplit: random stratified 7:2:1 splits of one GW matrix
GWLDP_RESPLITS = 10
#: gwldp_clustering.py: its rows, in table order
GWLDP_CLUSTERING_ROWS = ("random", "gw_A", "clear_H", "ldp_H")
#: ``--smoke`` of both GW-LDP scripts: graphs per seed (a seeded sample of MUTAG's / the ego
#: centres), FedAvg rounds, one seed
GWLDP_SMOKE = dict(graphs=40, rounds=1, seeds=1)



# -- PoinDP (poindp_accuracy.py; summarize.py poindp) --------------------------------------------
#: datasets (offline) and the authors' split: 10% train, 10% validation, 80% test, keyed on node
#: identity by the seed (the authors drew one split, seed 42, for all 5 runs; ours differ per
#: seed, so the CI covers the split too); classes declared, isolated nodes kept
POINDP_DATASETS = {
    "cora": dict(split=(0.1, 0.1, 0.8), classes=list(range(7)), remove_isolated=False),
    "citeseer": dict(split=(0.1, 0.1, 0.8), classes=list(range(6)), remove_isolated=False),
}
#: target epsilons of the sweep (edge level, undirected unit); Table 1 is at 1
POINDP_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
#: the authors' code's training settings (paper-code mode and the GCN row): Adam lr 0.005,
#: weight decay 5e-4, 200 epochs, patience 100 on validation accuracy
POINDP_PAPER_TRAINING = dict(lr=0.005, weight_decay=5e-4)
#: the sound PoinDP's settings (the library defaults: hidden 16, one hop, beta "auto", C = 1)
POINDP_SOUND = dict(encoder_epochs=100, classifier_epochs=100)
#: Table 2's ablations at epsilon 1: the inter (radius) share beta
POINDP_ABLATIONS = {"w/o inter": 0.0, "w/o intra": 1.0, "w/o allocation": 0.5}
#: the paper's Table 1 (W-F1 / M-F1 = the code's swapped weighted F1 / accuracy, %; 5 runs)
POINDP_PAPER_TABLE1 = {
    "cora": {"GCN": (80.0, 80.1), "GAT": (81.6, 81.8), "HyperIMBA": (83.0, 83.1),
             "PoinDP": (78.2, 75.5)},
    "citeseer": {"GCN": (68.1, 68.6), "GAT": (69.4, 70.0), "HyperIMBA": (76.3, 73.4),
                 "PoinDP": (75.5, 72.5)},
}
#: the paper's Table 2 (W-F1 %, setting unspecified: its Cora PoinDP row is 59.9, not 78.2)
POINDP_PAPER_TABLE2 = {
    "cora": {"PoinDP": 59.9, "w/o inter": 48.4, "w/o intra": 48.8, "w/o allocation": 51.2},
    "citeseer": {"PoinDP": 74.0, "w/o inter": 60.6, "w/o intra": 60.1, "w/o allocation": 69.5},
}
#: link stealing on every fitted model: repeats and edge / non-edge pairs per repeat
POINDP_LINK = dict(repeats=5, pairs=1000)
#: ``--smoke``: the embedded csbm graph, one seed, 2 epochs per stage
POINDP_SMOKE = dict(epochs=2)

# -- smoke runs --------------------------------------------------------------------------------
SMOKE_DATASET = "csbm"
#: the embedded csbm graph (2,000 nodes, 5 classes, generated in code): classes declared,
#: isolated nodes kept; its largest in/out degree is 21
SMOKE_DATA = dict(classes=[0, 1, 2, 3, 4], remove_isolated=False)


def use_smoke_settings() -> None:
    """``--smoke``: add the csbm graph to every dataset table and run 1 epoch everywhere (the
    tables are edited in place, so every script and builder sees the change)."""
    for table in (DATASETS, ATTACK_DATASETS):
        table[SMOKE_DATASET] = dict(SMOKE_DATA)
    # csbm is generated in code, so its largest degree is public: both kinds of bound are it
    MAX_DEGREE[SMOKE_DATASET] = OBSERVED_MAX_DEGREE[SMOKE_DATASET] = 21
    DEGREE_BOUND_SOURCE[SMOKE_DATASET] = "the largest degree of the embedded csbm graph (public)"
    for settings, keys in ((GAP_EDGE, ("encoder_epochs", "classifier_epochs")),
                           (GAP_NODE, ("encoder_epochs", "classifier_epochs")),
                           (PROGAP_EDGE, ("epochs_per_stage",)),
                           (PROGAP_NODE, ("epochs_per_stage",)),
                           (SAGE, ("epochs",)), (DPGNN, ("epochs",)), (DPMLP, ("epochs",)),
                           (TRAINER, ("max_epochs",))):  # fmt: skip
        settings.update(dict.fromkeys(keys, 1))


# -- HeteroRR (heterorr_edges.py, heterorr_accuracy.py; docs/heterorr.md) ------------------------
#: Cora as the HeteroRR benchmarks load it: classes declared (the 7 topics), isolated nodes
#: kept, binary bag-of-words features in their public range [0, 1]
HETERORR_CORA = dict(classes=list(range(7)), remove_isolated=False, feature_range=(0.0, 1.0),
                     feature_bounds=(0.0, 1.0))
#: the graphs of the larger-graph EdgeRR rows (musae-facebook and one Facebook100 school)
HETERORR_GRAPHS = {
    "cora": HETERORR_CORA,
    "musae-facebook": DATASETS["musae-facebook"],
    "facebook100/Caltech36": DATASETS["facebook100/Rutgers89"],
}
#: Fig. 11 of the supplement: eps_e = 1, the share of private edges rho from 0.01 to 1
HETERORR_FIG11_EPSILON = 1.0
HETERORR_RHOS = (0.01, 0.05, 0.1, 0.3, 0.6, 1.0)
#: the authors' Cora script: rho = 0.3 and these edge budgets
HETERORR_CORA_RHO = 0.3
HETERORR_CORA_EPSILONS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0)
#: the larger graphs: rho as PPI in the paper, one edge budget (CPU)
HETERORR_GRAPH_RHOS = (0.05, 0.1, 0.2)
HETERORR_GRAPH_EPSILON = 1.0
#: the feature mechanisms at equal eps_f on Cora (edges public)
HETERORR_FEATURE_EPSILONS = (1.0, 8.0)
HETERORR_FEATURE_MECHANISMS = ("feature-rr", "multibit", "duchi", "piecewise")
#: the link-stealing rows: the edge budgets of the EdgeRR models attacked
HETERORR_LINK_EPSILONS = (0.1, 1.0)
#: the GCN of every HeteroRR row (the authors' Cora script: 2 layers, 128 hidden; Kipf's
#: optimiser settings) and its epochs (100: CPU; the last epoch is tested)
HETERORR_GCN = dict(hidden=128, layers=2, dropout=0.5, lr=0.01, weight_decay=5e-4)
HETERORR_EPOCHS = 100
#: ``--smoke``: the chain length per node (EdgeRR's minimum, PrivHRG's burn-in: shorter chains
#: are refused) and the epochs
HETERORR_SMOKE = dict(steps_per_node=1000.0, epochs=1)
#: the feature rows declare this share of Cora's nodes public (by a hash of the seed): their
#: features and labels fit FeatureRR's theta and the PCA in the clear, as the unit says
HETERORR_PUBLIC_FRACTION = 0.1
#: heterorr_accuracy.py's parts and edge rows (table order)
HETERORR_PARTS = ("edges", "graphs", "features")
HETERORR_EDGE_METHODS = ("GCN", "public-only", "EdgeRR", "EdgeRR-paper-code", "LapGraph",
                         "EdgeRand")
#: heterorr_edges.py (Fig. 11): the releases compared and the random-walk hops
HETERORR_FIG11_METHODS = ("EdgeRR", "public-only", "LapGraph", "EdgeRand", "empty")
HETERORR_HOPS = 4
#: heterorr_feature_error.py (Fig. 10): the mechanisms (table and plot order) and the skewed
#: public weights theta_i ~ HETERORR_SKEW^i
HETERORR_ERROR_MECHANISMS = (
    "FeatureRR (uniform theta)", "FeatureRR (skewed theta)", "Duchi", "Piecewise", "Hybrid",
    "Three-Outputs", "PM-SUB", "Laplace", "Gaussian", "Multi-bit (LPGNN)",
)
HETERORR_SKEW = 0.75


def skewed_theta(d: int):
    """The skewed public weights ``theta_i ~ HETERORR_SKEW^i`` over ``d`` features (sum 1)."""
    import torch

    w = HETERORR_SKEW ** torch.arange(d, dtype=torch.float64)
    return w / w.sum()
