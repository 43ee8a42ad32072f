// The view a host git process gets (src/git/run.ts): bubblewrap with the whole host filesystem read-only, the
// repository directory (and a local upstream, where the node allows those) writable, the frozen copy of the
// repository's config bound read-only over `.git/config`, no capability but the permission-bit overrides (on a
// root node), its own pid/ipc/uts namespaces and session, dying with the orchestrator. The network namespace is
// the host's: clone, fetch and push need the network (git's protocol allowlist still applies); a program git ran
// would see the host's loopback services, which is why nothing the repository names may run
// (src/git/safe-config.ts) and the config cannot change under it.
// No tmpfs on /tmp: git needs no scratch space outside the repository, and a read-only /tmp keeps a local
// upstream under /tmp (tests, allow_local_repos) visible.

export interface GitSandboxSpec {
  cwd: string;
  /** The frozen config to bind over `<cwd>/.git/config`, or none (a clone: no repository yet). */
  config: string | undefined;
  writable: string[];
  env: Record<string, string>;
  command: string[];
}

export function bwrapArgs(s: GitSandboxSpec): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const w of [s.cwd, ...s.writable]) args.push('--bind', w, w);
  if (s.config) args.push('--ro-bind', s.config, `${s.cwd.replace(/\/+$/, '')}/.git/config`);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session', '--cap-drop', 'ALL');
  // A root node's git must still write what executions left in the volume (files and directories owned by the
  // sandbox user), as it did before: only the permission-bit overrides, nothing that could remount the read-only
  // binds (no CAP_SYS_ADMIN).
  if (process.getuid?.() === 0) args.push('--cap-add', 'CAP_DAC_OVERRIDE', '--cap-add', 'CAP_FOWNER');
  args.push('--chdir', s.cwd, '--clearenv');
  for (const [k, v] of Object.entries(s.env)) args.push('--setenv', k, v);
  args.push('--', ...s.command);
  return args;
}
