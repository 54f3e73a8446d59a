"""Upper bounds of every count a user can ask for, each in one place.

Without them a typo such as ``--seeds 10000000000`` ends in a ``MemoryError`` (or hours of
work) instead of a one-line message. Each bound is far above any sensible use and is named in
the message of the option it bounds.
"""

MAX_SEEDS = 1000            # seeds per configuration (--seeds, --expected-seeds)
MAX_SEED_VALUE = 2**31 - 1  # largest seed value: seeds must fit TensorFlow's int32 seeds
MAX_TRIALS = 10_000         # Optuna trials per study (--trials)
MAX_SPLITS = 20             # validation splits a configuration is tuned on (atrec tune --splits)
MAX_STEPS = 100_000         # training steps (--steps, --pre-steps); the protocol uses 500 / 150
MAX_MIN_ITEMS = 1000        # --min-items: ML-100K has 943 users, so no movie has more ratings
