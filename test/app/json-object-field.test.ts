import { describe, expect, it } from 'vitest';
import { issuesUnder, parseJsonObject } from '../../app/_components/json-object-field';

// The console's JSON fields (contact data, an enrollment's context) say where a typed
// document is wrong before anything is sent: the line and column of a syntax error, what a
// non-object is, and the path of a key the server refuses.

describe('parseJsonObject', () => {
  it('accepts an object, and an empty text only where empty means {}', () => {
    expect(parseJsonObject('{"plan": "pro", "seats": 3}')).toEqual({ ok: true, value: { plan: 'pro', seats: 3 } });
    expect(parseJsonObject('  ', { emptyIsObject: true })).toEqual({ ok: true, value: {} });
    expect(parseJsonObject('  ')).toMatchObject({ ok: false, message: expect.stringContaining('empty') });
  });

  it('a syntax error names its line and column', () => {
    const trailingComma = parseJsonObject('{\n  "plan": "pro",\n}');
    expect(trailingComma).toMatchObject({ ok: false, line: 3, column: 1 });
    const unclosed = parseJsonObject('{\n  "plan": "pro"');
    expect(unclosed).toMatchObject({ ok: false, line: 2 });
    expect(unclosed.ok === false && unclosed.message).toMatch(/^not valid JSON/);
  });

  it('a valid document that is not an object says what it is', () => {
    expect(parseJsonObject('[1, 2]')).toMatchObject({ ok: false, message: 'must be a JSON object ({ … }), not an array' });
    expect(parseJsonObject('null')).toMatchObject({ ok: false, message: 'must be a JSON object ({ … }), not null' });
    expect(parseJsonObject('"text"')).toMatchObject({ ok: false, message: 'must be a JSON object ({ … }), not a string' });
  });

  it('a key the server refuses is named by its path under the field', () => {
    expect(parseJsonObject('{"a": {"__proto__": {}}}')).toMatchObject({ ok: false, message: 'data.a.__proto__: the key "__proto__" is not allowed' });
    expect(parseJsonObject('{"constructor": 1}', { field: 'context' })).toMatchObject({ ok: false, message: expect.stringMatching(/^context\.constructor:/) });
  });
});

describe('issuesUnder', () => {
  it("keeps the server's issues of one field and its children", () => {
    const issues = [
      { path: 'data.note', message: 'must be valid Unicode text without NUL characters' },
      { path: 'email', message: 'Invalid email address' },
      { path: 'database', message: 'not ours' },
    ];
    expect(issuesUnder('data', issues)).toEqual(['data.note: must be valid Unicode text without NUL characters']);
    expect(issuesUnder('email', issues)).toEqual(['email: Invalid email address']);
  });
});
