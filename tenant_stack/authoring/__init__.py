"""Authoring a tenant's spec: `gpu-tenants new` drafts `tenants/<slug>.yaml` from a contract's
terms and a users file. The modules, each using those before it: `users_file` (the users, each
value at its line), `taken` (the nodes and numbers no new tenant may have, and the next free),
`spec_draft` (the document, with the reason for every value chosen) and `new_tenant` (the
checks, the live reads, the located refusals and the atomic write). They return data; the
command prints it."""
