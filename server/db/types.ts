import type { PrismaClient } from '../generated/prisma/client';

export type Db = PrismaClient;
/** A client usable inside `db.$transaction(async (tx) => ...)` as well as outside. */
export type DbTx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

