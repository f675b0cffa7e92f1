"""Target-model adapters: per-example losses of the audited model f on rows of data.

A target lives in a directory with a manifest ``target.json`` naming its format:

| format              | files / fields                                                    |
|---------------------|-------------------------------------------------------------------|
| `torch-safetensors` | ``module`` ("pkg.mod:Class"), ``kwargs``, ``weights``, ``encoder``  |
| `torchscript`       | ``file``, ``encoder``                                              |
| `xgboost-json`      | ``file`` (XGBoost JSON model), ``encoder``                         |
| `skops`             | ``file`` (a scikit-learn estimator taking raw rows), ``trusted``   |
| `http`              | ``url`` (POST rows, answers probabilities), ``classes``            |
| `hf-causal-lm`      | ``directory``: a local causal LM (text; also without a manifest)   |

Untrusted files are never unpickled: safetensors only, TorchScript archives, XGBoost JSON,
skops with an explicit list of trusted types.
"""

from panoramia.targets.base import TargetModel, load_target

__all__ = ["TargetModel", "load_target"]
