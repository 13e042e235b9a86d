"""`gpu-tenants worker`: a fleet worker, serving the fleet's workflows from a task queue."""

from __future__ import annotations

import argparse
import os

from tenant_stack.commands.fleet import add_task_queue
from tenant_stack.commands.options import positive
from tenant_stack.commands.parser import add_examples


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "worker",
        help="a fleet worker: runs the fleet's workflows and stack operations from a task queue",
        description="Serves the fleet's workflows and activities on the Temporal service "
        "TEMPORAL_ADDRESS names until SIGTERM or SIGINT. Its stack commands use this "
        "environment's Pulumi backend and credentials.",
        epilog="Exit status: 0 stopped by a signal, 2 Temporal could not be reached.",
    )
    add_task_queue(command)
    command.add_argument(
        "--concurrency",
        type=positive,
        default=os.cpu_count() or 1,
        help="stack operations at once",
    )
    # The Temporal SDK's threads can outlive the interpreter's teardown (main says why).
    add_examples(
        command,
        ("TEMPORAL_ADDRESS=temporal.example:7233 gpu-tenants worker", "a stack operation per core"),
        ("gpu-tenants worker --concurrency 2", "two stack operations at once"),
    )
    command.set_defaults(run=run, exits_without_teardown=True)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.workflows.commands import run_worker

    return run_worker(args.task_queue, args.concurrency)
