// Supported runtime language/version pairs (what `orch.runtime.list` reports). An unrecognised pair is rejected
// with no fallback (seed 001); `custom` takes any version but needs `spec.runtime.image`. No registry is reachable
// on the machines this project is tested on, so every pair runs on the local runtime image unless the manifest
// names an image; production nodes map these to real images.
export interface RuntimeEntry {
  language: string;
  version: string;
  description: string;
  deprecated: boolean;
}

export const CUSTOM_LANGUAGE = 'custom';

export const RUNTIMES: readonly RuntimeEntry[] = [
  { language: 'python', version: '3.10', description: 'Python 3.10', deprecated: false },
  { language: 'python', version: '3.11', description: 'Python 3.11', deprecated: false },
  { language: 'python', version: '3.12', description: 'Python 3.12', deprecated: false },
  { language: 'node', version: '18', description: 'Node.js 18', deprecated: true },
  { language: 'node', version: '20', description: 'Node.js 20', deprecated: false },
  { language: 'node', version: '22', description: 'Node.js 22', deprecated: false },
  { language: 'bash', version: '5', description: 'bash 5 (busybox sh in the local image)', deprecated: false },
  { language: 'go', version: '1.22', description: 'Go 1.22', deprecated: false },
];

export function isSupportedRuntime(language: string, version: string): boolean {
  return RUNTIMES.some((r) => r.language === language && r.version === version);
}

export function languages(): string[] {
  return [...new Set(RUNTIMES.map((r) => r.language))];
}

export function versionsOf(language: string): string[] {
  return RUNTIMES.filter((r) => r.language === language).map((r) => r.version);
}
