'use client';

import { useSyncExternalStore } from 'react';

const never = () => () => {};

/**
 * False in the server-rendered HTML and during hydration, true once React runs the page in
 * the browser. A control whose click does something only in the browser (a switch, a
 * mutation) is disabled until then, so a click before hydration is refused visibly instead
 * of being silently lost.
 */
export function useHydrated(): boolean {
  return useSyncExternalStore(
    never,
    () => true,
    () => false,
  );
}
