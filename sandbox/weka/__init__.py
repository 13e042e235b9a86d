"""An emulator of the Weka 4.3 REST API v2, for tests and the local sandbox.

Weka is proprietary and cannot run here, so this serves the subset of `/api/v2` that the project
and the csi-wekafs driver use (login, organizations, users, filesystems, directory quotas,
snapshots, Snap-To-Object), with the real envelope, field names and error codes, plus a few
test-only calls under `/api/v2/_emulator/` to stand in for what only a client can do (create
directories, write data, hold a filesystem mounted). Each filesystem is also a real directory
under `--mount-root`, as on a host that mounts them all, so a plain `mkdir` there makes a
directory the API then finds (mounts.py), and each snapshot a copy in its `.snapshots`. Its one
object store bucket is an S3 bucket named by RETENTION_S3_* (in the sandbox, the retention
store): snapshots are uploaded into it and filesystems made from what it holds (snapshots.py,
downloads.py, object_store.py). Run it with `python -m sandbox.weka --help`.

Where a shape is the real one and where it is assumed, for Snap-To-Object (sources: Weka's
OpenAPI document of API 5.1 as published at github.com/api-evangelist/weka,
openapi/_original/weka-openapi-original.json; the generated client of API 3.14,
github.com/weka/RESTapi_client; docs.weka.io's Snap-To-Object, attach and `weka fs delete`
pages, github.com/weka/docs-weka-io; csi-wekafs; snaptool). The paths and fields below are the
same in the 3.14 client and the 5.1 document, so Weka 4.3's are taken to be them:

- confirmed: `POST /snapshots/{uid}/upload {obs_site: LOCAL|REMOTE}` answering `{locator,
  extra}`, the locator's shape, only read-only snapshots uploadable; `POST /fileSystems/download
  {name, group_name, total_capacity, ssd_capacity, object_storage, locator, auth_required,
  snapshot_name, access_point}` answering the new filesystem; `POST
  /fileSystems/{uid}/objectStoreBuckets {obs_name, obs_mode: READ_ONLY|WRITABLE}` (and the
  deprecated `/objectStores`) answering `data: null`; `obs_name` in `POST /fileSystems`;
  `obs_buckets` items `{uid, name, obsId, mode, state, status, detachProgress}`; `DELETE
  /fileSystems/{uid}?purge_from_obs=` and that without it the uploads stay; `POST
  /snapshots/locatorInfo {object_storage, locator}` and its field names; a snapshot's
  `localStowInfo`/`remoteStowInfo {locator, stowStatus, stowProgress}`; the words "is not tiered:
  cannot upload from it" in the answer to uploading from a filesystem without a bucket;
- assumed: every status code and the rest of every message of the refusals above; that a
  snapshot uploaded already is refused (409) rather than uploaded again; that a downloaded
  filesystem holds the snapshot with the same locator; that org admins may attach buckets;
  the objects' layout in the bucket (object_store.py: a real cluster's is its own).
"""
