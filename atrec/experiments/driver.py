"""Train planned groups of seeds in this process, sharing the results folder with others.

The loop behind ``atrec train``, ``atrec run`` and the variance experiment: every group of every
plan (:class:`atrec.experiments.groups.ConfigPlan`) is claimed before it is trained, so a second
process on the same results folder skips the groups the first one is training and turns to
others; with nothing else left it waits for them and loads their records, or trains them itself
when their owner went without saving them (:mod:`atrec.experiments.locks`). Ctrl-C stops the
loop once the group in progress is saved (:mod:`atrec.experiments.interrupt`), and every claim
still held is given back on the way out, however the loop ends.

Groups are trained family by family (:func:`atrec.experiments.fitting.loop_family`: the
configurations that share compiled loops, such as Yahoo's five AT configurations at dim 40),
and once a family has nothing left its loops are released
(:func:`atrec.runtime.compiled.retire`): a run then compiles each loop once and holds one
family's at a time (Table 1: 2.0 GB before, measurements in ``docs/performance.md``). The
order changes no number: every fit depends only on its own inputs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from atrec.data.ratings import RatingData
from atrec.experiments import interrupt
from atrec.experiments.locks import Holder
from atrec.experiments.progress import StageProgress, seed_list
from atrec.experiments.fitting import compute_group, loop_family
from atrec.experiments.groups import ConfigOutcome, ConfigPlan, plan_config
from atrec.experiments.spec import RunSpec
from atrec.runtime import compiled

POLL_S = 0.5   # how often a process waiting for another one's claimed seeds looks again


def train_plans(work, stage: StageProgress | None = None,
                on_done: Callable[[ConfigPlan], None] | None = None) -> None:
    """Train and save every group left in ``work`` (``[(data, plans)]``), in order.

    ``stage`` counts reused and saved seeds (and says what this process waits for);
    ``on_done(plan)`` is called when a configuration has all its records, at once for one
    with nothing left to train. Raises :class:`~atrec.experiments.interrupt.RunInterrupted`
    after saving the group in progress when Ctrl-C asked to stop.
    """
    stage = stage or StageProgress()
    plans = [plan for _, ps in work for plan in ps]
    left = {id(plan): len(plan.groups) for plan in plans}
    for plan in plans:
        stage.reused(len(plan.outcome.reused))
        if not plan.groups and on_done:
            on_done(plan)
    pending = deque(by_family(work))
    told: set = set()
    family = None      # of the group trained last
    try:
        with interrupt.graceful_stop():
            while pending:
                holders, size = [], len(pending)
                for _ in range(size):
                    data, plan, seeds, fam = pending.popleft()
                    before = len(plan.outcome.reused)
                    got = plan.take(seeds)
                    if isinstance(got, Holder):
                        pending.append((data, plan, seeds, fam))
                        holders.append((plan, seeds, got))
                        continue
                    stage.reused(len(plan.outcome.reused) - before)
                    if got:
                        if family is not None and fam != family and all(
                                other[3] != family for other in pending):
                            compiled.retire()
                        family = fam
                        records, elapsed = interrupt.in_worker(compute_group, data, plan.spec, got)
                        plan.save(got, records, elapsed)
                        stage.saved(plan.name, len(got))
                    left[id(plan)] -= 1
                    if left[id(plan)] == 0 and on_done:
                        on_done(plan)
                    interrupt.check(stage.interrupted)
                if len(holders) == size:   # nothing else to do: wait
                    for plan, seeds, holder in holders:
                        if (id(plan), seeds) not in told:
                            told.add((id(plan), seeds))
                            stage.say(f"waiting for {plan.name} seed(s) {seed_list(seeds)}: "
                                      f"another process ({holder}) is training them")
                    time.sleep(POLL_S)
                    interrupt.check(stage.interrupted)
    finally:
        for plan in plans:
            plan.release()


def by_family(work) -> list[tuple]:
    """Every group of ``work`` as ``(data, plan, seeds, family)`` in
    :func:`~atrec.runtime.compiled.in_families` order of its
    :func:`~atrec.experiments.fitting.loop_family`."""
    items = [(data, plan, seeds, loop_family(data, plan.spec))
             for data, ps in work for plan in ps for seeds in plan.groups]
    return compiled.in_families(items, lambda item: item[3])


def run_config(data: RatingData, spec: RunSpec, root=None, force: bool = False,
               stage=None) -> ConfigOutcome:
    """Train the seeds of ``spec`` that have no record yet (all with ``force``) and save them.

    Groups claimed by another process are left to it and their records loaded when it is done
    (:func:`train_plans`); ``stage``
    (:class:`~atrec.experiments.progress.StageProgress`) counts the seeds saved.
    """
    plan = plan_config(data, spec, root, force)
    train_plans([(data, [plan])], stage)
    return plan.finish()
