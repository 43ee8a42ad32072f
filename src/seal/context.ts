// The security context of a SEAL session, resolved once at attestation from the execution's manifest. The tool
// catalog's policy module (src/tools/policy.ts, contextFromManifest) is the authority; this fallback mirrors the
// manifest fields for nodes built without it and for unit tests.
import type { AgentManifest } from '../agents/manifest/types.ts';
import type { SecurityContext } from '../tools/types.ts';

export type ContextResolver = (manifest: AgentManifest) => SecurityContext;

/** spec.tools → allow list; spec.security → filesystem and network; cmd.run's subcommand_allowlist. */
export function manifestContext(manifest: AgentManifest): SecurityContext {
  const spec = manifest.spec;
  const cmd = spec.tools.find((t) => t.name === 'cmd.run');
  const allowlist = cmd?.config?.subcommand_allowlist;
  return {
    name: spec.security_context ?? `agent:${manifest.metadata.name}`,
    allow: spec.tools.map((t) => t.name),
    // An empty allow list means "every tool" in a context; an agent that declares no tools gets none.
    deny: spec.tools.length === 0 ? ['*'] : [],
    filesystem: { read: [...spec.security.filesystem.read], write: [...spec.security.filesystem.write] },
    network: { mode: spec.security.network.mode, allowlist: [...spec.security.network.allowlist] },
    ...(allowlist ? { subcommandAllowlist: allowlist } : {}),
  };
}
