// At start-up every registered kind re-spawns an actor for each non-terminal row this node owns (DESIGN.md rule 2).
import type { Logger } from '../logging/logger.ts';
import type { ActorKind, ActorMessage } from './kind.ts';
import type { ActorRuntime } from './runtime.ts';

export interface RecoveryReport {
  kind: string;
  keys: string[];
}

export async function recoverAll(
  runtime: ActorRuntime,
  kinds: readonly ActorKind<ActorMessage>[],
  logger: Logger,
): Promise<RecoveryReport[]> {
  const reports: RecoveryReport[] = [];
  for (const kind of kinds) {
    const keys = await kind.recoverableKeys();
    for (const key of keys) runtime.spawn(kind.name, key);
    logger.info({ kind: kind.name, count: keys.length }, 'recovered actors');
    reports.push({ kind: kind.name, keys });
  }
  return reports;
}
