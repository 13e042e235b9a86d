"""GPU-cluster tenants as Pulumi stacks: the tenant spec, the platform it is checked against, the
components that build a tenant from it, and the operator commands. Importing the package loads
nothing: the program's first reads start before its heavy modules load (`tenant_stack.live`)."""
