"""`gpu-tenants completion bash|zsh`: the shell code that completes the command's words."""

from __future__ import annotations

import argparse

from tenant_stack.commands.parser import add_examples

SHELLS = ("bash", "zsh")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "completion",
        help="print the shell code that completes gpu-tenants' commands, options and slugs",
        description="Prints the code for bash or zsh that completes every command, option and "
        "tenant slug (the specs' names) of gpu-tenants, as the command's own parser knows "
        "them (argcomplete). Load it in the shell's start-up file to keep it.",
        epilog="Exit status: 0 the code is printed, 2 an unknown shell.",
    )
    command.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")
    add_examples(
        command,
        ('eval "$(gpu-tenants completion bash)"', "complete in this bash session"),
        ("gpu-tenants completion zsh >> ~/.zshrc", "and in every zsh from now on"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    print(shellcode(["gpu-tenants"], shell=args.shell))
    return 0
