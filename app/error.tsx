'use client';

import { useEffect } from 'react';

// A page whose server rendering failed (its data could not be read): say so inside the
// console's frame, offer to try again, and try again by itself every RETRY_MS, since the
// usual cause is a database that is briefly unreachable (the API's Retry-After is 5 s).

const RETRY_MS = 5_000;

export default function PageError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  useEffect(() => {
    const timer = setInterval(reset, RETRY_MS);
    return () => clearInterval(timer);
  }, [reset]);
  return (
    <div className="mx-auto max-w-[1600px] px-6 py-5">
      <div role="alert" data-testid="page-error" className="rounded-md border border-red-200 bg-red-50 px-4 py-3 text-red-900">
        <p className="font-medium">This page could not be loaded.</p>
        <p className="mt-1">
          Its data could not be read, most often because the database is briefly unreachable. It tries again every{' '}
          {RETRY_MS / 1000} s.
        </p>
        <button type="button" onClick={reset} className="mt-2 rounded border border-red-300 bg-white px-2 py-0.5 font-medium hover:bg-red-100">
          Try again now
        </button>
        {error.digest && <p className="mt-2 font-mono text-xs text-red-700">Reference: {error.digest}</p>}
      </div>
    </div>
  );
}
