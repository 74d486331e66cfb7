"""Choosing the model directory (the product document's rules)."""
from __future__ import annotations

import logging
import os
import secrets
import string

logger = logging.getLogger("npurun")

_ALPHABET = string.ascii_letters + string.digits
_SUFFIX_LENGTH = 10


def resolve_model_dir(from_config, from_estimator) -> str:
    """The model directory given NPURunConfig's and NPUEstimator's `model_dir`.

    Rules: both set and different -> ValueError; one set -> that one; neither -> a new directory
    `model_dir_` + 10 distinct random letters/digits in the current directory, created here and
    named in a logged warning (so the user can find their checkpoints).
    """
    if from_config is not None and from_estimator is not None:
        if _same_path(from_config, from_estimator):
            return str(from_estimator)
        raise ValueError(f"`model_dir` are set both in constructor and `RunConfig`, but with different values: "
                         f"model_dir differs between NPURunConfig ({from_config!r}) and NPUEstimator "
                         f"({from_estimator!r}); set it in one place or make them equal")
    chosen = from_estimator if from_estimator is not None else from_config
    if chosen is not None:
        return str(chosen)
    while True:
        # "Distinct" letters/digits, as the product document says: sample without replacement.
        suffix = "".join(secrets.SystemRandom().sample(_ALPHABET, _SUFFIX_LENGTH))
        path = os.path.join(os.getcwd(), "model_dir_" + suffix)
        try:
            os.makedirs(path)
        except FileExistsError:
            continue
        logger.warning("Neither NPURunConfig nor NPUEstimator set model_dir; using %s", path)
        return path


def _same_path(a, b) -> bool:
    return os.path.abspath(os.path.expanduser(str(a))) == os.path.abspath(os.path.expanduser(str(b)))
