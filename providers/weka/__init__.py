"""Weka: the organization, filesystems, directory quotas and users of a tenant's storage
(onboarding runbook steps 4e and 6), and what the CSI driver reads.

- `client`: the REST API v2 client, with no Pulumi in it.
- `session`: its login flow: bearer tokens, refreshed on a 401, one session per user per process.
- `records`: what the API answers (organizations, users, filesystems, quotas, snapshots...).
- `csi`: the csi.weka.io Secret and StorageClass parameters.
- `mount`: makes directories through a host that mounts the filesystems (the REST API cannot).
- `props`: what the providers share: field parsers, the organization login, the base class.
- `organization_provider`: the tenant's organization and its admin user.
- `filesystem_provider`: a filesystem, with the delete gate that waits for the verified snapshot.
- `quota_provider`: a quota on a directory, set on its inode.
- `directory_provider`: a directory, made with its owner and mode through `mount`.
- `org_user_provider`: a local user of an organization, such as the CSI driver's.
- `uploaded_snapshot_provider`: offboarding's snapshot uploaded to an object store bucket.
- `provider`: the five providers under the module name existing stacks' state records.
- `resources`: the dynamic resources the components declare (`dynamic/weka:<Name>`).
- `settings`: the cluster's address and admin login, read from the environment at call time.
"""
