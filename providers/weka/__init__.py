"""Weka: the organization, filesystems, directory quotas and users of a tenant's storage
(onboarding runbook steps 4e and 6), and what the CSI driver reads.

`client` talks to the REST API v2 and knows nothing of Pulumi; `mount` makes directories
through a host that mounts the filesystems (the REST API cannot); one module per kind of object
(`organization_provider`, `filesystem_provider`, `quota_provider`, `directory_provider`,
`org_user_provider`) turns Pulumi's calls into client calls, on what `props` holds for them all;
`provider` keeps the providers' old import path, which existing stacks' state names; `resources`
declares the dynamic resources; `settings` reads the cluster's address and admin login from the
environment at call time; `csi` builds the csi.weka.io Secret and StorageClass parameters.
"""
