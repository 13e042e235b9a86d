"""The retention object store: where offboarding keeps a tenant's archives (its Slurm
accounting, its uploaded snapshots) until their retention ends, in any S3-compatible service.

- `client`: a small store over boto3, with no Pulumi in it.
- `objects`: what is stored, how it is named (`<tenant-slug>/...`) and marked (`tenant`,
  `retention-until`).
- `s3_errors`: S3's failures in the operator's words.
- `settings`: the endpoint, bucket and credentials (RETENTION_S3_*), read at call time.
- `ledger`: the append-only record of what was done to a tenant's retained data, and by whom.
- `erasure`: a user's right to erasure applied to a retained copy of the tenant's files.
- `kept_object_provider`: what every kept object shares: a fixed key, its metadata, its size read
  back.
- `archive_provider`: one archive of the tenant's Slurm records.
- `directory_copy_provider`: the tenant's directory on a shared filesystem, archived on the
  mount host.
- `resources`: the resources the program declares for what offboarding keeps.
"""
