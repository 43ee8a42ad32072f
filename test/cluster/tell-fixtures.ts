// Manifests shared by the TellActor tests (test/cluster/tell*.test.ts) and their bench (bench/tell.ts), so the
// bench measures exactly what the tests check.

/** A workflow that waits on a Human state again and again: each approval through another controller is one sample. */
export const TELL_LOOP_WORKFLOW = `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: tell-loop, version: 1.0.0 }
spec:
  initial_state: gate
  states:
    gate:
      kind: Human
      prompt: 'Again?'
      max_state_visits: 20
      transitions:
        - { condition: input_equals_yes, target: gate }
        - { condition: input_equals_no, target: done }
    done:
      kind: Human
      prompt: 'Never answered'
      transitions: []
`;

/** A one-shot agent whose model call the test holds, so the execution is running on its worker when it is cancelled. */
export const TELL_CANCEL_AGENT = `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: tell-cancel, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", isolation: process, model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot, max_iterations: 1, llm_timeout_seconds: 120, iteration_timeout: 120, validation: [] }
  security: { resources: { timeout: 300 } }
`;
