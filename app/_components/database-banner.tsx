'use client';

import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';

// While the API answers 503 (the database unreachable: server/trpc/errors.ts), every page
// says so in one banner instead of each panel showing its own error, and keeps asking:
// the page's queries are fetched again every RETRY_MS (the 503's Retry-After), and the
// first one answered takes the banner away. Nobody has to reload.

/** The API's Retry-After for a 503 (DATABASE_RETRY_AFTER_SECONDS), in milliseconds. */
const RETRY_MS = 5_000;

function unavailable(error: unknown): boolean {
  const data = (error as { data?: { code?: unknown; httpStatus?: unknown } } | null)?.data;
  return data?.code === 'SERVICE_UNAVAILABLE' || data?.httpStatus === 503;
}

export function DatabaseBanner() {
  const queryClient = useQueryClient();
  const [down, setDown] = useState(false);

  useEffect(() => {
    const queries = queryClient.getQueryCache().subscribe((event) => {
      if (event.type !== 'updated') return;
      const { action } = event;
      // 'failed' is an attempt that will be retried, 'error' the last one.
      if ((action.type === 'failed' || action.type === 'error') && unavailable(action.error)) setDown(true);
      else if (action.type === 'success') setDown(false);
    });
    const mutations = queryClient.getMutationCache().subscribe((event) => {
      if (event.type !== 'updated') return;
      if (event.action.type === 'error' && unavailable(event.action.error)) setDown(true);
      else if (event.action.type === 'success') setDown(false);
    });
    return () => {
      queries();
      mutations();
    };
  }, [queryClient]);

  useEffect(() => {
    if (!down) return;
    const timer = setInterval(() => void queryClient.refetchQueries({ type: 'active' }), RETRY_MS);
    return () => clearInterval(timer);
  }, [down, queryClient]);

  if (!down) return null;
  return (
    <div role="alert" data-testid="database-banner" className="border-b border-amber-300 bg-amber-50 px-4 py-2 text-amber-950">
      <span className="font-medium">Database unreachable, retrying.</span> What this page shows may be out of date; it
      refreshes by itself when the database is back. Changes you make now are refused.
    </div>
  );
}
