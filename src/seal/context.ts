// The security context of a SEAL session, resolved once at attestation from the execution's manifest by the tool
// catalog's policy (src/tools/policy.ts contextFromManifest) unless the node supplies another resolver.
import type { AgentManifest } from '../agents/manifest/types.ts';
import { contextFromManifest } from '../tools/policy.ts';
import type { SecurityContext } from '../tools/types.ts';

export type ContextResolver = (manifest: AgentManifest) => SecurityContext;

export const manifestContext: ContextResolver = contextFromManifest;
