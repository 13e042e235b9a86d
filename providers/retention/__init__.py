"""The retention object store: where offboarding keeps a tenant's archives (its Slurm
accounting, its uploaded snapshots) until their retention ends, in any S3-compatible service.

`client` is a small store over boto3 (no Pulumi in it), `objects` what is stored and how it is
named and marked (`<tenant-slug>/...`, metadata `tenant` and `retention-until`), `s3_errors` S3's
failures in the operator's words, and `settings` reads the endpoint, bucket and credentials from
the environment (RETENTION_S3_*) at call time.
"""
