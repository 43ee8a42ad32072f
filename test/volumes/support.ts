// Shared fixtures of the volume tests: a VolumeService on a fresh PostgreSQL database (or PGlite) and a temp data
// dir, both removed after the test file.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { VolumeService } from '../../src/volumes/service.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';

export interface VolumeFixture {
  db: Db;
  dataDir: string;
  volumes: VolumeService;
  /** Another service on the same database and data dir: a second process of the same node. */
  /** A second service on the same data dir and database (another process); options as VolumeServiceOptions. */
  another(opts?: { quotaChunkBytes?: number }): VolumeService;
  close(): Promise<void>;
}

export async function volumeFixture(kind: 'pg' | 'pglite' = 'pg', nodeId = 'node-v1'): Promise<VolumeFixture> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-volumes-'));
  let tdb: TestDatabase | undefined;
  if (kind === 'pg') tdb = await createTestDatabase({ migrated: true });
  const db = await openDb({ url: tdb?.url, dataDir, poolSize: 20 }, silentLogger());
  const make = (opts: { quotaChunkBytes?: number } = {}): VolumeService => new VolumeService({ db, dataDir, nodeId, logger: silentLogger(), ...opts });
  return {
    db,
    dataDir,
    volumes: make(),
    another: (opts) => make(opts),
    close: async () => {
      await db.close();
      await tdb?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
