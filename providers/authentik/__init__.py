"""Authentik: the tenant's groups and users (onboarding step 2, offboarding step 5).

`client` talks to the REST API (no Pulumi in it), `settings` reads the endpoint and token from the
environment at call time, `props` validates the inputs, `provider` implements the dynamic
providers and `resources` the resources a component declares.
"""
