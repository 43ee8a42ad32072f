// The workflow input a stimulus starts its workflow with. With a route's `input_template` it is the template
// rendered (Handlebars, the workflow renderer of src/workflow/template) over {content, raw, headers, source, stimulus_id}
// — `content` is the parsed value when the content is JSON, else the text; `raw` is always the text — and the result is
// parsed as JSON when it is JSON, else passed as the string. Without a template it is
// {source, content, headers, data?} where `data` is the parsed content when it is JSON.
import { renderTemplate } from '../workflow/template/render.ts';
import type { TemplateScope } from '../workflow/template/scope.ts';

export interface StimulusView {
  id: string;
  source: string;
  content: string;
  headers: Record<string, string>;
}

/** The content's JSON value, or undefined when it is not JSON. */
export function parsedContent(text: string): unknown {
  const t = text.trim();
  if (t === '') return undefined;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return undefined;
  }
}

export function workflowInputFor(s: StimulusView, template: string | undefined): unknown {
  const data = parsedContent(s.content);
  if (template === undefined) return { source: s.source, content: s.content, headers: s.headers, ...(data !== undefined ? { data } : {}) };
  const content = data ?? s.content;
  // The renderer takes a workflow scope; the stimulus fields are laid over an empty one.
  const scope: TemplateScope = {
    input: content,
    workflow: { context: {}, storage: { shared_volumes: {} } },
    blackboard: {},
    state: {},
    human: {},
    execution: { id: s.id },
    content,
    raw: s.content,
    headers: s.headers,
    source: s.source,
    stimulus_id: s.id,
  };
  const rendered = renderTemplate(template, scope);
  const parsed = parsedContent(rendered);
  return parsed ?? rendered;
}
