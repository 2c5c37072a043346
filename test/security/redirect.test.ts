import { describe, expect, it } from 'vitest';
import { destinationAfterSignIn } from '../../app/sign-in/destination';

// The sign-in page's ?next= must never send a signed-in person to
// another origin. Each case is resolved as a browser resolves a relative URL against
// this site; whatever the text, the answer is a path of this site or the overview.

const HERE = 'https://waypost.example';

/** Where a browser actually goes when told to go to `path` from this site. */
const landsOn = (path: string) => new URL(path, HERE).origin;

describe('destinationAfterSignIn', () => {
  it.each([
    '/\t/evil.example', // the reported case: tab is dropped, leaving //evil.example
    '/\n/evil.example',
    '/\r\n/evil.example',
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    'https://evil.example',
    'javascript:alert(1)',
    '/%09/evil.example/../x',
    ' /evil',
    '/\u0000/evil.example',
    'evil.example',
  ])('keeps %j on this origin', (next) => {
    const to = destinationAfterSignIn(next);
    expect(to.startsWith('/')).toBe(true);
    expect(to.startsWith('//')).toBe(false);
    expect(landsOn(to)).toBe(HERE);
  });

  it('keeps a path of this site, with its query and fragment', () => {
    expect(destinationAfterSignIn('/executions?status=WAITING&stuck=WAIT_OVERDUE#top')).toBe('/executions?status=WAITING&stuck=WAIT_OVERDUE#top');
    expect(destinationAfterSignIn('/executions/7b6c4f1e-0000-4000-8000-000000000000')).toBe('/executions/7b6c4f1e-0000-4000-8000-000000000000');
    expect(destinationAfterSignIn(['/audit', '/evil'])).toBe('/audit');
  });

  it('does not send a person back to the sign-in page, nor anywhere when nothing is given', () => {
    expect(destinationAfterSignIn('/sign-in?next=/x')).toBe('/');
    expect(destinationAfterSignIn(undefined)).toBe('/');
    expect(destinationAfterSignIn('')).toBe('/');
  });
});
