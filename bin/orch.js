#!/usr/bin/env node
// The `orch` bin: loads the TypeScript sources through tsx so that a clone runs without a build step.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
