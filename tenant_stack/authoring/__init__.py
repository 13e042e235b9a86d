"""Authoring a tenant's spec: `gpu-tenants new` drafts `tenants/<slug>.yaml` from a contract's
terms and a users file (`users_file`), choosing nodes, numbers, budgets and the runbook's values,
each with a comment saying why (`new_tenant`). Returns data; the command prints it."""
