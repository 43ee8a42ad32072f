// The smallest workflow with an Agent state, shared by the cluster tests that route an Agent state to a worker:
// a one-shot agent `answerer` (process isolation, model `default`) and a workflow `asks` whose state `ask` runs it on
// `{{input.topic}}` and then `record` marks the blackboard `{"asked": true}`, so a completed run shows both steps ran.

/** The Agent manifest (`answerer`) the workflow's `ask` state names. */
export const ANSWERER_AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: answerer, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 60, iteration_timeout: 60, validation: [] }
  security: { resources: { timeout: 120 } }
`;

/** The Workflow manifest (`asks`): Agent state `ask`, then System state `record`. */
export const ASKS_WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: asks, version: 1.0.0 }
spec:
  initial_state: ask
  states:
    ask:
      kind: Agent
      agent: answerer
      input: 'Say something about {{input.topic}}'
      transitions: [ { target: record } ]
    record:
      kind: System
      command: 'update_blackboard {"asked": true}'
      transitions: []
`;
