"""The annotations a tenant's namespace carries for the program to read back on its next run
(`tenant_stack.live`). Kept apart from the namespace component, which writes them, so that the
program's first cluster reads start before any component is imported."""

# What offboarding has put in the retention store so far (`Retention`'s archive kinds), recorded
# on the namespace so that every later `up`, a rollback's included, keeps declaring them.
RETAINED_ANNOTATION = "gpu-tenants.example.io/retained"
# The offboarding stage the last `up` applied, which the next one may move on by one only.
STAGE_ANNOTATION = "gpu-tenants.example.io/lifecycle-stage"
# Whether the tenant is a rehearsal, as the spec said at each `up`: rehearsal opens every delete
# gate, so it may be turned off later but never on (the preflight reads this back).
REHEARSAL_ANNOTATION = "gpu-tenants.example.io/rehearsal"
# The label that says whose a namespace is: `up` takes over no existing namespace without it.
TENANT_NAMESPACE_LABEL = "tenant"
