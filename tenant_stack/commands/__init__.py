# PYTHON_ARGCOMPLETE_OK
"""The operator's commands: `gpu-tenants <command> --help` (or `python -m tenant_stack`).

    new <slug> --users F ...   onboarding: a new tenant's spec from the contract's terms and a
                               users file, its nodes and numbers chosen from what is free
    doctor                     before a first `up`: every backend reachable, its version
                               supported, and the credentials allowed what the stacks do
    smoke <slug>               onboarding step 7: the smoke tests run as a tenant's user on its
                               nodes and judged (GPUs, two-node all-reduce, scratch)
    handover <slug>            onboarding step 8: the connection sheet for the tenant (with the
                               last smoke-test run)
    verify-offboarded <slug>   offboarding step 8: is anything of the tenant left live, and is
                               everything that must be retained in the retention store?
    stage <slug> <stage>       offboarding: the spec's lifecycle moved to its next stage (or back),
                               comments kept, with what that stage's `up` will do for the PR
    retention calendar|run     offboarding step 9: what every tenant stack retains until when,
                               and the purge of what has expired (for a scheduler)
    retention hold|release     a legal hold on a tenant: every retention timer paused
    retention erase <slug> <user>  a user's right to erasure, from what offboarding kept
    usage [SLUG...] --from D --to D  GPU-hours by team, user and day against the contract and
                               the budget: Markdown, CSV, JSON, charts (--archived: the archive's)
    expiring [--within 30d]    the tenants whose contract term ends soon (or has ended), each
                               with its next step; --remind posts each reminder once (webhook)
    check                      the rules across tenants (unique users, uids, gids, nodes; pools)
    drift [STACK...]           every tenant stack's drift, per layer, resource and property
    fleet drift [STACK...]     the same drift check as a Temporal workflow, run by the workers
    fleet rollout --wave S,S.. `pulumi up` of stacks in waves, stopping at the first that fails
    fleet stage <slug> --stage S  a merged offboarding stage applied: `up`, rerun while it drains
    fleet schedule             the drift check of every tenant stack as a Temporal Schedule
    worker                     a fleet worker: serves the fleet's workflows from a task queue
    status [SLUG...]           each tenant's conditions per layer, Ready, stage and next step
    diagnose <slug>            every known failure of a tenant, with evidence, cause and fix
    import <slug> --term S:E   a tenant onboarded by hand, read from every backend and written
                               as tenants/<slug>.yaml for review (read-only on the backends)
    review --base REF          the pull-request check: rules across tenants, a preview of each
                               tenant the change touches, one Markdown comment and a JSON report
    completion bash|zsh        the shell code that completes commands, options and slugs

Exit status: 0 done (every check passed); 1 a check failed or a tenant's purge failed (the output
says which); 2 the command could not run (bad arguments, a path that is not there or cannot be
written, the tenant's spec does not load, or an unexpected error, printed with its traceback);
130 interrupted (Ctrl-C); 141 the output's reader went away (`| head`), with nothing printed.
`drift` and `fleet drift`: 0 clean, 1 drift found, 2 a stack could not be checked (the others
still were). `fleet rollout`: 0 every wave applied, 1 a wave failed (the rollout stopped there),
2 it could not run. `fleet stage`: 0 the stage is applied, 1 it is not (yet), 2 it could not
run. `fleet drift|rollout|stage --no-wait` and `fleet schedule`: 0 once the workflow or the
Schedule is made (its id is printed).
`worker`: 0 when stopped by SIGTERM or SIGINT, 2 when Temporal cannot be reached.
`review`: 0 the review passed, 1 it failed (a spec invalid or colliding, a preview failed).
`new`: 0 the spec is written, 1 refused (nothing written; the output names the option or line).
`doctor`: 0 every check passed, 1 a check failed (each with its fix), 2 could not run.
`smoke`: 0 every check passed, 1 a check failed (each with the runbook's fix), 2 could not run
(a job refused, or the jobs not finished within --timeout: they are cancelled).
`stage`: 0 the spec is written (or already at the stage), 1 refused (a skip, a move back from
destroy, a destroy without sign-off: nothing written), 2 could not run.
`import`: 0 the spec is written, 1 the tenant is refused (nothing written; the output says why).
`status`: 0 every tenant Ready, 1 one is not.
`diagnose`: 0 no problem found, 1 problems found.
`usage`: 0 the report is made, 2 it could not be.
`expiring`: 0 no term ends within the window, 1 one does (or has ended), 2 could not run.

One module per command registers its parser (`register`) and runs it (`run`), with its terminal
text beside it; options several commands share are in `options`. A command's `run` imports the
domain code it needs: the parser is built on every key press of the shell's completion, and
loading pydantic, Pulumi and the backends' clients would make each take a second.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import NoReturn

import argcomplete

from providers.errors import BackendError
from tenant_stack.commands import (
    check,
    completion,
    diagnose,
    doctor,
    drift,
    expiring,
    fleet,
    handover,
    import_,
    new,
    retention,
    review,
    smoke,
    stage,
    status,
    usage,
    verify_offboarded,
    worker,
)
from tenant_stack.commands.parser import Parser, add_examples
from tenant_stack.commands.version import Versions
from tenant_stack.errors import TenantError

__all__ = ["main"]

_COMMANDS = (
    new,
    stage,
    doctor,
    smoke,
    handover,
    verify_offboarded,
    check,
    drift,
    fleet,
    worker,
    status,
    diagnose,
    review,
    retention,
    expiring,
    usage,
    import_,
    completion,
)


def parser() -> argparse.ArgumentParser:
    top = Parser(
        prog="gpu-tenants",
        description="Operator commands for tenant stacks.",
        epilog="Exit status: 0 all checks passed, 1 a check failed, 2 the command could not "
        "run, 130 interrupted, 141 the output's reader went away.",
    )
    add_examples(
        top,
        ("gpu-tenants status", "every tenant: Ready, its stage and its next step"),
        ("gpu-tenants diagnose tenant-foo --help", "one command's options and examples"),
        ('eval "$(gpu-tenants completion bash)"', "complete commands, options and slugs in bash"),
    )
    top.add_argument("--version", action=Versions)
    top.set_defaults(exits_without_teardown=False)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in _COMMANDS:
        command.register(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    """The command line's entry point: `argv` without the program's name (default: sys.argv's)."""
    arguments = parser()
    # Under a shell's completion (_ARGCOMPLETE set) this prints the candidates and exits.
    argcomplete.autocomplete(arguments)
    exits_without_teardown = False
    args: argparse.Namespace | None = None
    if not (sys.argv[1:] if argv is None else argv):
        # As kubectl and gh do: no command is a request for the commands, not an error.
        arguments.print_help()
        return 0
    try:
        try:
            args = arguments.parse_args(argv)
        finally:
            # --help and a usage error print, then exit: a reader that went away is found here.
            sys.stdout.flush()
        exits_without_teardown = args.exits_without_teardown
        status: int = args.run(args)
        sys.stdout.flush()
    except (TenantError, BackendError) as error:
        print(error, file=sys.stderr)
        status = 2
    except BrokenPipeError:
        # The output's reader went away (`| head`): nothing more to say, nowhere to say it.
        _exit_without_teardown(PIPE_CLOSED, quiet=True)
    except OSError as error:
        # A path the command was given that it cannot write or read.
        where = f": {error.filename}" if error.filename else ""
        print(f"gpu-tenants: {error.strerror or error}{where}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        # Threads of a check or a pool may still wait on a backend: no teardown waits for them.
        print("gpu-tenants: interrupted", file=sys.stderr)
        _exit_without_teardown(INTERRUPTED)
    except Exception:
        # A bug, not a finding: Python's own exit status (1) would read as "problems found".
        traceback.print_exc()
        command = " ".join(filter(None, ("gpu-tenants", getattr(args, "command", None))))
        print(f"{command}: failed unexpectedly (the traceback above says where); nothing "
              "it reported is complete: report it with the traceback", file=sys.stderr)  # fmt: skip
        status = 2
    if exits_without_teardown:
        _exit_without_teardown(status)
    return status


# As a shell reports a command that a signal ended: 128 + SIGINT, 128 + SIGPIPE.
INTERRUPTED = 130
PIPE_CLOSED = 141


def _exit_without_teardown(status: int, *, quiet: bool = False) -> NoReturn:
    """Ends a process whose threads may still be in native code: the Temporal SDK's client's
    (temporalio/sdk-python#300) or gRPC's can outlive the interpreter's teardown and abort it
    (SIGABRT, "PyGILState_Release ... finalizing") after the work is done, so everything is
    flushed and the teardown skipped. `quiet` drops what stdout still holds (its reader is
    gone)."""
    if not quiet:
        sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
