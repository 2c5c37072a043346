import type { Role } from '@/server/common/roles';

// The Settings panels' controls: what each role may do where a role is chosen, and the
// look of their inputs and buttons.

/** What each role may do (docs/api.md, "Authentication and roles"), weakest first. */
export const ROLE_OPTIONS: readonly { role: Role; summary: string }[] = [
  { role: 'VIEWER', summary: 'reads' },
  { role: 'MARKETER', summary: '+ contacts, workflows, enrolling' },
  { role: 'OPERATOR', summary: '+ repairs' },
  { role: 'OWNER', summary: '+ members, API keys' },
];

export const inputClass =
  'rounded border border-zinc-300 bg-white px-2 py-1 text-[13px] shadow-xs focus:border-zinc-500 focus:outline-none focus:ring-2 focus:ring-zinc-200';
export const buttonClass =
  'rounded bg-zinc-900 px-3 py-1 font-medium text-white hover:bg-zinc-800 disabled:cursor-wait disabled:opacity-60';
export const quietButtonClass =
  'rounded px-2 py-0.5 text-zinc-700 ring-1 ring-zinc-300 hover:bg-zinc-50 disabled:cursor-wait disabled:opacity-60';
export const dangerButtonClass =
  'rounded px-2 py-0.5 font-medium text-red-700 ring-1 ring-red-300 hover:bg-red-50 disabled:cursor-wait disabled:opacity-60';
