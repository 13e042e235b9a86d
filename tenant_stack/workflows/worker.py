"""A fleet worker: serves the fleet's workflows and activities from one task queue until it is
told to stop. Run as many as wanted, on as many machines, against one Temporal service."""

from __future__ import annotations

import asyncio
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from tenant_stack.workflows.activities import (
    HOST,
    drift_stack,
    reap_session,
    tenant_stacks,
    update_stack,
)
from tenant_stack.workflows.apply_stage import ApplyStage
from tenant_stack.workflows.drift_workflow import FleetDrift
from tenant_stack.workflows.rollout_workflow import Rollout
from tenant_stack.workflows.stack_operations import StackDriftCheck, StackUpdate, host_queue

# The SDK passes an activity's beats on to the service at most once per 0.8 x its heartbeat
# timeout (16 s of 20), leaving a beat only the rest (4 s) to be late in; at most once a second,
# every beat goes on at once, whatever timeout the run set (a small request every few seconds).
HEARTBEAT_THROTTLE = timedelta(seconds=1)
# The dev server's default; production names its own (TEMPORAL_ADDRESS, as the temporal CLI).
DEFAULT_ADDRESS = "127.0.0.1:7233"
NAMESPACE = "default"


async def connect() -> Client:
    """The Temporal service TEMPORAL_ADDRESS names (and TEMPORAL_NAMESPACE, default `default`)."""
    address = os.environ.get("TEMPORAL_ADDRESS") or DEFAULT_ADDRESS
    return await Client.connect(address, namespace=os.environ.get("TEMPORAL_NAMESPACE", NAMESPACE))


async def serve(client: Client, task_queue: str, concurrency: int) -> None:
    """Runs a worker on `task_queue`, `concurrency` stack operations at a time, and on its
    host's own queue (what only this host can do: make sure an engine it started is gone),
    until SIGTERM or SIGINT; then it finishes what it started and returns."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # The host's own queue has threads of its own: a reap never waits behind an `up`.
    with (
        ThreadPoolExecutor(max_workers=concurrency) as executor,
        ThreadPoolExecutor(max_workers=1) as reaper,
    ):
        worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[FleetDrift, StackDriftCheck, Rollout, StackUpdate, ApplyStage],
            activities=[drift_stack, tenant_stacks, update_stack],
            activity_executor=executor,
            max_concurrent_activities=concurrency,
            max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        )
        this_host = Worker(
            client,
            task_queue=host_queue(task_queue, HOST),
            activities=[reap_session],
            activity_executor=reaper,
            max_concurrent_activities=1,
        )
        async with worker, this_host:
            print(f"worker on {task_queue}: {concurrency} at a time", flush=True)
            await stop.wait()
