// YAML text (or an already-parsed object) → validated, defaulted WorkflowManifest, or every problem found, each
// naming its field (`spec.states.build.transitions[0].target`). Three passes: YAML syntax, the JSON Schema of
// schema.ts (structure, types, unknown keys, unknown condition names), then what a schema cannot say well: state
// references, the fields each condition type needs, which kinds a condition applies to, ceilings, unit forms,
// volume references, storage rules and consensus weights. Defaults of seed 002 are filled only when all passed, and
// this is the only producer of WorkflowManifest: the engine and the runners never re-default.
import { Ajv, type ValidateFunction } from 'ajv';
import { tenantAjv } from '../../util/tenant-ajv.ts';
import { segmentsOf } from '../../config/paths.ts';
import { schemaErrors } from '../../agents/manifest/common.ts';
import { parseMemory } from '../../agents/manifest/parse.ts';
import { workflowManifestSchema, type ContainerFile, type StateFile, type StorageVolumeFile, type WorkflowManifestFile } from './schema.ts';
import type {
  ConditionType,
  ConsensusSpec,
  ContainerStep,
  ContainerVolume,
  JudgeAgentRef,
  ManifestError,
  ParseResult,
  StateKind,
  StateVolume,
  StorageVolumeSpec,
  Transition,
  WorkflowManifest,
  WorkflowState,
} from './types.ts';
import { parseWorkflowYaml } from './yaml.ts';
import { referenceErrors, unknownInitialStateMessage, unknownTargetMessage } from './references.ts';

export type { ParseResult } from './types.ts';

export const WORKFLOW_DEFAULTS = {
  max_total_transitions: 50,
  max_total_transitions_ceiling: 100,
  max_state_visits: 5,
  max_state_visits_ceiling: 20,
  state_timeout_seconds: 300,
  workdir: '/workspace',
  isolation: 'inherit',
  judge_weight: 1.0,
  judge_timeout_seconds: 60,
  judge_poll_interval_ms: 500,
  consensus_threshold: 0.7,
  min_judges_required: 1,
  agreement_factor: 0.7,
  self_confidence_factor: 0.3,
  image_pull_policy: 'IfNotPresent',
  container_timeout_seconds: 300,
  retry_max_attempts: 1,
  retry_backoff_seconds: 0,
  completion: 'all_succeed',
  subworkflow_mode: 'blocking',
  storage_class: 'ephemeral',
} as const;

/**
 * Names a state may not take: the template scope holds these at the top level next to every blackboard key
 * (`{{input.x}}`, `{{workflow.context.k}}`, `{{human.feedback}}`), so a state of that name would be shadowed.
 */
export const RESERVED_STATE_NAMES: readonly string[] = ['intent', 'input', 'workflow', 'blackboard', 'state', 'human', 'execution'];

/**
 * Names a workflow may not take: `/v1/workflows/{name}` shares its first segment with the run routes
 * (`/v1/workflows/executions`, CONTRACT.md), so a workflow of that name could never be read or run by name.
 */
export const RESERVED_WORKFLOW_NAMES: readonly string[] = ['executions'];

/** Which fields each condition type needs, and which it accepts (seed 002 "spec.states[*].transitions[]"). */
const CONDITION_FIELDS: Record<ConditionType, { required: (keyof Transition)[]; optional: (keyof Transition)[] }> = {
  always: { required: [], optional: [] },
  on_success: { required: [], optional: [] },
  on_failure: { required: [], optional: [] },
  exit_code_zero: { required: [], optional: [] },
  exit_code_non_zero: { required: [], optional: [] },
  exit_code: { required: ['value'], optional: [] },
  score_above: { required: ['threshold'], optional: [] },
  score_below: { required: ['threshold'], optional: [] },
  score_between: { required: ['min', 'max'], optional: [] },
  confidence_above: { required: ['threshold'], optional: [] },
  consensus: { required: ['threshold'], optional: ['agreement'] },
  all_approved: { required: [], optional: [] },
  any_rejected: { required: [], optional: [] },
  input_equals: { required: ['value'], optional: [] },
  input_equals_yes: { required: [], optional: [] },
  input_equals_no: { required: [], optional: [] },
  custom: { required: ['expression'], optional: [] },
};
const CONDITION_PARAMS: (keyof Transition)[] = ['threshold', 'agreement', 'value', 'expression', 'min', 'max'];

/** The state kinds a condition applies to (seed 002 "Condition types"); absent means every kind. */
const CONDITION_KINDS: Partial<Record<ConditionType, StateKind[]>> = {
  exit_code_zero: ['System', 'ContainerRun'],
  exit_code_non_zero: ['System', 'ContainerRun'],
  exit_code: ['System', 'ContainerRun'],
  score_above: ['Agent'],
  score_below: ['Agent'],
  score_between: ['Agent'],
  confidence_above: ['Agent'],
  consensus: ['ParallelAgents'],
  all_approved: ['ParallelAgents'],
  any_rejected: ['ParallelAgents'],
  input_equals: ['Human'],
  input_equals_yes: ['Human'],
  input_equals_no: ['Human'],
};

let compiled: ValidateFunction | undefined;

function validator(): ValidateFunction {
  compiled ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(workflowManifestSchema);
  return compiled;
}

// ---------------------------------------------------------------------------------------------------------------
// Unit forms

const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(s|m|h)\s*$/;
const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600 };

/** Seconds from `300s`, `5m`, `1h` (or a positive number of seconds); undefined for any other form. */
export function parseWorkflowDuration(v: string | number, allowZero = false): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) && (v > 0 || (allowZero && v === 0)) ? v : undefined;
  const m = DURATION.exec(v);
  if (!m) return undefined;
  const seconds = Number(m[1]) * DURATION_UNITS[m[2]!]!;
  return seconds > 0 || (allowZero && seconds === 0) ? seconds : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Schema errors

function patternMessage(pointer: string, pattern: string): string {
  const segs = segmentsOf(pointer);
  const last = segs[segs.length - 1];
  const parent = segs[segs.length - 2];
  if (last === 'name' && parent === 'metadata') return 'must match ^[a-z0-9][a-z0-9-]{0,62}$: lowercase letters, digits and "-", starting with a letter or digit, at most 63 characters';
  if (last === 'name') return 'must be lowercase letters, digits and "-", starting with a letter or digit, at most 63 characters';
  if (last === 'version') return 'must be a semantic version such as 1.0.0 or 2.1.0-rc.1';
  if (last === 'mount_path' || last === 'workdir') return 'must be an absolute path';
  if (last === 'volume_id') return 'must be a volume UUID';
  return `must match ${pattern}`;
}

// ---------------------------------------------------------------------------------------------------------------
// The raw document after the schema passed (shapes are known, optional parts may be absent)

type Raw = WorkflowManifestFile;
type RawState = StateFile;
type RawContainer = ContainerFile;
type RawStorage = StorageVolumeFile;

const FACTOR_SUM_TOLERANCE = 1e-9;

class Checker {
  readonly errors: ManifestError[] = [];

  err(field: string, message: string): void {
    this.errors.push({ field, message });
  }

  duration(v: string | number | undefined, field: string, dflt: number | undefined, allowZero = false): number | undefined {
    if (v === undefined) return dflt;
    const s = parseWorkflowDuration(v, allowZero);
    if (s === undefined) {
      this.err(field, `must be a duration such as 300s, 5m or 1h (got ${JSON.stringify(v)})`);
      return dflt;
    }
    return s;
  }

  objectSchema(schema: Record<string, unknown> | undefined, field: string): void {
    if (schema === undefined) return;
    if (schema.type !== 'object') this.err(`${field}.type`, 'must be "object"');
    try {
      tenantAjv({ strict: false }).compile(schema);
    } catch (e) {
      this.err(field, `is not a valid JSON Schema: ${(e as Error).message}`);
    }
  }
}

function storageSpec(c: Checker, v: RawStorage, field: string, shared: boolean): StorageVolumeSpec {
  const cls = v.storage_class ?? WORKFLOW_DEFAULTS.storage_class;
  if (v.ttl_hours !== undefined && cls !== 'ephemeral') c.err(`${field}.ttl_hours`, 'applies to ephemeral volumes only');
  if (v.volume_id !== undefined && cls !== 'persistent') c.err(`${field}.volume_id`, 'applies to persistent volumes only');
  if (v.volume_id !== undefined && !shared) c.err(`${field}.volume_id`, 'applies to shared volumes only');
  if (shared && v.size_limit_mb !== undefined && cls !== 'ephemeral') c.err(`${field}.size_limit_mb`, 'applies to ephemeral shared volumes only');
  return {
    storage_class: cls,
    ...(v.ttl_hours !== undefined ? { ttl_hours: v.ttl_hours } : {}),
    ...(v.size_limit_mb !== undefined ? { size_limit_mb: v.size_limit_mb } : {}),
    ...(v.volume_id !== undefined ? { volume_id: v.volume_id.toLowerCase() } : {}),
  };
}

function container(c: Checker, s: RawContainer, field: string, volumeNames: ReadonlySet<string>): ContainerStep {
  const volumes: ContainerVolume[] = [];
  const mounts = new Set<string>();
  (s.volumes ?? []).forEach((v, i) => {
    if (!volumeNames.has(v.name)) {
      const declared = [...volumeNames];
      c.err(
        `${field}.volumes[${i}].name`,
        `"${v.name}" is not a declared workflow volume (${declared.length > 0 ? `declared: ${declared.join(', ')}` : 'spec.storage declares none'}; "workspace" needs spec.storage.workspace)`,
      );
    }
    if (mounts.has(v.mount_path)) c.err(`${field}.volumes[${i}].mount_path`, `duplicate mount path "${v.mount_path}"`);
    mounts.add(v.mount_path);
    volumes.push({ name: v.name, mount_path: v.mount_path, read_only: v.read_only ?? false });
  });
  const res = s.resources ?? {};
  let memory: number | undefined;
  if (res.memory !== undefined) {
    memory = parseMemory(res.memory);
    if (memory === undefined) c.err(`${field}.resources.memory`, `must be a size such as 512Mi or 2Gi (got ${JSON.stringify(res.memory)})`);
  }
  const timeout = c.duration(res.timeout, `${field}.resources.timeout`, WORKFLOW_DEFAULTS.container_timeout_seconds)!;
  return {
    ...(s.name !== undefined ? { name: s.name } : {}),
    image: s.image,
    image_pull_policy: s.image_pull_policy ?? WORKFLOW_DEFAULTS.image_pull_policy,
    command: s.command,
    shell: s.shell ?? false,
    env: s.env ?? {},
    workdir: s.workdir ?? WORKFLOW_DEFAULTS.workdir,
    volumes,
    resources: {
      ...(res.cpu !== undefined ? { cpu: res.cpu } : {}),
      ...(memory !== undefined ? { memory_bytes: memory } : {}),
      timeout_seconds: timeout,
    },
    ...(s.registry_credentials !== undefined ? { registry_credentials: s.registry_credentials } : {}),
  };
}

function transitions(c: Checker, st: RawState, field: string, stateNames: ReadonlySet<string>): Transition[] {
  return st.transitions.map((t, i) => {
    const f = `${field}.transitions[${i}]`;
    const condition: ConditionType = t.condition ?? 'always';
    if (!stateNames.has(t.target)) c.err(`${f}.target`, unknownTargetMessage(t.target));
    const rule = CONDITION_FIELDS[condition];
    for (const k of rule.required) {
      if (t[k] === undefined) c.err(`${f}.${k}`, `is required for condition ${condition}`);
    }
    for (const k of CONDITION_PARAMS) {
      if (t[k] !== undefined && !rule.required.includes(k) && !rule.optional.includes(k)) {
        c.err(`${f}.${k}`, `does not apply to condition ${condition}`);
      }
    }
    const kinds = CONDITION_KINDS[condition];
    if (kinds && !kinds.includes(st.kind)) c.err(`${f}.condition`, `${condition} applies to ${kinds.join(', ')} states, not ${st.kind}`);
    if (condition === 'score_between' && t.min !== undefined && t.max !== undefined && t.min > t.max) {
      c.err(`${f}.min`, `must not exceed max (${t.min} > ${t.max})`);
    }
    if (condition === 'exit_code' && t.value !== undefined && !/^-?\d+$/.test(String(t.value))) {
      c.err(`${f}.value`, `must be an integer exit code for condition exit_code (got ${JSON.stringify(t.value)})`);
    }
    const out: Transition = { condition, target: t.target };
    if (t.feedback !== undefined) out.feedback = t.feedback;
    if (t.threshold !== undefined) out.threshold = t.threshold;
    if (t.agreement !== undefined) out.agreement = t.agreement;
    if (t.value !== undefined) out.value = String(t.value);
    if (t.expression !== undefined) out.expression = t.expression;
    if (t.min !== undefined) out.min = t.min;
    if (t.max !== undefined) out.max = t.max;
    return out;
  });
}

function consensusSpec(c: Checker, st: Extract<RawState, { kind: 'ParallelAgents' }>, field: string): ConsensusSpec {
  const cs = st.consensus;
  const f = `${field}.consensus`;
  const agents = st.agents;
  if (cs.agreement !== undefined && cs.min_agreement_confidence !== undefined && cs.agreement !== cs.min_agreement_confidence) {
    c.err(`${f}.agreement`, 'is an alias of min_agreement_confidence; give one of them, not two different values');
  }
  const minAgreement = cs.min_agreement_confidence ?? cs.agreement;
  if (cs.strategy === 'best_of_n') {
    if (cs.n === undefined) c.err(`${f}.n`, 'is required for strategy best_of_n');
    else if (cs.n > agents.length) c.err(`${f}.n`, `must not exceed the number of agents (${agents.length})`);
  } else if (cs.n !== undefined) {
    c.err(`${f}.n`, `applies to strategy best_of_n only, not ${cs.strategy}`);
  }
  const minJudges = cs.min_judges_required ?? WORKFLOW_DEFAULTS.min_judges_required;
  if (minJudges > agents.length) c.err(`${f}.min_judges_required`, `must not exceed the number of agents (${agents.length})`);
  const agreementFactor = cs.confidence_weighting?.agreement_factor ?? WORKFLOW_DEFAULTS.agreement_factor;
  const selfFactor = cs.confidence_weighting?.self_confidence_factor ?? WORKFLOW_DEFAULTS.self_confidence_factor;
  if (Math.abs(agreementFactor + selfFactor - 1) > FACTOR_SUM_TOLERANCE) {
    c.err(
      `${f}.confidence_weighting`,
      `agreement_factor and self_confidence_factor must sum to 1.0 (got ${agreementFactor} + ${selfFactor} = ${agreementFactor + selfFactor}; the defaults are 0.7 and 0.3)`,
    );
  }
  return {
    strategy: cs.strategy,
    threshold: cs.threshold ?? WORKFLOW_DEFAULTS.consensus_threshold,
    ...(minAgreement !== undefined ? { min_agreement_confidence: minAgreement } : {}),
    ...(cs.n !== undefined ? { n: cs.n } : {}),
    min_judges_required: minJudges,
    confidence_weighting: { agreement_factor: agreementFactor, self_confidence_factor: selfFactor },
  };
}

function state(c: Checker, name: string, st: RawState, stateNames: ReadonlySet<string>, volumeNames: ReadonlySet<string>): WorkflowState {
  const field = `spec.states.${name}`;
  if (RESERVED_STATE_NAMES.includes(name)) {
    c.err(field, `"${name}" is a reserved template name (${RESERVED_STATE_NAMES.join(', ')}); choose another state name`);
  }
  const visits = st.max_state_visits ?? WORKFLOW_DEFAULTS.max_state_visits;
  if (visits > WORKFLOW_DEFAULTS.max_state_visits_ceiling) {
    c.err(`${field}.max_state_visits`, `must be at most ${WORKFLOW_DEFAULTS.max_state_visits_ceiling} (got ${visits})`);
  }
  // Human states without a timeout wait indefinitely; every other kind defaults to 300s.
  const timeout = c.duration(st.timeout, `${field}.timeout`, st.kind === 'Human' ? undefined : WORKFLOW_DEFAULTS.state_timeout_seconds);
  const base = {
    max_state_visits: visits,
    ...(timeout !== undefined ? { timeout_seconds: timeout } : {}),
    transitions: transitions(c, st, field, stateNames),
  };
  const stateVolumes = (st.volumes ?? []) as StateVolume[];
  switch (st.kind) {
    case 'Agent':
      return {
        kind: 'Agent',
        ...base,
        volumes: stateVolumes,
        agent: st.agent,
        ...(st.intent !== undefined ? { intent: st.intent } : {}),
        ...(st.input !== undefined ? { input: st.input } : {}),
        isolation: st.isolation ?? WORKFLOW_DEFAULTS.isolation,
      };
    case 'System':
      return {
        kind: 'System',
        ...base,
        volumes: stateVolumes,
        command: st.command,
        env: st.env ?? {},
        workdir: st.workdir ?? WORKFLOW_DEFAULTS.workdir,
      };
    case 'Human':
      return {
        kind: 'Human',
        ...base,
        volumes: stateVolumes,
        prompt: st.prompt,
        ...(st.default_response !== undefined ? { default_response: st.default_response } : {}),
      };
    case 'ParallelAgents': {
      const agents: JudgeAgentRef[] = st.agents.map((a) => ({
        agent: a.agent,
        ...(a.input !== undefined ? { input: a.input } : {}),
        weight: a.weight ?? WORKFLOW_DEFAULTS.judge_weight,
        timeout_seconds: a.timeout_seconds ?? WORKFLOW_DEFAULTS.judge_timeout_seconds,
        poll_interval_ms: a.poll_interval_ms ?? WORKFLOW_DEFAULTS.judge_poll_interval_ms,
      }));
      return { kind: 'ParallelAgents', ...base, volumes: stateVolumes, agents, consensus: consensusSpec(c, st, field) };
    }
    case 'ContainerRun': {
      const retry = st.retry ?? {};
      const backoff = c.duration(retry.backoff, `${field}.retry.backoff`, WORKFLOW_DEFAULTS.retry_backoff_seconds, true)!;
      return {
        kind: 'ContainerRun',
        ...base,
        ...container(c, st, field, volumeNames),
        retry: { max_attempts: retry.max_attempts ?? WORKFLOW_DEFAULTS.retry_max_attempts, backoff_seconds: backoff },
      };
    }
    case 'ParallelContainerRun': {
      const seen = new Map<string, number>();
      const steps = st.steps.map((s, i) => {
        const first = seen.get(s.name);
        if (first !== undefined) c.err(`${field}.steps[${i}].name`, `duplicate step name "${s.name}" (also steps[${first}])`);
        else seen.set(s.name, i);
        return { ...container(c, s, `${field}.steps[${i}]`, volumeNames), name: s.name };
      });
      return { kind: 'ParallelContainerRun', ...base, volumes: stateVolumes, steps, completion: st.completion ?? WORKFLOW_DEFAULTS.completion };
    }
    case 'Subworkflow': {
      const mode = st.mode ?? WORKFLOW_DEFAULTS.subworkflow_mode;
      // Seed 002: result_key is for blocking mode only and "ignored otherwise" — accepted, then dropped.
      const resultKey = mode === 'blocking' ? st.result_key : undefined;
      if (resultKey !== undefined && stateNames.has(resultKey)) {
        c.err(`${field}.result_key`, `"${resultKey}" is the name of a state; its blackboard entry would be overwritten`);
      }
      return {
        kind: 'Subworkflow',
        ...base,
        volumes: stateVolumes,
        workflow_id: st.workflow_id,
        mode,
        ...(resultKey !== undefined ? { result_key: resultKey } : {}),
        ...(st.input !== undefined ? { input: st.input } : {}),
      };
    }
  }
}

function semantic(raw: Raw, c: Checker): WorkflowManifest | undefined {
  const spec = raw.spec;
  const md = raw.metadata;
  if (RESERVED_WORKFLOW_NAMES.includes(md.name)) {
    c.err('metadata.name', `"${md.name}" is reserved: /v1/workflows/${md.name} is a route of its own (reserved: ${RESERVED_WORKFLOW_NAMES.join(', ')})`);
  }
  c.objectSchema(md.input_schema, 'metadata.input_schema');
  c.objectSchema(md.output_schema, 'metadata.output_schema');

  const stateNames = new Set(Object.keys(spec.states));
  if (!stateNames.has(spec.initial_state)) {
    c.err('spec.initial_state', unknownInitialStateMessage(spec.initial_state, stateNames));
  }
  const maxTransitions = spec.max_total_transitions ?? WORKFLOW_DEFAULTS.max_total_transitions;
  if (maxTransitions > WORKFLOW_DEFAULTS.max_total_transitions_ceiling) {
    c.err('spec.max_total_transitions', `must be at most ${WORKFLOW_DEFAULTS.max_total_transitions_ceiling} (got ${maxTransitions})`);
  }

  // Workflow-level volumes: `workspace` when declared, and each shared volume by its (unique) name.
  let storage: WorkflowManifest['spec']['storage'];
  const volumeNames = new Set<string>();
  if (spec.storage !== undefined) {
    const workspace = spec.storage.workspace !== undefined ? storageSpec(c, spec.storage.workspace, 'spec.storage.workspace', false) : undefined;
    if (workspace) volumeNames.add('workspace');
    const shared = (spec.storage.shared_volumes ?? []).map((v, i) => {
      const f = `spec.storage.shared_volumes[${i}]`;
      if (v.name === 'workspace') c.err(`${f}.name`, '"workspace" is the name of the default workspace; choose another name');
      else if (volumeNames.has(v.name)) c.err(`${f}.name`, `duplicate shared volume name "${v.name}"`);
      volumeNames.add(v.name);
      return { name: v.name, ...storageSpec(c, v, f, true) };
    });
    storage = { ...(workspace ? { workspace } : {}), shared_volumes: shared };
  }

  const states: Record<string, WorkflowState> = {};
  for (const [name, st] of Object.entries(spec.states)) states[name] = state(c, name, st, stateNames, volumeNames);

  if (c.errors.length > 0) return undefined;
  return {
    apiVersion: raw.apiVersion,
    kind: 'Workflow',
    metadata: md,
    spec: {
      initial_state: spec.initial_state,
      max_total_transitions: maxTransitions,
      context: spec.context ?? {},
      ...(storage ? { storage } : {}),
      states,
    },
  };
}

/**
 * Parses, validates and defaults a workflow manifest given as YAML text or as an already-parsed object (a JSON
 * body). Never throws for bad input; every error names its field.
 */
export function parseWorkflowManifest(input: string | unknown): ParseResult {
  let value: unknown = input;
  if (typeof input === 'string') {
    if (input.trim() === '') return { ok: false, errors: [{ field: '(root)', message: 'the manifest is empty' }] };
    const y = parseWorkflowYaml(input);
    if (!y.ok) return y;
    value = y.value;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ field: '(root)', message: 'must be a mapping with apiVersion, kind, metadata and spec' }] };
  }
  const validate = validator();
  if (!validate(value)) {
    // Every problem at once: the references between states are checked too, although the semantic pass cannot run.
    const errors = schemaErrors(validate.errors ?? [], patternMessage);
    const seen = new Set(errors.map((e) => e.field));
    return { ok: false, errors: [...errors, ...referenceErrors(value).filter((e) => !seen.has(e.field))] };
  }
  const c = new Checker();
  const manifest = semantic(structuredClone(value) as Raw, c);
  return manifest ? { ok: true, manifest } : { ok: false, errors: c.errors };
}
