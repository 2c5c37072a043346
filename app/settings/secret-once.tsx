'use client';

import { useRef, useState } from 'react';
import { quietButtonClass } from './controls';

/**
 * A secret shown the one time the server answers it, with Copy (or, where the browser
 * refuses the clipboard, the secret selected for Ctrl-C), until the owner dismisses it.
 */
export function SecretOnce({ title, secret, testId, onDone, children }: { title: string; secret: string; testId: string; onDone: () => void; children?: React.ReactNode }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'select'>('no');
  const field = useRef<HTMLElement>(null);
  return (
    <div role="status" className="border-b border-emerald-200 bg-emerald-50 px-4 py-3">
      <p className="font-medium text-emerald-900">{title}</p>
      <p className="mt-0.5 text-xs font-medium text-amber-800">Copy it now: it will not be shown again, and Waypost cannot show it to anyone later.</p>
      <div className="mt-2 flex items-center gap-2">
        <code ref={field} data-testid={testId} className="min-w-0 flex-1 truncate rounded border border-emerald-200 bg-white px-2 py-1 font-mono text-[12px] select-all">
          {secret}
        </code>
        <button
          type="button"
          className={quietButtonClass}
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(secret);
              setCopied('yes');
            } catch {
              if (field.current) window.getSelection()?.selectAllChildren(field.current);
              setCopied('select');
            }
          }}
        >
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </button>
        <button type="button" className={quietButtonClass} onClick={onDone}>
          Done
        </button>
      </div>
      {copied === 'select' && <p className="mt-1.5 text-xs text-emerald-800">The browser refused the clipboard: the secret is selected, press Ctrl-C (Cmd-C) to copy it.</p>}
      {children && <div className="mt-1.5 text-xs text-emerald-800">{children}</div>}
    </div>
  );
}
