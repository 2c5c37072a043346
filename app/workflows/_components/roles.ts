import { atLeast, type Role } from '@/server/common/roles';

/** Creating, duplicating and switching workflows is for marketers and up (the server checks too). */
export function mayWriteWorkflows(role: Role | undefined | null): boolean {
  return role != null && atLeast(role, 'MARKETER');
}
