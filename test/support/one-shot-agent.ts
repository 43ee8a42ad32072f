// The smallest agent the execution tests start: one model turn through the default alias, answering in one word,
// with one tool offered. Tests that need more write their own manifest.
export function oneShotAgent(name: string): string {
  return `apiVersion: orch.dev/v1
kind: Agent
metadata: { name: ${name}, version: 1.0.0 }
spec:
  runtime: { language: node, version: "20", model: default }
  task: { instruction: Answer in one word. }
  execution: { mode: one-shot }
  tools: [ fs.read ]
`;
}
