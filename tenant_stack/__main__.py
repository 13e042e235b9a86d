# PYTHON_ARGCOMPLETE_OK
"""`python -m tenant_stack`: the `gpu-tenants` command (tenant_stack/commands)."""

import sys

from tenant_stack.commands import main

if __name__ == "__main__":
    sys.exit(main())
