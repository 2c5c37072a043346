import type { RouterInputs, RouterOutputs } from '@/app/_trpc/types';

// A repair as the console's repair components pass it around: what it aims at, its
// preview and what applying it answered. Their own module, so the dialog and the preview
// body it renders need not import each other.

export type RepairTarget = Pick<RouterInputs['repair']['preview'], 'action' | 'executionId' | 'messageId' | 'eventId'>;
export type Preview = RouterOutputs['repair']['preview'];
export type RepairApplied = RouterOutputs['repair']['applyOne'];
