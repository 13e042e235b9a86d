"""Dynamic providers for the backends the Kubernetes provider does not reach: Authentik, Slurm
and Weka. One package per backend: a small client with no Pulumi in it, and the provider that
translates between Pulumi and that client.

A provider holds no client, endpoint or credential: Pulumi pickles it into the state. Each call
builds its client from the environment the engine passes to the provider process (see each
package's `settings` for the variable names; `make -s env` exports the sandbox's)."""
