import { Role } from '../generated/prisma/enums';

// The four roles (docs/api.md, "Authentication and roles"), weakest first: VIEWER reads;
// MARKETER also enrolls, tracks events and manages contacts and workflows; OPERATOR also
// repairs; OWNER also manages members and keys. The type is Prisma's enum, so a role the
// schema does not know cannot be spelled. Imports nothing server-only: the console's
// client components decide what to offer with the same rule the API enforces.

export { Role };

/** Every role, weakest first (the order of ROLE_RANK). */
export const ROLES = [Role.VIEWER, Role.MARKETER, Role.OPERATOR, Role.OWNER] as const;

const ROLE_RANK: Record<Role, number> = { VIEWER: 0, MARKETER: 1, OPERATOR: 2, OWNER: 3 };

/** Whether `role` may do what needs `minimum` (each role may do all its weaker roles may). */
export function atLeast(role: Role, minimum: Role): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[minimum];
}
