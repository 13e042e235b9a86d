"""The JSON shapes of the real API: snake_case everywhere except camelCase snapshots (and the
camelCase items of a filesystem's `obs_buckets`)."""

from __future__ import annotations

from typing import Any

from sandbox.weka.cluster import Cluster
from sandbox.weka.core import Caller
from sandbox.weka.object_store import bucket_uid
from sandbox.weka.store import Directory, FileSystem, Org, Quota, Snapshot, User


def org_view(cluster: Cluster, org: Org) -> dict[str, Any]:
    ssd_allocated, total_allocated = cluster.org_allocated(org)
    return {
        "uid": org.uid,
        "id": org.id,
        "name": org.name,
        "ssd_quota": org.ssd_quota,
        "total_quota": org.total_quota,
        "ssd_allocated": ssd_allocated,
        "total_allocated": total_allocated,
    }


def user_view(cluster: Cluster, user: User) -> dict[str, Any]:
    view: dict[str, Any] = {
        "uid": user.uid,
        "username": user.username,
        "role": user.role,
        "org_id": cluster.state.orgs[user.org_uid].id,
        "source": "Internal",
    }
    if user.posix_uid is not None:
        view["posix_uid"] = user.posix_uid
    if user.posix_gid is not None:
        view["posix_gid"] = user.posix_gid
    return view


def whoami_view(caller: Caller) -> dict[str, Any]:
    return {
        "uid": caller.user.uid,
        "username": caller.user.username,
        "role": caller.user.role,
        "org_id": caller.org.id,
        "org_name": caller.org.name,
        "source": "Internal",
    }


def fs_view(cluster: Cluster, fs: FileSystem) -> dict[str, Any]:
    used = cluster.fs_used(fs)
    ssd_used = min(used, fs.ssd_budget)
    making = cluster.background.pending(("fs", fs.uid))
    return {
        "uid": fs.uid,
        "id": fs.id,
        "name": fs.name,
        "group_name": fs.group_name,
        "group_id": f"FSGroupId<{fs.group_name}>",
        "status": "CREATING" if making else "READY",
        "is_ready": not making,
        "is_creating": making,
        "is_removing": False,
        "is_encrypted": fs.encrypted,
        "auth_required": fs.auth_required,
        "total_budget": fs.total_budget,
        "ssd_budget": fs.ssd_budget,
        "used_total": used,
        "used_total_data": used,
        "available_total": fs.total_budget - used,
        "free_total": fs.total_budget - used,
        "used_ssd": ssd_used,
        "used_ssd_data": ssd_used,
        "used_ssd_metadata": 0,
        "available_ssd": fs.ssd_budget - ssd_used,
        "free_ssd": fs.ssd_budget - ssd_used,
        "available_ssd_metadata": 0,
        "metadata_budget": 0,
        "is_thinly_provisioned": False,
        "thin_provisioning_min_ssd": 0,
        "thin_provisioning_max_ssd": 0,
        "auto_max_files": False,
        "obs_buckets": _attached(cluster, fs),
        # Deprecated since 4.x, still served beside obs_buckets.
        "object_storages": _attached(cluster, fs),
    }


def _attached(cluster: Cluster, fs: FileSystem) -> list[dict[str, Any]]:
    if not fs.obs_bucket:
        return []
    # An emulator restarted without the bucket's settings still shows it attached, as down.
    reachable = cluster.object_store is not None and cluster.object_store.name == fs.obs_bucket
    return [
        {
            "uid": bucket_uid(fs.obs_bucket),
            "name": fs.obs_bucket,
            "obsId": "ObjectStorageId<0>",
            "mode": fs.obs_mode,
            "state": "ACTIVE",
            "status": "UP" if reachable else "DOWN",
            "detachProgress": 0,
        }
    ]


def path_view(path: str, directory: Directory) -> dict[str, Any]:
    # resolvePath returns the inode as a string (csi-wekafs parses it), quotas as a number.
    return {"inode_id": str(directory.inode_id), "path": path}


def quota_view(cluster: Cluster, fs: FileSystem, path: str, quota: Quota) -> dict[str, Any]:
    inode = str(fs.directories[path].inode_id)
    return {
        "inode_id": fs.directories[path].inode_id,
        "path": path,
        "status": "ADDING" if cluster.background.pending(("quota", fs.uid, inode)) else "ACTIVE",
        "total_bytes": cluster.quota_usage(fs, path),
        "data_blocks": 0,
        "metadata_blocks": 0,
        "hard_limit_bytes": quota.hard_limit_bytes,
        "soft_limit_bytes": quota.soft_limit_bytes,
        "grace_seconds": quota.grace_seconds,
        "owner": quota.owner,
        "snap_view_id": 0,
    }


def snapshot_view(cluster: Cluster, snap: Snapshot) -> dict[str, Any]:
    # Uploads go to the one (local) bucket, UPLOADING while the cluster settles (background.py).
    uploading = cluster.background.pending(("upload", snap.uid))
    stow = ("UPLOADING" if uploading else "SYNCHRONIZED") if snap.locator else "NONE"
    done = bool(snap.locator) and not uploading
    local = {
        "locator": snap.locator,
        "stowStatus": stow,
        "stowProgress": "100%" if done else ("50%" if uploading else "N/A"),
    }
    return {
        "uid": snap.uid,
        "id": snap.id,
        "name": snap.name,
        "accessPoint": snap.access_point,
        "filesystem": snap.fs_name,
        "filesystemId": snap.fs_id,
        "filesystemUid": snap.fs_uid,
        "isWritable": snap.is_writable,
        "isRemoving": False,
        "creationTime": snap.creation_time,
        "locator": snap.locator,
        "stowStatus": stow,
        "multiObs": False,
        "progress": 100 if done else (50 if uploading else 0),
        "localStowInfo": local,
        "remoteStowInfo": {"locator": "", "stowStatus": "NONE", "stowProgress": "N/A"},
        "type": "",
    }


def locator_info_view(manifest: dict[str, Any]) -> dict[str, Any]:
    """`POST /snapshots/locatorInfo`: what the bucket says about an uploaded snapshot."""
    fields = ("fs_name", "guid", "snapshot_name", "snap_view_id", "access_point")
    return {
        **{name: str(manifest[name]) for name in fields},
        "fs_ssd_capacity": int(manifest["fs_ssd_capacity"]),
        "is_encrypted": bool(manifest["is_encrypted"]),
    }


def cluster_view(cluster: Cluster) -> dict[str, Any]:
    return {
        "name": "weka-emulator",
        "guid": cluster.state.cluster_guid,
        "release": "4.3.5",
        "release_hash": "emulator",
        "init_stage": "INITIALIZED",
        "status": "OK",
        "capacity": {
            "total_bytes": cluster.capacity_bytes,
            "hot_spare_bytes": 0,
            "unprovisioned_bytes": max(cluster.unprovisioned(), 0),
        },
    }
