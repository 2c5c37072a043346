import { Drop, Liquid, LiquidError, type Template } from 'liquidjs';

// Email templates (a SEND_EMAIL step's subject and body): Liquid, through liquidjs, set up
// once here for everyone who renders or checks one: the worker's step (server/engine/steps.ts),
// the workflow definition's validation (workflow-definition.ts), the console's preview and
// test send (templates.preview, templates.testSend), and the browser.
//
// The scope is `contact` and `context`. `contact.email`, `contact.subscribed`, `contact.id`
// and `contact.data.<key>` as before, plus the marketer's shortcut: `contact.<key>` is
// `contact.data.<key>` for any other key (`{{contact.firstName}}`). A field that does not
// exist renders as empty text; an object or a list renders as its JSON, as the
// placeholders did before Liquid. An unknown filter is a syntax error.
//
// Nothing a template says reaches past its scope: no `include`, `render` or `layout` (the
// tags are refused, and the engine has no file system: `templates: {}`), only a value's
// own properties (no `constructor`, no prototype), and bounded parsing and rendering.

/** A template longer than this is refused when it is parsed (a body holds at most 50,000). */
const PARSE_LIMIT_CHARS = 100_000;
/** Rendered text longer than this is an error, not an email. */
export const RENDERED_LIMIT_CHARS = 1_000_000;

/** What a rendered value becomes: empty for nothing, JSON for objects and lists. */
function outputText(value: unknown): string {
  const plain = value instanceof Drop ? value.valueOf() : value;
  if (plain === undefined || plain === null) return '';
  if (plain instanceof Drop) return '';
  return typeof plain === 'object' ? JSON.stringify(plain) : String(plain);
}

function makeEngine(): Liquid {
  const engine = new Liquid({
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    relativeReference: false,
    dynamicPartials: false,
    templates: {},
    outputEscape: outputText,
    timezoneOffset: 0,
    locale: 'en-US',
    parseLimit: PARSE_LIMIT_CHARS,
    renderLimit: 250,
    memoryLimit: 10_000_000,
  });
  for (const tag of ['include', 'render', 'layout']) {
    // Refused when the template is parsed, as a syntax error naming the tag.
    engine.registerTag(tag, {
      parse() {
        throw new Error(`{% ${tag} %} is not available in email templates`);
      },
      render() {},
    });
  }
  return engine;
}

const engine = makeEngine();

/** Parsed templates by text, newest last: a step renders the same subject and body for every contact. */
const parsed = new Map<string, Template[]>();
const PARSED_KEPT = 200;

function parse(template: string): Template[] {
  const known = parsed.get(template);
  if (known) return known;
  const tpl = engine.parse(template);
  if (template.length <= 60_000) {
    if (parsed.size >= PARSED_KEPT) parsed.delete(parsed.keys().next().value!);
    parsed.set(template, tpl);
  }
  return tpl;
}

/** A contact as templates see it; `id` is absent where the caller has none at hand. */
export interface TemplateContact {
  id?: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

export interface TemplateScope {
  contact: Record<string, unknown> | null;
  context: Record<string, unknown>;
}

/** The contact's own fields: `contact.<key>` names `contact.data.<key>` for every other key. */
export const CONTACT_FIELDS = ['id', 'email', 'subscribed', 'data'] as const;

/** The scope a template renders in: the contact (with its data's shortcuts) and the execution's context. */
export function templateScope(input: { contact: TemplateContact | null; context?: Record<string, unknown> }): TemplateScope {
  const context = input.context ?? {};
  if (!input.contact) return { contact: null, context };
  const { id, email, subscribed, data } = input.contact;
  const contact: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    if (!(CONTACT_FIELDS as readonly string[]).includes(key)) contact[key] = value;
  }
  Object.assign(contact, { email, subscribed, data }, id === undefined ? {} : { id });
  return { contact, context };
}

/**
 * The template rendered in the scope. Throws TemplateError on a syntax error (see
 * templateIssues) and on a render past the bounds (250 ms, 10 million characters made by
 * filters and ranges, 1 million characters out); a field that does not exist renders as
 * empty text.
 */
export function renderTemplate(template: string, scope: TemplateScope): string {
  let out: string;
  try {
    out = String(engine.renderSync(parse(template), scope));
  } catch (error) {
    throw new TemplateError(issueOf(error));
  }
  if (out.length > RENDERED_LIMIT_CHARS) {
    throw new TemplateError({ message: `the rendered text is longer than ${RENDERED_LIMIT_CHARS.toLocaleString('en-US')} characters` });
  }
  return out;
}

export interface TemplateIssue {
  message: string;
  line?: number;
  column?: number;
}

/** A liquidjs error as an issue: its message without the position it appends, and the position apart. */
export function issueOf(error: unknown): TemplateIssue {
  if (error instanceof LiquidError) {
    const message = error.message.replace(/(, file:.*?)?, line:\d+, col:\d+$/, '');
    const position = error.token?.getPosition?.();
    return position ? { message, line: position[0], column: position[1] } : { message };
  }
  return { message: error instanceof Error ? error.message : String(error) };
}

/** Why the template cannot be parsed: none, or its syntax error with line and column (1-based). */
export function templateIssues(template: string): TemplateIssue[] {
  try {
    parse(template);
    return [];
  } catch (error) {
    return [issueOf(error)];
  }
}

/** A template that cannot be parsed or rendered: its issue, and the issue as a sentence. */
export class TemplateError extends Error {
  override name = 'TemplateError';
  constructor(readonly issue: TemplateIssue) {
    super(describeTemplateIssue(issue));
  }
}

/** "tag {% if x %} not closed at line 3, column 5". */
export function describeTemplateIssue(issue: TemplateIssue): string {
  return issue.line === undefined ? issue.message : `${issue.message} at line ${issue.line}, column ${issue.column}`;
}
