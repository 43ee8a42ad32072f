// Templates inside shell commands (a System state's `command`, a ContainerRun `shell: true` command or the script of
// an explicit `sh -c`): template values are DATA, never shell code. Every `{{…}}` expansion reaches the shell as an
// environment variable, `ORCH_VALUE_<n>`, and the command text holds only a reference to it, written for the
// quoting context the expansion stands in:
//
//   outside quotes          echo title={{input.title}}     →  echo title="${ORCH_VALUE_0}"
//   inside double quotes    echo "title={{input.title}}"   →  echo "title=${ORCH_VALUE_0}"
//   inside single quotes    echo 'title={{input.title}}'   →  echo 'title='"${ORCH_VALUE_0}"''
//
// so that each expansion is exactly one word and its text is printed as it is: the shell never re-reads the result
// of a parameter expansion as code, so `x; echo INJECTED uid=$(id -u) > FILE` in a webhook's title is echoed, not
// run. The quoting context is found on the rendered text with every expansion replaced by a NUL-delimited marker
// (NUL cannot appear in a shell command, and the values themselves are never scanned), so blocks such as
// {{#each}} are handled like plain text. A context the scanner does not model (a here-document, `$( … )` inside
// double quotes) can only cost quoting (extra quote characters, word splitting), never execution: a reference
// to a variable is all the command text ever receives.
import { toText } from './helpers.ts';

export const SHELL_VALUE_PREFIX = 'ORCH_VALUE_';
/** The Handlebars helper every mustache of a shell template is wrapped in (render.ts), and its data key. */
export const SHELL_VALUE_HELPER = '__orch_shell';
export const SHELL_VALUES_KEY = '__orch_shell_values';

const MARK = '\u0000';

export interface ShellCommand {
  /** The command text for `sh -c`, holding variable references where the template had expansions. */
  script: string;
  /** ORCH_VALUE_<n> → the text of the n-th expansion. */
  env: Record<string, string>;
}

/** The helper: records the value and leaves a marker with its index in the rendered text. */
export function shellValueHelper(value: unknown, options: { data?: Record<string, unknown> }): string {
  const values = options?.data?.[SHELL_VALUES_KEY];
  if (!Array.isArray(values)) return toText(value);
  values.push(toText(value));
  return `${MARK}${values.length - 1}${MARK}`;
}

function reference(n: number, context: 'plain' | 'double' | 'single'): string {
  const v = `\${${SHELL_VALUE_PREFIX}${n}}`;
  if (context === 'double') return v;
  if (context === 'single') return `'"${v}"'`;
  return `"${v}"`;
}

/**
 * Turns a rendered text with markers into the script and its environment. Throws when the template's own text or a
 * value holds a NUL byte (the shell cannot be given one).
 */
export function shellCommandOf(rendered: string, values: string[]): ShellCommand {
  const env: Record<string, string> = {};
  let script = '';
  let context: 'plain' | 'double' | 'single' = 'plain';
  for (let i = 0; i < rendered.length; i++) {
    const c = rendered[i]!;
    if (c === MARK) {
      const end = rendered.indexOf(MARK, i + 1);
      const n = Number(rendered.slice(i + 1, end));
      if (end < 0 || !Number.isInteger(n) || values[n] === undefined) throw new Error('the command contains a NUL byte');
      if (values[n]!.includes(MARK)) throw new Error(`the value of template expansion #${n + 1} contains a NUL byte, which a shell command cannot hold`);
      env[`${SHELL_VALUE_PREFIX}${n}`] = values[n]!;
      script += reference(n, context);
      i = end;
      continue;
    }
    script += c;
    if (context === 'single') {
      if (c === "'") context = 'plain';
    } else if (c === '\\') {
      // An escaped character keeps the context (a marker right after a backslash is still substituted above).
      const next = rendered[i + 1];
      if (next !== undefined && next !== MARK) {
        script += next;
        i++;
      }
    } else if (context === 'double') {
      if (c === '"') context = 'plain';
    } else if (c === "'") {
      context = 'single';
    } else if (c === '"') {
      context = 'double';
    }
  }
  return { script, env };
}
