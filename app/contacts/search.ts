import type { SearchSpec } from '../_components/search-params';
import type { RouterInputs, RouterOutputs } from '@/app/_trpc/types';
import { atLeast, type Role } from '@/server/common/roles';

/** The contacts page's URL keys: contacts.list's own input fields. */
export const CONTACT_SEARCH: SearchSpec = { single: ['search', 'dataKey', 'dataValue', 'cursor', 'before'], multi: [] };
export type ListContactsInput = RouterInputs['contacts']['list'];
export type ContactDetail = RouterOutputs['contacts']['get'];


/** Marketers and above manage contacts and enroll them (docs/api.md, "Authentication and roles"). */
export function mayManageContacts(role: Role): boolean {
  return atLeast(role, 'MARKETER');
}
