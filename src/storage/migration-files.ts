// Finds the numbered migration files: NNN_name.sql, applied in ascending NNN.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors, OrchError } from '../errors/catalog.ts';

export interface MigrationFile {
  version: number;
  name: string;
  path: string;
}

/** Next to this module, so that it is found whatever the working directory. */
export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

const FILE = /^(\d+)_([a-z0-9_]+)\.sql$/;

export async function listMigrations(dir: string = DEFAULT_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const files: MigrationFile[] = [];
  for (const entry of await readdir(dir)) {
    if (!entry.endsWith('.sql')) continue;
    const m = FILE.exec(entry);
    if (!m) throw new OrchError(Errors.INTERNAL, `migration file ${entry} is not named NNN_name.sql`);
    files.push({ version: Number(m[1]), name: m[2]!, path: path.join(dir, entry) });
  }
  files.sort((a, b) => a.version - b.version);
  for (let i = 1; i < files.length; i++) {
    if (files[i]!.version === files[i - 1]!.version) {
      throw new OrchError(Errors.INTERNAL, `two migration files have version ${files[i]!.version}`);
    }
  }
  return files;
}

export function readMigration(file: MigrationFile): Promise<string> {
  return readFile(file.path, 'utf8');
}
