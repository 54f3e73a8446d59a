"""Train the run grid on a Dask cluster: ``atrec train/run/reproduce --scheduler ADDRESS``.

The unit of work is one group of seeds of one configuration, exactly as a local run groups them
(:func:`atrec.experiments.groups.plan_config`, on this machine) and computed by the same function
(:func:`atrec.experiments.fitting.compute_group`, on a worker), so the numbers are those of a local
run. This process (the client) plans, sends the dataset to the workers once per dataset, and
writes every record as its group comes back (the same atomic writes as a local run): workers need
atrec and Dask, but neither the data folder nor the results folder. Seeds that already have a
record are not sent (resume); a worker that dies mid-task has its task rescheduled by Dask.

``local:N`` starts a :class:`distributed.LocalCluster` of N single-threaded worker processes on
this machine (listening on 127.0.0.1 only) and closes it at the end.

Dask is an extra (``pip install -e '.[dask]'``): it is imported only when a scheduler is given.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import re
import socket
import time
import uuid
from typing import Callable, Iterator

from atrec.errors import AtrecError
from atrec.experiments import interrupt
from atrec.experiments.driver import POLL_S, by_family
from atrec.experiments.locks import Holder
from atrec.experiments.plan import TrainRequest, plan_request
from atrec.experiments.progress import StageProgress
from atrec.experiments.fitting import compute_group
from atrec.experiments.groups import ConfigOutcome, ConfigPlan
from atrec.results.records import provenance
from atrec.runtime.tfquiet import LOG_LEVEL_ENV, QUIET_LOG_LEVEL

CONNECT_TIMEOUT_S = 10   # how long to try reaching a scheduler before saying what to do
WORKER_WAIT_S = 120      # how long to wait for a first worker to join a scheduler without any
NEEDS_DASK = "--scheduler needs Dask: pip install -e '.[dask]' in the atrec folder"


def _import_distributed():
    """The ``distributed`` package, or a one-line error naming the extra that provides it."""
    try:
        import distributed  # Dask: an optional extra, needed only with a scheduler
    except ImportError:
        raise AtrecError(NEEDS_DASK) from None
    return distributed


def local_cpus() -> int:
    """The CPUs this process may run on: the most workers ``local:N`` starts (below)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


def parse_local(scheduler: str) -> int | None:
    """Worker processes of ``local:N`` (``local`` alone: one per CPU); ``None`` for an address.

    N is at most the CPUs this process may use (:func:`local_cpus`): each worker is a
    single-threaded process that keeps its own TensorFlow runtime and compiled loops (hundreds
    of MB), so a worker beyond the cores only adds memory and time-slicing, never speed.
    """
    text = scheduler.strip()
    if text == "local":
        return local_cpus()
    m = re.fullmatch(r"local:(\d+)", text)
    if text.startswith("local") and not (m and 1 <= int(m.group(1)) <= local_cpus()):
        raise AtrecError(f"--scheduler {scheduler}: give local:N with 1 <= N <= {local_cpus()} "
                         f"(this machine's CPUs) worker processes, or a scheduler address such "
                         f"as tcp://HOST:8786")
    return int(m.group(1)) if m else None


def check_scheduler(scheduler: str) -> tuple[int | None, str]:
    """``(local workers, None)`` for ``local[:N]``, ``(None, address)`` for a well-formed Dask
    address; anything else (empty, no port, a scheme Dask has no transport for such as
    ``http://``) is one line saying what to give, before any work starts."""
    distributed = _import_distributed()
    n_local = parse_local(scheduler)
    if n_local is not None:
        return n_local, None
    address = scheduler.strip()
    try:
        if not address:
            raise ValueError("empty")
        scheme, location = distributed.comm.parse_address(address)
        distributed.comm.registry.get_backend(scheme)
        if scheme in _SOCKET_SCHEMES:
            distributed.comm.parse_host_port(location)
    except ValueError as exc:
        raise AtrecError(f"--scheduler {scheduler!r} is not a Dask scheduler address ({exc}): "
                         f"give tcp://HOST:PORT (a 'dask scheduler' prints it) or local:N, or "
                         f"leave the option out to train in this process") from None
    return None, address


# the transports whose address is host:port (a scheduler there is probed with a plain socket)
_SOCKET_SCHEMES = ("tcp", "tls", "ws", "wss")


def _unreachable(scheduler: str, why) -> AtrecError:
    return AtrecError(
        f"cannot reach a Dask scheduler at {scheduler} ({why}): start one with "
        f"'dask scheduler' and workers with 'dask worker tcp://HOST:8786', then pass "
        f"--scheduler tcp://HOST:8786 (or use --scheduler local:N)")


def _probe(distributed, address: str, scheduler: str) -> None:
    """A one-line error when no Dask scheduler answers at ``address`` within
    :data:`CONNECT_TIMEOUT_S`, found before a :class:`distributed.Client` exists: a Client whose
    start failed hangs 20 s in its teardown and prints a traceback from the garbage collector.

    A plain socket first (a refused connection is said at once), then Dask's own handshake
    under a deadline (something else listening there would otherwise hold the handshake open).
    The handshake runs in a thread of its own, so that a caller with a running event loop (a
    notebook) can call this too.
    """
    scheme, location = distributed.comm.parse_address(address)
    if scheme in _SOCKET_SCHEMES:
        host, port = distributed.comm.parse_host_port(location)
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            raise _unreachable(scheduler, exc.strerror or exc) from None

    async def handshake() -> None:
        comm = await asyncio.wait_for(distributed.comm.connect(address), CONNECT_TIMEOUT_S)
        await comm.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, handshake()).result()
        except (TimeoutError, OSError, distributed.comm.CommClosedError) as exc:
            why = f"no Dask handshake within {CONNECT_TIMEOUT_S} s" if isinstance(
                exc, asyncio.TimeoutError) else exc
            raise _unreachable(scheduler, why) from None


@contextlib.contextmanager
def connect(scheduler: str) -> Iterator[object]:
    """A :class:`distributed.Client` of ``scheduler`` (an address or ``local:N``), closed (and a
    local cluster shut down) on leaving, also after an error or Ctrl-C."""
    distributed = _import_distributed()
    n_local, address = check_scheduler(scheduler)
    with contextlib.ExitStack() as stack:
        if n_local is not None:
            # TensorFlow's notices (its start-up lines, the compilation cache's "machine type"
            # and parse lines, logged as errors) would interleave with the progress lines: the
            # workers log at this process's level (atrec's 3, fatal only, unless the user set
            # one); Dask's own warnings about slow worker shutdowns at the end are noise here
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=n_local, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, silence_logs=logging.ERROR,
                env={LOG_LEVEL_ENV: os.environ.get(LOG_LEVEL_ENV, QUIET_LOG_LEVEL)}))
            address = cluster.scheduler_address
        else:
            _probe(distributed, address, scheduler)
        try:
            client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, ValueError, TypeError) as exc:
            raise _unreachable(scheduler, exc) from None
        stack.enter_context(client)
        yield client


def train_on_dask(request: TrainRequest, scheduler: str, root=None,
                  done: Callable[[ConfigPlan], None] | None = None,
                  stage: StageProgress | None = None) -> list[ConfigOutcome]:
    """:func:`atrec.experiments.training.train` on a Dask cluster; outcomes in training order.

    Every group of every configuration is submitted at once, so all workers stay busy, family
    by family (:func:`atrec.experiments.driver.by_family`); groups
    that another process on the same results folder has claimed are left to it and submitted
    only if it goes without saving them (:meth:`ConfigPlan.take`). ``done(plan)`` is called when
    a configuration's last group is saved (at once for a configuration with nothing left to
    train); ``stage`` counts the seeds. Ctrl-C stops once the next group is saved.
    """
    check_scheduler(scheduler)  # before touching data: a missing extra or a bad address first
    stage = stage or StageProgress()
    work = list(plan_request(request, root))
    plans = [plan for _, plans in work for plan in plans]
    stage.expect(len(plans), sum(len(plan.spec.seeds) for plan in plans))
    for plan in plans:
        stage.reused(len(plan.outcome.reused))
        if not plan.groups and done:
            done(plan)
    if any(plan.groups for plan in plans):
        try:
            with connect(scheduler) as client, interrupt.graceful_stop():
                _run_groups(client, scheduler, work, done, stage)
        finally:
            for plan in plans:
                plan.release()
    return [plan.finish() for plan in plans]


def _run_groups(client, scheduler: str, work, done, stage: StageProgress) -> None:
    """Submit every group left in ``work`` [(data, plans)] that this process can claim, save the
    records as they arrive, and come back to the groups claimed by other processes."""
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except (TimeoutError, OSError):
        raise AtrecError(f"no Dask worker joined the scheduler at {scheduler} within "
                         f"{WORKER_WAIT_S} s: start workers with 'dask worker ADDRESS'") from None
    command = provenance()["command"]
    remote: dict = {}
    tasks: dict = {}
    left = {id(plan): len(plan.groups) for _, plans in work for plan in plans}
    # family by family, as atrec train runs them: Dask hands tasks out in the order they were
    # submitted, so a worker meets one family's compiled loops after another, not all at once
    pending = [(data, plan, seeds) for data, plan, seeds, _ in by_family(work)]

    def settle(plan) -> None:
        left[id(plan)] -= 1
        if left[id(plan)] == 0 and done:
            done(plan)

    while pending or tasks:
        busy = []
        for data, plan, seeds in pending:
            before = len(plan.outcome.reused)
            got = plan.take(seeds)
            if isinstance(got, Holder):
                busy.append((data, plan, seeds))
                continue
            stage.reused(len(plan.outcome.reused) - before)
            if not got:
                settle(plan)
                continue
            if id(data) not in remote:   # once per dataset, not once per task
                remote[id(data)] = client.scatter(data, broadcast=True)
            key = f"atrec-{plan.spec.dataset}-{plan.spec.key}-{got[0]}-{uuid.uuid4().hex[:8]}"
            future = client.submit(compute_group, remote[id(data)], plan.spec, got, key=key,
                                   pure=False)
            tasks[future] = (plan, got)
        pending = busy
        finished = [f for f in tasks if f.done()]
        if not finished:
            time.sleep(POLL_S)
        for future in finished:
            plan, seeds = tasks.pop(future)
            records, elapsed = _result(future, scheduler)
            for record in records:
                # the command that asked for the run, not the worker's ``dask worker ...``
                record["provenance"]["command"] = command
            plan.save(seeds, records, elapsed)
            stage.saved(plan.name, len(seeds))
            settle(plan)
            interrupt.check(stage.interrupted)


def _result(future, scheduler: str) -> tuple[list[dict], float]:
    """A task's records. A scheduler or worker that cannot load this atrec (Dask unpickles the
    task on both) is said in one line with what to do; any other error is raised as it is."""
    try:
        return future.result()
    except (ImportError, AttributeError, RuntimeError) as exc:
        cause = exc.__cause__ if isinstance(exc, RuntimeError) else exc
        if not isinstance(cause, (ImportError, AttributeError)) or "atrec" not in str(cause):
            raise
        raise AtrecError(f"the Dask scheduler or a worker at {scheduler} cannot load this atrec "
                         f"({cause}): install this atrec with pip install -e '.[dask]' on the "
                         f"scheduler's machine and every worker's") from None
