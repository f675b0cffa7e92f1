"""Target-model adapters: per-example losses of the audited model f on rows of data.

A target lives in a directory with a manifest ``target.json`` naming its format:

| format              | files / fields                                                    |
|---------------------|-------------------------------------------------------------------|
| `torch-safetensors` | ``module`` ("pkg.mod:Class"), ``kwargs``, ``weights``, ``encoder``  |
| `torchscript`       | ``file``, ``encoder``                                              |
| `xgboost-json`      | ``file`` (XGBoost JSON model), ``encoder``                         |
| `lightgbm-text`     | ``file`` (LightGBM's text model), ``classes``                      |
| `catboost-cbm`      | ``file`` (CatBoost ``.cbm`` or its ``.json``), ``classes``         |
| `skops`             | ``file`` (a scikit-learn estimator taking raw rows), ``trusted``   |
| `http`              | ``url`` (POST rows, answers probabilities), ``classes``            |
| `hf-causal-lm`      | ``directory``: a local causal LM (text; also without a manifest)   |
| `peft`              | ``base``, ``adapter`` (LoRA, safetensors), ``merge``: text         |

Untrusted files are never unpickled: safetensors only, TorchScript archives, XGBoost JSON,
LightGBM text (its structure checked before LightGBM's reader sees it), CatBoost files (read
first in a process of their own), skops with an explicit list of trusted types.

A manifest's ``module`` is imported only from trusted modules (:mod:`panoramia.targets.trust`):
by default :data:`DEFAULT_TRUSTED_MODULES`, the project's own networks
(``panoramia.modalities.tabular.mlp``, ``panoramia.modalities.image.nets``). The module name is
checked before anything is imported; the class must subclass ``torch.nn.Module``, and ``kwargs``
must be JSON data. Trust more explicitly: ``target.trusted_modules=[mypkg]`` on the command line
(``mypkg`` and ``mypkg.*``, not ``mypkgevil``), or, for the service's operator,
``PANORAMIA_TRUSTED_MODULES=mypkg,other`` (:func:`trusted_modules_from_env`). ``torch.nn``'s
own layers are not trusted by default. Any other name is refused with an InputError.
"""

from panoramia.targets.interface import TargetModel
from panoramia.targets.loading import load_target
from panoramia.targets.trust import (
    DEFAULT_TRUSTED_MODULES,
    TRUSTED_MODULES_ENV,
    trusted_modules_from_env,
)

__all__ = [
    "DEFAULT_TRUSTED_MODULES",
    "TRUSTED_MODULES_ENV",
    "TargetModel",
    "load_target",
    "trusted_modules_from_env",
]
