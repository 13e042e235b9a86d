"""Work over every tenant stack at once: drift detection and pull-request review. (The rules
across tenants' specs, which need no stack, are the spec's own: tenant_stack.spec.fleet.)"""
