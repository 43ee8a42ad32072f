// The shapes of the volumes capability (seed 000 "volumes", seed 001 orch.volume.*/orch.file.*, seed 002
// spec.storage). Sizes are numbers of bytes (a volume is far below 2^53 bytes); times are ISO 8601 strings.

export type StorageClass = 'ephemeral' | 'persistent';

export const STORAGE_CLASSES: readonly StorageClass[] = ['ephemeral', 'persistent'];

/** A volume as every transport shows it. */
export interface Volume {
  id: string;
  tenant_id: string;
  label: string;
  storage_class: StorageClass;
  size_limit_bytes: number;
  used_bytes: number;
  /** The user who made it (the token's `sub`). */
  owner_subject: string;
  /** What the volume belongs to besides its user (`workflow_execution`, `git_binding`, …); null for a plain volume. */
  owner_kind: string | null;
  owner_ref: string | null;
  /** The node whose data dir holds the files. */
  node_id: string;
  status: 'active' | 'deleting';
  ttl_hours: number | null;
  expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface CreateVolumeInput {
  tenantId: string;
  ownerSubject: string;
  label: string;
  sizeLimitBytes: number;
  /** Default `persistent`. */
  storageClass?: StorageClass;
  /** Ephemeral only; default 24. */
  ttlHours?: number;
  /**
   * Ephemeral only, overrides ttlHours for the expiry (tests, and callers that count the TTL from an earlier
   * moment such as a workflow's start). ttl_hours still records the hours asked for.
   */
  ttlSeconds?: number;
  owner?: { kind: string; ref: string };
}

export interface ListVolumesOptions {
  ownerKind?: string;
  ownerRef?: string;
  limit?: number;
  offset?: number;
}

export interface VolumeQuota {
  volume_id: string;
  size_limit_bytes: number;
  used_bytes: number;
  available_bytes: number;
  file_count: number;
  directory_count: number;
}

export type FileType = 'file' | 'directory' | 'symlink' | 'other';

/** One entry of a directory listing, or the answer of stat. `path` is relative to the volume root, `/`-rooted. */
export interface FileInfo {
  name: string;
  path: string;
  type: FileType;
  size: number;
  /** Permission bits and type bits as lstat reports them (FSAL attributes). */
  mode: number;
  ino: number;
  nlink: number;
  mtime: string;
  atime: string;
  ctime: string;
}

export interface WriteResult {
  path: string;
  /** Bytes written by this call. */
  bytes_written: number;
  /** Size of the file afterwards. */
  size: number;
  /** used_bytes of the volume after the write. */
  used_bytes: number;
}

export interface RemoveResult {
  path: string;
  /** Bytes given back to the volume. */
  freed_bytes: number;
}
