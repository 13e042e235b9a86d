"""The tenant's own workloads in its namespace, as offboarding stops them (runbook step 2) and
checks them before destroy (step 4d), and the login release's pods as step 5a waits for them,
through kubectl."""
