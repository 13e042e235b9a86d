"""An emulator of the Authentik 2024.10 REST API and of what its LDAP outpost publishes.

The real server cannot run on these machines. Run it with `python -m sandbox.authentik --help`.
It serves, under /api/v3: root/config, core/users (+ me), core/groups (+ add_user, remove_user)
and core/tokens (+ view_key), with the real reply shapes and DRF error bodies. Everything that is
not part of the real API lives under /_emulator/:

- GET /_emulator/ldap/users/{username} and /_emulator/ldap/groups/{name}: the LDAP entries the
  outpost would publish, with the uidNumber/gidNumber a client (nslcd) would read;
- GET /_emulator/clock/, POST /_emulator/clock/ {"advance_seconds": N}: the emulator's clock,
  which tests move forward to expire tokens.
"""
