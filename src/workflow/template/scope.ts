// The template scope of seed 002: the one object every Handlebars template of a workflow (input, command, env,
// prompt, expression, feedback, output_template) is rendered against. The engine rebuilds it after each state from
// the blackboard, so a template always sees the live blackboard.
//
// Every blackboard key is also copied to the top level, so `{{build.output.stdout}}` reads
// blackboard.build.output.stdout. The reserved names (intent, input, workflow, blackboard, state, human, execution)
// win over a blackboard key of the same name: a state called `input` is still reachable as `{{blackboard.input}}`.

export interface TemplateScope {
  [key: string]: unknown;
  intent?: string;
  input: unknown;
  workflow: {
    context: Record<string, unknown>;
    storage: { workspace?: string; shared_volumes: Record<string, string> };
  };
  blackboard: Record<string, unknown>;
  state: { feedback?: string };
  human: { feedback?: string };
  execution: { id: string };
}

export interface ScopeSource {
  executionId: string;
  intent?: string;
  input: unknown;
  context: Record<string, unknown>;
  storage: { workspace?: string; shared: Record<string, string> };
  blackboard: Record<string, unknown>;
  /** The rendered `feedback` of the incoming transition. */
  feedback?: string;
  /** The response of the last answered Human state. */
  humanFeedback?: string;
}

/** The top-level names a blackboard key cannot shadow. */
export const RESERVED_SCOPE_KEYS: readonly string[] = ['intent', 'input', 'workflow', 'blackboard', 'state', 'human', 'execution'];

export function buildScope(a: ScopeSource): TemplateScope {
  const top: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(a.blackboard)) {
    if (!RESERVED_SCOPE_KEYS.includes(key)) top[key] = value;
  }
  const workspace = a.storage.workspace;
  const scope: TemplateScope = {
    ...top,
    input: a.input,
    workflow: {
      context: a.context,
      storage: { ...(workspace !== undefined ? { workspace } : {}), shared_volumes: { ...a.storage.shared } },
    },
    blackboard: a.blackboard,
    state: a.feedback !== undefined ? { feedback: a.feedback } : {},
    human: a.humanFeedback !== undefined ? { feedback: a.humanFeedback } : {},
    execution: { id: a.executionId },
  };
  if (a.intent !== undefined) scope.intent = a.intent;
  return scope;
}
