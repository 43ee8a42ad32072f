// Ids derived from a visit (WORKFLOW-CONTRACTS.md): UUID v5 of the visitKey (+ a suffix per parallel member), so a
// visit re-run after a crash finds the approval, agent execution or child run its first run created.
import { v5 as uuidv5 } from 'uuid';

/** Fixed namespace of orch's derived ids (a random UUID chosen once; never change it). */
export const ORCH_VISIT_NAMESPACE = '3f0d5f0e-6a43-4f6e-9c2b-1f8d2f7b9a11';

export function visitKeyOf(executionId: string, stateName: string, visit: number): string {
  return `${executionId}:${stateName}:${visit}`;
}

export function idFromVisit(visitKey: string, suffix?: string): string {
  return uuidv5(suffix === undefined ? visitKey : `${visitKey}:${suffix}`, ORCH_VISIT_NAMESPACE);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(s: string): boolean {
  return UUID.test(s);
}
