"""What a provider says while it waits on a backend: a line on standard error, every EVERY
seconds of the wait.

The Python dynamic-provider host has no connection to the engine through which a message could
name its resource (pulumi/pulumi#6065), but the engine passes such a provider's standard error
through as it comes (pulumi/pulumi#18253, engine 3.146 and later): `pulumi up` shows the latest
line on the stack's row while the wait goes on, and lists them all among the stack's diagnostics
at the end. So each line names the object it waits for.
"""

from __future__ import annotations

import sys

EVERY = 10.0


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
