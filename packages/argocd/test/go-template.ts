/**
 * Renders the subset of Go text/template that ApplicationSet templates in
 * this repository use, with Argo CD's `missingkey=error` semantics: a
 * reference to a parameter the plugin did not return throws. Any construct
 * outside the subset throws too, so a test can never pass by ignoring it.
 *
 * Subset: `{{.a}}`, `{{ .a.b }}`, `{{if .a}}`, `{{if ne .a nil}}`,
 * `{{if eq .a nil}}`, `{{else}}`, `{{end}}`, with `{{-`/`-}}` trimming; and
 * fasttemplate's `{{a}}` when `goTemplate` is false.
 */
export function renderTemplate(text: string, params: Record<string, unknown>, goTemplate = true): string {
  if (!goTemplate) {
    return text.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_m, key: string) => {
      const value = lookup(params, key.split('.'), key);
      return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
    });
  }
  const tokens = tokenize(text);
  let index = 0;
  const renderUntil = (stops: readonly string[]): { out: string; stop: string | undefined } => {
    let out = '';
    while (index < tokens.length) {
      const token = tokens[index++]!;
      if (token.kind === 'text') {
        out += token.value;
        continue;
      }
      const action = token.value;
      if (stops.includes(action)) return { out, stop: action };
      const ifMatch = /^if\s+(.+)$/.exec(action);
      if (ifMatch) {
        const condition = evaluateCondition(ifMatch[1]!, params);
        const then = renderUntil(['else', 'end']);
        let otherwise = '';
        if (then.stop === 'else') otherwise = renderUntil(['end']).out;
        else if (then.stop !== 'end') throw new Error('template: unterminated if');
        out += condition ? then.out : otherwise;
        continue;
      }
      if (/^\.[A-Za-z0-9_.]+$/.test(action)) {
        const value = lookup(params, action.slice(1).split('.'), action);
        out += value === null ? '<no value>' : typeof value === 'object' ? JSON.stringify(value) : String(value);
        continue;
      }
      throw new Error(`template: unsupported action {{${action}}}`);
    }
    return { out, stop: undefined };
  };
  const { out, stop } = renderUntil([]);
  if (stop !== undefined) throw new Error(`template: unexpected {{${stop}}}`);
  return out;
}

type Token = { kind: 'text' | 'action'; value: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const re = /\{\{(-?)\s*(.*?)\s*(-?)\}\}/gs;
  let last = 0;
  let trimNext = false;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let before = text.slice(last, m.index);
    if (trimNext) before = before.replace(/^\s+/, '');
    if (m[1] === '-') before = before.replace(/\s+$/, '');
    tokens.push({ kind: 'text', value: before }, { kind: 'action', value: m[2]! });
    trimNext = m[3] === '-';
    last = m.index + m[0].length;
  }
  let rest = text.slice(last);
  if (trimNext) rest = rest.replace(/^\s+/, '');
  tokens.push({ kind: 'text', value: rest });
  return tokens;
}

function evaluateCondition(expression: string, params: Record<string, unknown>): boolean {
  const compare = /^(eq|ne)\s+(\.[A-Za-z0-9_.]+)\s+nil$/.exec(expression);
  if (compare) {
    const isNil = lookup(params, compare[2]!.slice(1).split('.'), compare[2]!) === null;
    return compare[1] === 'eq' ? isNil : !isNil;
  }
  if (/^\.[A-Za-z0-9_.]+$/.test(expression)) {
    const value = lookup(params, expression.slice(1).split('.'), expression);
    return value !== null && value !== false && value !== 0 && value !== '';
  }
  throw new Error(`template: unsupported condition ${expression}`);
}

function lookup(params: Record<string, unknown>, path: readonly string[], what: string): unknown {
  let value: unknown = params;
  for (const part of path) {
    if (typeof value !== 'object' || value === null || !(part in value)) {
      throw new Error(`template: map has no entry for key "${part}" (in ${what})`);
    }
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
