"""The paper's variance experiment (RQ1, Figure 2) on MovieLens 100K.

For every ``min_items`` (paper: 1, 2, 5, 10, 20, 50) the data is built by
:func:`atrec.data.ml100k.build_variance_data` (50% candidate test set, re-sampled to uniform item
exposure). Which draw a seed ``s`` trains and is tested on (``data_draw``):

* ``fixed`` (default): one draw, seed 12345 (the protocol's seed for one-off cuts), for every
  seed; ``s`` cuts the 90/10 train/validation split and initialises the model, as in Table 1.
  Standard errors then cover training randomness only, like Table 1's. All seeds share array
  shapes, so they are trained stacked with one compilation.
* ``per-seed``: seed ``s`` also draws its own data, so standard errors include the variation of
  the test draw. Test sizes then differ per seed and every run compiles anew: about 4x slower,
  and about 60 MB of compiled code per AT run stays in the process (a per-seed grid with tuning
  ran out of memory on a shared 24 GB machine), so it is an option, not the default.

The paper does not say which randomness its standard errors cover. MAE/MSE are measured on the
95% slice of the re-sampled test set (:func:`atrec.data.splits.make_split`).

Propensity: MF-IPS (and A1/A2 of AT) are weighted with the paper's Eq. ``ml_pscore``,
``P(i) = n_i / max_j n_j`` counted on the whole filtered data set - the very propensity that
shaped the test set ("each model was trained with the specified propensity model ... to evaluate
the pure effect of the variance", the paper's RQ1) - not re-estimated on the training split as
atrec's ``item`` estimator would (that one floors empty counts and would make min P about twice
as large at ``min_items = 1``). Its minimum is the check value of the paper (0.0017 at 1, 0.0859
at 50).

Training lengths: the paper's protocol's by default (MF-IPS 500 steps; AT 150 pre-training steps,
then 10 x 10 pseudo-labelling steps), as for Table 1 - the paper gives none for this experiment. On
ML-100K's 45,000 training ratings 150 batches of 1,024 are about 3.4 epochs (Coat: about 25), so
A1-A3 start pseudo-labelling far less trained than the MF-IPS they are compared with;
``protocol_settings(pre_steps=500)`` (``--pre-steps 500``) trains them as long as MF-IPS.

Records: one per (min_items, with/without AT, seed), under dataset ``ml-100k-min<N>`` and config
``data-item`` / ``data-item-at`` (so Table 1 never reads them), with an ``experiment`` block (min_items,
data seed, min relative propensity). A rerun reuses every existing record (``force`` recomputes).

Summary per ``min_items``: MAE and MSE of both methods (mean and standard error over seeds) and
the ratio with AT / without AT, computed per seed on the seeds that have both and then averaged
(mean and standard error over seeds: a paired comparison).
"""


from atrec.workflows.variance.data import build_point_data, check_min_items, run_spec
from atrec.workflows.variance.request import (
                                                DATA_DRAWS,
                                                DATA_SEED,
                                                DATASET,
                                                DEFAULT,
                                                FIGURE_NAME,
                                                PROPENSITY,
                                                VARIANCE_METRICS,
                                                VARIANCE_PARAMS,
                                                VarianceRequest,
                                                load_variance_params,
                                                parse_min_items,
                                                protocol_settings,
                                                variance_dataset,
                                                variance_params,
)
from atrec.workflows.variance.run import (
                                                VarianceReport,
                                                VarianceResult,
                                                check_reusable,
                                                describe_params,
                                                reproduce_variance,
                                                run_variance,
                                                variance_report,
)
from atrec.workflows.variance.summary import (
                                                MeanSE,
                                                VariancePoint,
                                                describe_settings,
                                                summarize_point,
                                                variance_rows,
)
from atrec.workflows.variance.tuning import tune_variance

__all__ = ["DATASET", "DATA_DRAWS", "DATA_SEED", "DEFAULT", "FIGURE_NAME", "PROPENSITY",
           "VARIANCE_METRICS", "VARIANCE_PARAMS", "MeanSE", "VariancePoint", "VarianceReport",
           "VarianceRequest", "VarianceResult", "build_point_data", "check_min_items",
           "check_reusable", "describe_params", "describe_settings", "load_variance_params",
           "parse_min_items", "protocol_settings", "reproduce_variance", "run_spec",
           "run_variance", "summarize_point", "tune_variance", "variance_dataset",
           "variance_params", "variance_report", "variance_rows"]
