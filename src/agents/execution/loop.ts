// The refinement loop of one execution (DESIGN.md "Agent execution, end to end"), as the ExecutionActor runs it:
//   iteration n: wait for the bootstrap's `generate` → call the model with the agent's tools → run each tool call
//   (fs.* here, cmd.run dispatched into the sandbox) until the model answers without tool calls → `final` to the
//   bootstrap → validate → completed, or `iteration_failed` + `refinement_applied` with the errors fed into the
//   next prompt, up to max_iterations.
// Determinism is what makes it resumable: the conversation is rebuilt from the journal on every incarnation, each
// model answer and tool result is taken from the journal when it is there, and every event carries a key so a
// replayed step announces nothing twice.
import type { BusEvent, EventBus } from '../../bus/bus.ts';
import { Errors, isOrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db, Queryable } from '../../storage/db.ts';
import { fencedWrite, type RowFence } from '../../storage/row-lease.ts';
import type { LlmMessage, LlmRegistry, LlmResponse } from '../llm/types.ts';
import type { AgentManifest } from '../manifest/types.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import { CancelledByUser, ExecutionTimedOut, IterationTimedOut, isHandOver } from './errors.ts';
import { recordExecutionEvent, type ExecutionEventType } from './events.ts';
import type { GatewayChannel } from './gateway-channel.ts';
import type { GatewayRegistry } from './gateway-server.ts';
import { Journal } from './journal.ts';
import type { ExecutionRow } from './repo.ts';
import { prepareVolumes, runsIdle, startSandbox, WORKSPACE, type Sandbox } from './sandbox.ts';
import { runTool, toolDefs, toolFromWire, type CmdCeilings, type CmdResult, type ToolContext } from './tools.ts';
import { validateIteration } from './validate.ts';
import { summarizeToolCall, type TimedToolResult, type ToolCallSummary } from './tool-summary.ts';
import { ExecutionVolumes } from './volumes.ts';
import type { VolumeService } from '../../volumes/service.ts';
import type { Mount } from './tools.ts';
import type { TenantJudge } from './judge.ts';
import { judgeToolCall, toolValidationRules } from './tool-judge.ts';
import type { ToolCatalog } from '../../tools/types.ts';
import type { SandboxCommands } from '../../seal/sandbox-commands.ts';
import { ExecutionTelemetry } from '../../observability/runs.ts';
import type { CortexPatternView, CortexService } from '../../cortex/service.ts';
import { deadline } from '../../util/deadline.ts';
import type { StartAdmission } from './admission.ts';

/** Model turns one iteration may take before it is failed (a model that never stops calling tools). */
const MAX_TURNS_PER_ITERATION = 50;

export interface LoopDeps {
  db: Db;
  bus: EventBus;
  llm: LlmRegistry;
  runtimes: Partial<Record<'process' | 'docker', ContainerRuntime>>;
  defaultIsolation: 'process' | 'docker';
  defaultImage: string;
  gateways: GatewayRegistry;
  nodeId: string;
  dataDir: string;
  ceilings: CmdCeilings;
  /** The node's tool catalog (fs.*, cmd.run, web.*, orch.* run through it), injected: the loop never builds one. */
  catalog: ToolCatalog;
  judge?: TenantJudge;
  logger: Logger;
  /** The node's live-sandbox registry: cmd.run over SEAL runs in this execution's sandbox through it. */
  sandboxCommands?: SandboxCommands;
  /**
   * The node's volumes: spec.volumes become volumes owned by the execution (src/agents/execution/volumes.ts).
   * Absent: they are plain directories under the data dir (as before volumes existed).
   */
  volumes?: VolumeService;
  /** FuseMountService address (config spec.fuse.address): spec.volumes are mounted through the FUSE daemon. */
  fuseAddress?: string;
  /** Observability hook for benchmarks and tests (time of the first `generate`). */
  onFirstGenerate?: (executionId: string, at: number) => void;
  /** Cortex memory for agents with spec.execution.memory: true (absent: memory is ignored). */
  cortex?: CortexService;
  /** The node's start queue: the sandbox is made once a start slot is granted (admission.ts). Absent: at once. */
  admission?: StartAdmission;
}

/** Solutions recalled for one failed iteration (journaled, so a resumed run builds the same prompt). */
interface Recalled {
  pattern_id: string;
  error_type: string;
  solution_approach: string;
  solution_code?: string;
  frequency: number;
  success_score: number;
}

const MEMORY_HINTS = 3;
/** Patterns whose solutions failed more often than not are not suggested. */
const MEMORY_MIN_SUCCESS = 0.5;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 15)}\n…[truncated]` : text;
}

/** The refine prompt's memory section. */
export function memoryHints(found: Recalled[]): string {
  const lines = found.map((p, i) => {
    const code = p.solution_code ? `\n   Code:\n${p.solution_code}` : '';
    return `${i + 1}. (${p.error_type}, seen ${p.frequency}×, worked ${Math.round(p.success_score * 100)}% of the time) ${p.solution_approach}${code}`;
  });
  return `Solutions that worked for similar errors before (Cortex memory):\n${lines.join('\n')}`;
}

const now = (): string => new Date().toISOString();

function renderPrompt(m: AgentManifest, input: string): string {
  const template = m.spec.task.prompt_template;
  if (template) return template.replace(/\{\{\s*(input|instruction)\s*\}\}/g, (_x, k: string) => (k === 'input' ? input : m.spec.task.instruction));
  return input ? `${m.spec.task.instruction}\n\nInput:\n${input}` : m.spec.task.instruction;
}

function systemPrompt(m: AgentManifest): string {
  return [
    `You are the agent "${m.metadata.name}". Work in ${WORKSPACE} using the tools you are given.`,
    'When the task is done, answer with your final result and no tool calls.',
  ].join(' ');
}

function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  return AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
}

/** Rejects when `signal` aborts; used to race waits that take no signal. */
function abortPromise(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export class ExecutionLoop {
  private readonly log: Logger;
  private readonly id: string;
  private readonly m: AgentManifest;
  private journal!: Journal;
  private channel: GatewayChannel | undefined;
  private sandbox: Sandbox | undefined;
  private iteration = 0;
  private execVolumes: ExecutionVolumes | undefined;
  /** A terminal status was written: the volume grants end with the execution. */
  private ended = false;
  /** Spans and metrics of this incarnation (src/observability/runs.ts). */
  private readonly tel: ExecutionTelemetry;

  constructor(
    private readonly deps: LoopDeps,
    private readonly fence: RowFence,
    private readonly row: ExecutionRow,
  ) {
    this.id = row.id;
    this.m = row.manifest;
    this.log = deps.logger.child({ execution: row.id });
    this.tel = new ExecutionTelemetry(row);
  }

  /** Writes an event (and optional row changes) in one fenced transaction, then announces it. */
  private async emit(type: ExecutionEventType, key: string, payload: Record<string, unknown>, set?: { sql: string; params: unknown[] }): Promise<void> {
    const event = await recordExecutionEvent(this.deps.db, this.fence, type, key, payload, set);
    if (event) await this.publish(event);
  }

  private async publish(event: BusEvent): Promise<void> {
    await this.deps.bus.publish(event).catch((err: unknown) => this.log.warn({ err }, 'publishing an event failed'));
  }

  /** Runs to a terminal state, or throws a hand-over reason (shutdown, lease lost) having written nothing more. */
  async run(signal: AbortSignal): Promise<void> {
    const m = this.m;
    const timeoutS = m.spec.security.resources.timeout;
    const overall = AbortSignal.timeout(timeoutS * 1000);
    const runSignal = anySignal([signal, overall]);
    try {
      // Wait for a start slot (admission.ts); the execution stays pending meanwhile.
      await this.deps.admission?.acquire(this.row.tenant_id, this.id, runSignal);
      if (this.row.status === 'pending') {
        await this.emit('execution_started', 'execution_started', { agent_id: this.row.agent_id, started_at: now() }, {
          sql: `status = 'running', started_at = now()`,
          params: [],
        });
        this.tel.started();
      }
      if (!this.deps.llm.hasAlias(m.spec.runtime.model)) {
        await this.finishFailed(`no LLM provider configured for alias "${m.spec.runtime.model}"`);
        return;
      }
      // A row claimed pending had not started: no step can have been recorded (each comes after execution_started,
      // and nothing sets a row back to pending), so its empty journal is not read (issue 24: a statement per start).
      this.journal = this.row.status === 'pending' ? Journal.fresh(this.deps.db, this.id, this.fence) : await Journal.load(this.deps.db, this.id, this.fence);
      if (this.journal.size > 0) this.log.info({ steps: this.journal.size }, 'resuming from the journal');
      await this.tel.within(() => this.iterate(runSignal));
    } catch (err) {
      const reason = runSignal.aborted ? (runSignal.reason as unknown) : err;
      // Kill the sandbox before anything else (a cancel must stop the running command at once), and record the
      // outcome while the engine removes it: the kill is immediate, the removal can take a moment.
      const stopping = this.teardown();
      try {
        if (overall.aborted && !signal.aborted) {
          await this.finishFailed(new ExecutionTimedOut(timeoutS).message);
        } else if (reason instanceof CancelledByUser) {
          await this.finishCancelled();
        } else if (isHandOver(reason) || isHandOver(err)) {
          throw isHandOver(reason) ? reason : err;
        } else {
          const message = err instanceof Error ? err.message : String(err);
          this.log.error({ err }, 'execution failed');
          await this.finishFailed(message);
        }
      } finally {
        await stopping;
      }
    } finally {
      this.deps.admission?.release(this.id);
      this.tel.end();
      await this.teardown();
      // After the sandbox is gone: Unmount at execution end (seed 000 mount lifecycle).
      await this.execVolumes?.detach({ ended: this.ended }).catch((err: unknown) => this.log.warn({ err }, 'detaching the volumes failed'));
    }
  }

  /** /workspace (a directory under the data dir, unless a spec.volumes entry is mounted there) + spec.volumes. */
  private async mountsFor(): Promise<Mount[]> {
    const volumes = this.deps.volumes;
    if (!volumes) return prepareVolumes(this.deps.dataDir, this.id, this.m);
    this.execVolumes ??= new ExecutionVolumes(
      { db: this.deps.db, volumes, ...(this.deps.fuseAddress ? { fuseAddress: this.deps.fuseAddress } : {}), logger: this.log },
      { id: this.id, tenantId: this.row.tenant_id, manifest: this.m },
    );
    const attached = await this.execVolumes.attach();
    const workspace = attached.some((a) => a.sandboxPath === WORKSPACE)
      ? []
      : await prepareVolumes(this.deps.dataDir, this.id, { ...this.m, spec: { ...this.m.spec, volumes: [] } });
    return [...workspace, ...attached];
  }

  private async teardown(): Promise<void> {
    this.unregisterCommands?.();
    this.unregisterCommands = undefined;
    if (this.channel) this.deps.gateways.closeChannel(this.channel);
    this.channel = undefined;
    const sb = this.sandbox;
    this.sandbox = undefined;
    if (sb) await sb.stop().catch((err: unknown) => this.log.warn({ err }, 'stopping the sandbox failed'));
  }

  private runtime(): ContainerRuntime {
    const wanted = this.m.spec.runtime.isolation === 'inherit' ? this.deps.defaultIsolation : this.m.spec.runtime.isolation;
    const rt = this.deps.runtimes[wanted];
    if (!rt) throw new Error(`isolation ${wanted} is not available on node ${this.deps.nodeId}`);
    return rt;
  }

  private async freshSandbox(): Promise<{ channel: GatewayChannel | undefined; sandbox: Sandbox }> {
    await this.teardown();
    const runtime = this.runtime();
    // An idle sandbox (process isolation) has no bootstrap to talk to: no channel.
    const channel = runsIdle(runtime) ? undefined : this.deps.gateways.open(this.id);
    this.channel = channel;
    const mounts = await this.mountsFor();
    const sandbox = await startSandbox({
      runtime,
      registry: this.deps.gateways,
      channel,
      dataDir: this.deps.dataDir,
      nodeId: this.deps.nodeId,
      executionId: this.id,
      agentId: this.row.agent_id,
      manifest: this.m,
      mounts,
      defaultImage: this.deps.defaultImage,
      logger: this.log,
    });
    this.sandbox = sandbox;
    const rt = sandbox.runtime;
    if (this.deps.sandboxCommands && rt.exec) {
      const sandboxId = sandbox.handle.id;
      this.unregisterCommands = this.deps.sandboxCommands.register(this.id, (req) => rt.exec!(sandboxId, req));
    }
    await fencedWrite(this.deps.db, this.fence, 'container_id = $1, attestation_secret_sha256 = $2, updated_at = now()', [sandbox.handle.id, sandbox.attestationSecretSha256 ?? null]);
    this.toolCtx = {
      manifest: this.m,
      mounts,
      workdir: WORKSPACE,
      ceilings: this.deps.ceilings,
      runCommand: (req) => this.dispatch(req),
      catalog: this.deps.catalog,
      tenantId: this.row.tenant_id,
      executionId: this.id,
      agentId: this.row.agent_id,
    };
    return { channel, sandbox };
  }

  private toolCtx: ToolContext | undefined;
  private unregisterCommands: (() => void) | undefined;
  private dispatchSignal: AbortSignal | undefined;
  private dispatchSeq = 0;
  /** The current iteration's tool calls, announced on its iteration_completed / iteration_failed (tool-summary.ts). */
  private iterationTools: ToolCallSummary[] = [];

  private async dispatch(req: { command: string; args: string[]; cwd: string; timeout_secs: number; max_output_bytes: number; env?: Record<string, string> }): Promise<CmdResult> {
    const channel = this.channel;
    const sandbox = this.sandbox;
    if (!sandbox || (!channel && !sandbox.direct)) throw new Error('no sandbox');
    this.dispatchSeq++;
    const signal = this.dispatchSignal;
    if (!channel) return this.execDirect(sandbox, req, signal);
    const exited = sandbox.handle.exited.then((code) => {
      throw new Error(`sandbox exited with code ${code} while running ${req.command}`);
    });
    const result = await Promise.race([
      channel.dispatch(
        {
          type: 'dispatch',
          dispatch_id: `${this.iteration}-${this.dispatchSeq}`,
          action: 'exec',
          command: req.command,
          args: req.args,
          cwd: req.cwd,
          env_additions: req.env ?? {},
          timeout_secs: req.timeout_secs,
          max_output_bytes: req.max_output_bytes,
        },
        signal,
      ),
      exited,
    ]);
    if (result.duration_ms >= req.timeout_secs * 1000 && result.exit_code !== 0) {
      return { ...result, stderr: `${result.stderr}\nExecTimeoutCeilingExceeded: ran longer than ${req.timeout_secs} s` };
    }
    return { exit_code: result.exit_code, stdout: result.stdout, stderr: result.stderr, duration_ms: result.duration_ms, truncated: result.truncated };
  }

  /** A command of an idle sandbox: a fresh bubblewrap sandbox of its spec (runtime.exec), killed when `signal` aborts. */
  private async execDirect(
    sandbox: Sandbox,
    req: { command: string; args: string[]; cwd: string; timeout_secs: number; max_output_bytes: number; env?: Record<string, string> },
    signal: AbortSignal | undefined,
  ): Promise<CmdResult> {
    const r = await sandbox.runtime.exec!(sandbox.handle.id, {
      command: req.command,
      args: req.args,
      cwd: req.cwd,
      env: req.env ?? {},
      timeout_secs: req.timeout_secs,
      max_output_bytes: req.max_output_bytes,
      ...(signal ? { signal } : {}),
    });
    // Killed because the iteration or the execution ended: that, not the command's exit, is the outcome.
    if (signal?.aborted) throw signal.reason;
    const stderr = r.timed_out ? `${r.stderr}\nExecTimeoutCeilingExceeded: ran longer than ${req.timeout_secs} s` : r.stderr;
    return { exit_code: r.exit_code, stdout: r.stdout, stderr, duration_ms: r.duration_ms, truncated: r.truncated };
  }

  private async iterate(runSignal: AbortSignal): Promise<void> {
    const m = this.m;
    const max = m.spec.execution.mode === 'one-shot' ? 1 : m.spec.execution.max_iterations;
    const messages: LlmMessage[] = [
      { role: 'system', content: systemPrompt(m) },
      { role: 'user', content: renderPrompt(m, this.row.input) },
    ];
    let lastFailure = '';
    // Cortex memory (spec.execution.memory): what failed last, and which remembered solutions were suggested.
    const memory = m.spec.execution.memory === true ? this.deps.cortex : undefined;
    let failedBefore: { type: string; message: string } | undefined;
    const suggested = new Set<string>();
    let { channel, sandbox } = await this.freshSandbox().finally(() => this.deps.admission?.release(this.id));
    // The bootstrap asks `generate` when it starts and after each `final`. An iteration that failed before its
    // `final` (a model error) leaves the bootstrap's request parked: the next iteration answers that one instead.
    let needGenerate = true;
    for (let n = 1; n <= max; n++) {
      this.iteration = n;
      this.tel.iteration(n);
      this.dispatchSeq = 0;
      this.iterationTools = [];
      const itSeconds = m.spec.execution.iteration_timeout;
      const itTimeout = AbortSignal.timeout(itSeconds * 1000);
      const itSignal = anySignal([runSignal, itTimeout]);
      this.dispatchSignal = itSignal;
      let failure: { type: string; message: string } | undefined;
      let output = '';
      try {
        if (needGenerate && channel) {
          const sandboxGone = sandbox.handle.exited.then((code) => {
            throw new Error(`sandbox exited with code ${code} before asking for work`);
          });
          await Promise.race([channel.awaitGenerate(itSignal), sandboxGone, abortPromise(itSignal)]);
          needGenerate = false;
        }
        if (n === 1) {
          const ready = channel ? channel.firstGenerateAt : Date.now();
          if (ready) this.deps.onFirstGenerate?.(this.id, ready);
        }
        await this.emit('iteration_started', `iteration_started:${n}`, { iteration_number: n, action: 'generate', started_at: now() }, {
          sql: 'iteration = $1',
          params: [n],
        });
        const turn = await this.tel.inIteration(() => this.converse(n, messages, itSignal));
        output = turn.output;
        await channel?.final({ type: 'final', content: output, tool_calls_executed: turn.toolCalls, conversation: messages }, itSignal);
        needGenerate = true;
        const failures = await validateIteration(m.spec.execution.validation, { output, lastExitCode: turn.lastExitCode, lastStderr: turn.lastStderr }, (rule, out) =>
          this.journal.step(`it${n}:judge:${rule.judge_agent}`, 'judge', () => this.judge(rule, out)),
        );
        if (failures.length > 0) failure = { type: 'ValidationFailed', message: failures.map((f) => `${f.rule}: ${f.message}`).join('\n') };
      } catch (err) {
        if (runSignal.aborted) throw err;
        if (itTimeout.aborted) {
          failure = { type: 'IterationTimeout', message: new IterationTimedOut(itSeconds).message };
          // The bootstrap may be stuck in a command: the next iteration gets a fresh sandbox on the same volumes.
          if (n < max) {
            ({ channel, sandbox } = await this.freshSandbox());
            needGenerate = true;
          }
        } else if (isOrchError(err) && err.spec === Errors.LEASE_LOST) {
          throw err;
        } else if (err instanceof LlmStepFailed) {
          failure = { type: 'LlmError', message: err.message };
        } else {
          throw err;
        }
      }
      this.tel.iterationEnded(failure);
      if (!failure) {
        if (memory && failedBefore) {
          const before = failedBefore;
          await this.journal.step(`it${n}:memory:store`, 'memory', () => this.remember(memory, before, output, n, suggested));
        }
        await this.emit('iteration_completed', `iteration_completed:${n}`, { iteration_number: n, output, completed_at: now(), tool_calls: this.iterationTools });
        await this.finish('completed', 'execution_completed', { final_output: output, total_iterations: n, completed_at: now() }, {
          sql: `status = 'completed', final_output = $1, completed_at = now()`,
          params: [output],
        });
        return;
      }
      lastFailure = failure.message;
      failedBefore = failure;
      await this.emit('iteration_failed', `iteration_failed:${n}`, {
        iteration_number: n,
        error: { error_type: failure.type, message: failure.message },
        failed_at: now(),
        tool_calls: this.iterationTools,
      });
      if (n < max) {
        let feedback = `Iteration ${n} failed validation:\n${failure.message}\nFix the problem and try again.`;
        if (memory) {
          const failed = failure;
          const found = await this.journal.step(`it${n}:memory`, 'memory', () => this.recall(memory, failed));
          if (found.length > 0) {
            for (const p of found) suggested.add(p.pattern_id);
            feedback += `\n\n${memoryHints(found)}`;
          }
        }
        await this.emit('refinement_applied', `refinement_applied:${n}`, { iteration_number: n, code_diff: feedback, applied_at: now() });
        messages.push({ role: 'user', content: feedback });
      }
    }
    if (memory && suggested.size > 0) await this.journal.step(`memory:outcome`, 'memory', () => this.outcome(memory, suggested, false));
    await this.finishFailed(`validation failed after ${max} iteration(s): ${lastFailure}`);
  }

  /** Remembered solutions for a failed iteration; memory is advisory, so a Cortex failure only logs. */
  private async recall(cortex: CortexService, failure: { type: string; message: string }): Promise<Recalled[]> {
    try {
      const found: CortexPatternView[] = await cortex.query(this.row.tenant_id, {
        error_signature: clip(failure.message, 8192),
        error_type: failure.type,
        limit: MEMORY_HINTS,
        min_success_score: MEMORY_MIN_SUCCESS,
      });
      return found.map((p) => ({
        pattern_id: p.pattern_id,
        error_type: p.error_type,
        solution_approach: clip(p.solution_approach, 4000),
        ...(p.solution_code !== undefined ? { solution_code: clip(p.solution_code, 4000) } : {}),
        frequency: p.frequency,
        success_score: p.success_score,
      }));
    } catch (err) {
      this.log.warn({ err }, 'Cortex recall failed; refining without memory');
      return [];
    }
  }

  /** Stores what made the iteration after a failure pass, and credits the solutions that were suggested. */
  private async remember(cortex: CortexService, failure: { type: string; message: string }, output: string, n: number, suggested: Set<string>): Promise<{ pattern_id?: string }> {
    try {
      const stored = await cortex.store(this.row.tenant_id, {
        error_signature: clip(failure.message, 8192),
        error_type: failure.type,
        error_message: clip(failure.message, 16384),
        solution_approach: clip(`Agent "${this.m.metadata.name}" passed validation on iteration ${n} after this error with the final answer:\n${output}`, 16384),
        tags: [`agent:${this.m.metadata.name}`.slice(0, 64)],
      });
      suggested.delete(stored.pattern_id); // store already counted this one as a success
      await this.outcome(cortex, suggested, true);
      this.log.info({ pattern_id: stored.pattern_id, deduplicated: stored.deduplicated }, 'solution stored in Cortex');
      return { pattern_id: stored.pattern_id };
    } catch (err) {
      this.log.warn({ err }, 'storing the solution in Cortex failed');
      return {};
    }
  }

  private async outcome(cortex: CortexService, ids: Set<string>, success: boolean): Promise<null> {
    for (const id of ids) await cortex.recordOutcome(this.row.tenant_id, id, success).catch((err: unknown) => this.log.warn({ err, pattern_id: id }, 'recording a Cortex outcome failed'));
    return null;
  }

  /** Model turns and tool calls until the model answers without tools. */
  private async converse(n: number, messages: LlmMessage[], signal: AbortSignal): Promise<{ output: string; toolCalls: number; lastExitCode?: number; lastStderr?: string }> {
    const m = this.m;
    const tools = toolDefs(m, this.deps.catalog);
    let toolCalls = 0;
    let lastExitCode: number | undefined;
    let lastStderr: string | undefined;
    for (let turn = 1; turn <= MAX_TURNS_PER_ITERATION; turn++) {
      const answer = await this.journal.step<LlmResponse>(`it${n}:llm${turn}`, 'llm', async () => {
        const llmDeadline = deadline(m.spec.execution.llm_timeout_seconds * 1000, [signal]);
        const llmSignal = llmDeadline.signal;
        let res: LlmResponse;
        try {
          res = await this.tel.llmCall(m.spec.runtime.model, () => this.deps.llm.complete({
            alias: m.spec.runtime.model,
            messages: [...messages],
            tools,
            ...(m.spec.runtime.temperature !== undefined ? { temperature: m.spec.runtime.temperature } : {}),
            signal: llmSignal,
          }));
        } catch (err) {
          if (signal.aborted) throw err;
          throw new LlmStepFailed(llmDeadline.timedOut() ? `the model did not answer within llm_timeout_seconds (${m.spec.execution.llm_timeout_seconds} s)` : `LLM call failed: ${(err as Error).message}`, { cause: err });
        } finally {
          llmDeadline.dispose();
        }
        return res;
      }, (res) => ({
        // Counted in the journal entry's statement (one round trip, not two): they are written exactly when the answer is.
        sql: 'prompt_tokens = prompt_tokens + $1, completion_tokens = completion_tokens + $2',
        params: [res.usage.prompt_tokens, res.usage.completion_tokens],
      }));
      messages.push({ role: 'assistant', content: answer.content, ...(answer.tool_calls.length ? { tool_calls: answer.tool_calls } : {}) });
      if (answer.content) {
        await this.emit('iteration_output', `it${n}:out:${turn}`, { iteration_number: n, output: answer.content, emitted_at: now() });
      }
      if (answer.tool_calls.length === 0) return { output: answer.content ?? '', toolCalls, ...(lastExitCode !== undefined ? { lastExitCode, lastStderr } : {}) };
      for (const [i, call] of answer.tool_calls.entries()) {
        const tool = toolFromWire(m, call.name);
        const judged = this.needsToolJudge(tool)
          ? await this.journal.step(`it${n}:turn${turn}:judge${i}`, 'judge', () =>
              judgeToolCall(this.deps.judge, this.row.tenant_id, this.toolRules, tool, call.arguments),
            )
          : { allowed: true };
        const result: TimedToolResult = judged.allowed
          ? await this.journal.step<TimedToolResult>(`it${n}:turn${turn}:tool${i}`, 'tool', async () => {
              const started = performance.now();
              const r = await runTool(this.toolCtx!, tool, call.arguments);
              return { ...r, duration_ms: Math.round(performance.now() - started) };
            })
          : { ok: false, error: { error: 'ToolCallRejected', message: judged.reason ?? 'rejected by the tool judge' } };
        toolCalls++;
        this.iterationTools.push(summarizeToolCall(tool, call.arguments, result));
        if (tool === 'cmd.run' && result.ok) {
          const r = result.value as CmdResult;
          lastExitCode = r.exit_code;
          lastStderr = r.stderr;
          const shown = [r.stdout, r.stderr].filter(Boolean).join('');
          if (shown) await this.emit('iteration_output', `it${n}:cmd:${turn}:${i}`, { iteration_number: n, output: shown, emitted_at: now() });
        }
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result.ok ? result.value : result.error) });
      }
    }
    throw new LlmStepFailed(`the model kept calling tools for ${MAX_TURNS_PER_ITERATION} turns`);
  }

  private get toolRules(): ReturnType<typeof toolValidationRules> {
    return toolValidationRules(this.m.spec.execution.tool_validation);
  }

  /** The inner-loop judge applies when the manifest enables it and the tool's skip_judge is false. */
  private needsToolJudge(tool: string): boolean {
    if (this.toolRules.length === 0) return false;
    return this.deps.catalog.get(tool)?.skipJudge !== true;
  }

  private async judge(rule: Extract<AgentManifest['spec']['execution']['validation'][number], { type: 'semantic' }>, output: string) {
    if (!this.deps.judge) return { score: 0, reasoning: `no judge runner is configured for ${rule.judge_agent}` };
    return this.deps.judge(this.row.tenant_id, rule, output);
  }

  private finishFailed(reason: string): Promise<void> {
    return this.finish('failed', 'execution_failed', { reason, total_iterations: this.iteration, failed_at: now() }, {
      sql: `status = 'failed', reason = $1, completed_at = now()`,
      params: [reason],
    });
  }

  private finishCancelled(): Promise<void> {
    return this.finish('cancelled', 'execution_failed', { reason: 'cancelled', total_iterations: this.iteration, failed_at: now() }, {
      sql: `status = 'cancelled', reason = 'cancelled', completed_at = now()`,
      params: [],
    });
  }

  private async finish(status: string, type: ExecutionEventType, payload: Record<string, unknown>, set: { sql: string; params: unknown[] }): Promise<void> {
    this.log.info({ status, iterations: this.iteration }, 'execution finished');
    await this.emit(type, 'terminal', payload, set);
    this.ended = true;
    this.tel.finished(status as 'completed' | 'failed' | 'cancelled', typeof payload.reason === 'string' ? payload.reason : undefined);
  }
}

export class LlmStepFailed extends Error {}
