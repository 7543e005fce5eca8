"""Write zoo/recipes/*.yaml from the settings gap_accuracy.py and progap_accuracy.py benchmark
(one per setting).

Preprocessing reads no data protected at the recipe's privacy level (design invariant 1;
``NodeDataModule.private_reads``): edge- and node-level recipes keep isolated nodes (which
nodes are isolated depends on the edges); node-level ones (GAP/ProGAP node, DP-MLP) declare
the kept classes as public metadata, the class years a school's network had (the classes with
>= 1,000 students on both schools), instead of filtering classes by size. Non-private recipes
(``*-inf-*``, ``mlp-*``) keep the papers' protocol (size filter, isolated nodes removed).
"""

from pathlib import Path

import progap_accuracy as progap
import yaml
from gap_accuracy import COMMON, EDGE, MAX_DEGREE, NODE

# the recipes' data settings, frozen as they were generated (the benchmark declares classes on
# every dataset); node-level model settings come from the benchmark, with D = MAX_DEGREE
DATASETS = {
    "facebook100/Rutgers89": dict(target="year", min_class_size=1000),
    "facebook100/Wisconsin87": dict(target="year", min_class_size=1000),
    "musae-facebook": dict(),
}

RECIPES = Path(__file__).resolve().parents[1] / "zoo" / "recipes"
SHORT = {
    "facebook100/Rutgers89": "rutgers89",
    "facebook100/Wisconsin87": "wisconsin87",
    "musae-facebook": "facebook",
}


# public class declaration of the node-level recipes: the raw years the papers' filter
# (min_class_size=1000) keeps on each school, in label order; page-page's four page types
CLASSES = {
    "facebook100/Rutgers89": [2005, 2006, 2007, 2008, 2009],
    "facebook100/Wisconsin87": [2005, 2006, 2007, 2008, 2009],
    "musae-facebook": [0, 1, 2, 3],
}


def data_args(data: str, level: str) -> dict:
    """``NodeDataModule`` arguments of ``data`` for a recipe at privacy ``level``."""
    args = {"name": data, **DATASETS[data]}
    if level == "none":
        return {**args, "remove_isolated": True}  # the papers' protocol
    if level == "node" and data in CLASSES:
        args.pop("min_class_size", None)
        args["classes"] = CLASSES[data]
    if level == "node" and data.startswith("facebook100/"):
        args["dataset_kwargs"] = {"vocabulary": "public"}  # a feature layout nobody changes
    return {**args, "remove_isolated": False}


def node_degree(data: str) -> dict:
    """Node level: ``max_degree`` is a checked public bound on every degree (here the
    dataset's maximum degree under the recipe's preprocessing, see gap_accuracy.MAX_DEGREE)."""
    return {"max_degree": MAX_DEGREE[data]}


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


def main() -> None:
    RECIPES.mkdir(parents=True, exist_ok=True)
    for data, short in SHORT.items():
        out = {
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
        for name, cfg in out.items():
            text = (
                f"# {name}: generated by benchmarks/make_recipes.py from the settings of\n"
                f"# benchmarks/{source(name)}. Run: dpgnn fit --config zoo/recipes/{name}.yaml"
                "\n# (override e.g. --model.init_args.epsilon 2)\n"
            )
            (RECIPES / f"{name}.yaml").write_text(text + yaml.safe_dump(cfg, sort_keys=False))


if __name__ == "__main__":
    main()
