"""Write zoo/recipes/*.yaml from the settings gap_accuracy.py and progap_accuracy.py benchmark
(one per setting).

Preprocessing reads no data protected at the recipe's privacy level (design invariant 1;
``NodeDataModule.private_reads``): edge- and node-level recipes keep isolated nodes (which
nodes are isolated depends on the edges); node-level ones (GAP/ProGAP node, DP-MLP) declare
the kept classes as public metadata, instead of filtering classes by size: Facebook100's class
years 2005-2009 (the undergraduate classes of a September 2005 snapshot and the class just
graduated; see gap_accuracy.YEARS), musae-facebook's four documented page types. Node-level
``max_degree`` is declared from public knowledge (gap_accuracy.DEGREE_BOUND_SOURCE), and the
recipe's header says where it comes from. Non-private recipes
(``*-inf-*``, ``mlp-*``) keep the papers' protocol (size filter, isolated nodes removed).
"""

from pathlib import Path

import progap_accuracy as progap
import yaml
from gap_accuracy import COMMON, DATASETS, DEGREE_BOUND_SOURCE, EDGE, MAX_DEGREE, NODE

RECIPES = Path(__file__).resolve().parents[1] / "zoo" / "recipes"
SHORT = {
    "facebook100/Rutgers89": "rutgers89",
    "facebook100/Wisconsin87": "wisconsin87",
    "musae-facebook": "facebook",
}


def data_args(data: str, level: str) -> dict:
    """``NodeDataModule`` arguments of ``data`` for a recipe at privacy ``level``: at edge and
    node level exactly the benchmark's (``gap_accuracy.DATASETS``: declared classes, isolated
    nodes kept, Facebook100's public code book), so a recipe reproduces its benchmark row;
    without privacy the papers' protocol (classes with >= 1,000 nodes, isolated nodes removed).
    """
    if level == "none":
        school = data.startswith("facebook100/")
        paper = {"target": "year", "min_class_size": 1000} if school else {}
        return {"name": data, **paper, "remove_isolated": True}
    return {"name": data, **DATASETS[data]}


def node_degree(data: str) -> dict:
    """Node level: ``max_degree`` is a checked bound on every degree, declared from public
    knowledge, never the graph's observed maximum (gap_accuracy.MAX_DEGREE and its source)."""
    return {"max_degree": MAX_DEGREE[data]}


def degree_comment(name: str, data: str) -> str:
    """The header lines of a node-level recipe saying where its ``max_degree`` comes from."""
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


def data_of(name: str) -> str:
    """The dataset of a recipe name (its last part, e.g. ``rutgers89``)."""
    return {short: data for data, short in SHORT.items()}[name.rsplit("-", 1)[1]]


def recipe(model_cls: str, init: dict, data: str, epochs: int, level: str) -> dict:
    return {
        "seed_everything": 0,
        "trainer": {"max_epochs": epochs},
        "model": {"class_path": model_cls, "init_args": init},
        "data": {
            "class_path": "lightning_dpgnn.data.NodeDataModule",
            "init_args": data_args(data, level),
        },
    }


def source(name: str) -> str:
    return "progap_accuracy.py" if name.startswith("progap") else "gap_accuracy.py"


def recipes() -> dict[str, dict]:
    """Every recipe this script writes, by name (tests check the files equal them)."""
    out: dict[str, dict] = {}
    for data, short in SHORT.items():
        out |= {
            f"gap-edge-{short}": recipe(
                "lightning_dpgnn.GAP",
                {"privacy": "edge", "epsilon": 4.0, **COMMON, **EDGE},
                data,
                200,
                "edge",
            ),
            f"gap-node-{short}": recipe(
                "lightning_dpgnn.GAP",
                {"privacy": "node", "epsilon": 8.0, **COMMON, **NODE, **node_degree(data)},
                data,
                20,
                "node",
            ),
            f"gap-inf-{short}": recipe(
                "lightning_dpgnn.GAP", {"privacy": "none", **COMMON, **EDGE}, data, 200, "none"
            ),
            f"progap-edge-{short}": recipe(
                "lightning_dpgnn.ProGAP",
                {"privacy": "edge", "epsilon": 1.0, **progap.COMMON, **progap.EDGE},
                data,
                300,
                "edge",
            ),
            f"progap-node-{short}": recipe(
                "lightning_dpgnn.ProGAP",
                {
                    "privacy": "node", "epsilon": 8.0, **progap.COMMON, **progap.NODE,
                    **node_degree(data),
                },
                data,
                30,
                "node",
            ),
            f"progap-inf-{short}": recipe(
                "lightning_dpgnn.ProGAP",
                {"privacy": "none", **progap.COMMON, **progap.EDGE},
                data,
                300,
                "none",
            ),
            f"mlp-{short}": recipe(
                "lightning_dpgnn.MLP", {"hidden": 16, "layers": 3, "lr": 0.01}, data, 100, "none"
            ),
            f"dpmlp-{short}": recipe(
                "lightning_dpgnn.DPMLP",
                {
                    "epsilon": 8.0,
                    "hidden": 16,
                    "layers": 3,
                    "lr": 0.01,
                    "epochs": 10,
                    "batch_size": 256,
                },
                data,
                10,
                "node",
            ),
        }
    return out


def main() -> None:
    RECIPES.mkdir(parents=True, exist_ok=True)
    for name, cfg in recipes().items():
        text = (
            f"# {name}: generated by benchmarks/make_recipes.py from the settings of\n"
            f"# benchmarks/{source(name)}. Run: dpgnn fit --config zoo/recipes/{name}.yaml"
            "\n# (override e.g. --model.init_args.epsilon 2)\n"
        ) + degree_comment(name, data_of(name))
        (RECIPES / f"{name}.yaml").write_text(text + yaml.safe_dump(cfg, sort_keys=False))


if __name__ == "__main__":
    main()
