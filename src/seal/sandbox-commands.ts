// The node's live sandboxes, for cmd.run over SEAL. An agent container calling cmd.run through SEAL must get the
// command run in ITS execution's sandbox, which only that execution's actor (ExecutionLoop) holds. The loop
// registers a command runner here when its sandbox is up and unregisters it when the sandbox goes; SealService
// looks the caller's execution up and hands the runner to the tool as ToolCallContext.runCommand.
//
// The runner is an exec beside the sandbox's main process (ContainerRuntime.exec: docker exec, or a sibling bwrap
// with the same mounts), NOT a dispatch through the bootstrap: the bootstrap runs one command at a time, and the
// caller is usually that very command (agent code calling SEAL), which would wait for itself.
//
// Per node only: an execution running on another node has no entry here, and SEAL answers a tool error naming
// the owner node (forwarding to it is the cluster issue's).
import type { SandboxExecRequest, SandboxExecResult } from '../agents/runtime/types.ts';

export type SandboxCommandRunner = (req: SandboxExecRequest) => Promise<SandboxExecResult>;

export class SandboxCommands {
  private readonly runners = new Map<string, { token: symbol; run: SandboxCommandRunner }>();

  /** Registers the runner of an execution's live sandbox; the returned function unregisters exactly this one
   * (a newer sandbox of the same execution, after a restart, is not removed by the older one's teardown). */
  register(executionId: string, run: SandboxCommandRunner): () => void {
    const token = Symbol(executionId);
    this.runners.set(executionId, { token, run });
    return () => {
      if (this.runners.get(executionId)?.token === token) this.runners.delete(executionId);
    };
  }

  get(executionId: string): SandboxCommandRunner | undefined {
    return this.runners.get(executionId)?.run;
  }

  get size(): number {
    return this.runners.size;
  }
}
