import type { ReactNode } from 'react';

// The console's status vocabulary, one colour per meaning: sky = moving, amber = waiting
// or stuck, emerald = done well, red = failed, zinc = ended otherwise.

const TONES = {
  sky: 'bg-sky-50 text-sky-800 ring-sky-200',
  amber: 'bg-amber-50 text-amber-800 ring-amber-200',
  emerald: 'bg-emerald-50 text-emerald-800 ring-emerald-200',
  red: 'bg-red-50 text-red-800 ring-red-200',
  zinc: 'bg-zinc-100 text-zinc-700 ring-zinc-200',
  violet: 'bg-violet-50 text-violet-800 ring-violet-200',
} as const;
export type Tone = keyof typeof TONES;

export function Badge({ tone, children, title }: { tone: Tone; children: ReactNode; title?: string }) {
  return (
    <span title={title} className={`inline-flex items-center rounded px-1.5 py-px text-[11px] font-medium whitespace-nowrap ring-1 ring-inset ${TONES[tone]}`}>
      {children}
    </span>
  );
}

const STATUS_TONES: Record<string, Tone> = {
  RUNNING: 'sky',
  WAITING: 'amber',
  COMPLETED: 'emerald',
  EXITED: 'zinc',
  FAILED: 'red',
  CANCELLED: 'zinc',
  // Step statuses
  PENDING: 'zinc',
  SKIPPED: 'zinc',
  // Message statuses
  QUEUED: 'zinc',
  SENDING: 'sky',
  SENT: 'emerald',
  ABANDONED: 'zinc',
  // Audit outcomes
  APPLIED: 'emerald',
  LOST: 'amber',
  REJECTED: 'zinc',
  // Webhook deliveries (PENDING as above)
  DELIVERED: 'emerald',
  DEAD: 'red',
  // Dispatch states
  processed: 'emerald',
  pending: 'zinc',
  retrying: 'amber',
  dead: 'red',
};

/** An execution's, step's, message's, event's or audit entry's status. */
export function StatusBadge({ status, title }: { status: string; title?: string }) {
  return (
    <Badge tone={STATUS_TONES[status] ?? 'zinc'} title={title}>
      {status}
    </Badge>
  );
}

export function StuckBadge({ reason, title }: { reason: string; title?: string }) {
  return (
    <span title={title} className="inline-flex items-center rounded bg-amber-500 px-1.5 py-px font-mono text-[10.5px] font-semibold whitespace-nowrap text-white">
      {reason}
    </span>
  );
}
