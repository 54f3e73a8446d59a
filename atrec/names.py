"""The shared vocabulary: dataset names, configuration keys and the expansion of option values.

Propensity and method names live in their registries (:mod:`atrec.propensity.registry`,
:mod:`atrec.methods.registry`).
"""

from __future__ import annotations

from atrec.errors import AtrecError

DATASETS = ("coat", "yahoo", "ml-100k")
DATASET_LABELS = {"yahoo": "Yahoo! R3", "coat": "Coat", "ml-100k": "MovieLens 100K"}
# The metrics of every saito2020 record (the default protocol's, atrec.protocols), their table
# labels and which way is better; every registered metric: atrec.evaluation.registry.
METRICS = ("mae", "mse", "ndcg3_paper", "ndcg3_standard")
METRIC_LABELS = {"mae": "MAE", "mse": "MSE", "ndcg3_paper": "nDCG@3",
                 "ndcg3_standard": "nDCG@3 (standard)"}
LOWER_IS_BETTER = {"mae": True, "mse": True, "ndcg3_paper": False, "ndcg3_standard": False}
PAPER_METRICS = ("mae", "mse", "ndcg3_paper")   # the columns of the paper's Table 1
# AT's traces per pseudo-labelling step (Figures 3 and 4), in the order the loop writes them.
TRACE_NAMES = ("pseudo_loss", "discrepancy", "n_pseudo", "val_loss", "test_mse", "test_mae")
TABLE_DATASETS = ("yahoo", "coat")  # the datasets of Table 1, in the paper's row order

# The default method's configurations keep the keys they had before methods were named.
DEFAULT_METHOD = "mf-ips"
# The default protocol (atrec.protocols): the paper's; its records keep their folders.
DEFAULT_PROTOCOL = "saito2020"
# The named parameter sets (atrec.params.sets says what each holds; a protocol's
# param_sets names those that exist under it).
PUBLISHED = "published"
TUNED = "tuned"       # yours: what 'atrec tune' writes
# Shipped sets beside the authors' values: the baselines tuned by atrec's own protocol, and the
# values other methods' authors published under theirs (each method's reference_params).
TUNED_ATREC = "tuned-atrec"
REFERENCE = "reference"
# The propensity slot of a method that weights nothing (it runs once, with weights 1).
NO_PROPENSITY = "none"


def config_key(propensity: str, with_at: bool, method: str = DEFAULT_METHOD,
               named: bool = False) -> str:
    """Key of one configuration in folders, studies and parameter files.

    ``item`` / ``item-at`` for MF-IPS (as before methods were named); ``<method>/item[-at]``
    for any other method (``method``: its key, options included, ``dr+form=coded``), so its
    runs sit in a folder of their own; with ``named``, MF-IPS's too (the binary protocols'
    folders).
    """
    key = f"{propensity}-at" if with_at else propensity
    return key if method == DEFAULT_METHOD and not named else f"{method}/{key}"


def did_you_mean(name: str, choices) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to a misspelt ``name`` (difflib's
    ratio of at least 0.6), else ``""``: the end of an unknown-name error."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def expand(values: tuple[str, ...] | list[str], allowed: tuple[str, ...], what: str,
           every: tuple[str, ...] | None = None) -> list[str]:
    """Expand option values (each may be comma-separated, or ``all``) into known names.

    ``all`` stands for ``every`` (default: all of ``allowed``). Raises :class:`AtrecError`
    naming the unknown value and listing the allowed ones, or saying
    that none was given when ``values`` hold only commas and blanks.
    """
    out: list[str] = []
    for value in values:
        for part in str(value).split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part == "all":
                names = list(allowed if every is None else every)
            elif part in allowed:
                names = [part]
            else:
                raise AtrecError(
                    f"unknown {what} '{part}': choose from {', '.join(allowed)} or 'all'"
                    f"{did_you_mean(part, allowed)}")
            out.extend(n for n in names if n not in out)
    if values and not out:  # e.g. --propensity "," would otherwise select nothing and exit 0
        raise AtrecError(f"no {what} given: name one or more of {', '.join(allowed)}, "
                         f"comma-separated, or 'all'")
    return out
