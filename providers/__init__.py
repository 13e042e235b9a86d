"""Dynamic providers for what the Kubernetes provider does not reach, and the backend clients
they call. A client has no Pulumi in it; a provider translates between Pulumi and a client.

A provider holds no client, endpoint or credential: Pulumi pickles it into the state. Each call
builds its client from the environment the engine passes to the provider process (see each
package's `settings` for the variable names; `make -s env` exports the sandbox's).

One package per backend:

- `authentik`: the tenant's groups and users in Authentik (REST API).
- `kubernetes`: the tenant's workloads as offboarding stops them, the login release's pods as
  step 5a waits for them, and a Lease as a lock (kubectl).
- `offboarding`: the gate that stops `pulumi destroy` before the runbook's order allows it.
- `retention`: what offboarding keeps in the S3-compatible retention store, and its ledger.
- `slurm`: the tenant's Slurm accounting and partitions, its queue, usage, job records, drain,
  and batch jobs submitted for a user (the smoke tests).
- `weka`: the tenant's Weka organization, filesystems, quotas, directories and users (REST API).

And what they share:

- `base`: the provider scaffolding written once (field table, check, diff in stored form).
- `call_log`: counts and times every backend call, for the onboarding benchmark.
- `command`: runs a command on a host or in a pod: argv list, bounded wait, a result.
- `environment`: reads a backend's settings from the environment, the same way for each.
- `errors`: the backends' errors, one subclass per backend.
- `files`: an exclusive file lock for a read-modify-write, and an atomic write.
- `http_retry`: the one retry policy of the REST clients.
- `identities`: the forms of names, email addresses and POSIX ids every backend accepts.
- `kubectl`: runs kubectl's own commands (get, apply, auth can-i), bounded, failing in its words.
- `processes`: names a process by pid and start time, as /proc says.
- `progress`: what a provider says while it waits, where the engine shows it.
- `webhook`: posts to the operators' chat webhook, its URL never printed.
"""
