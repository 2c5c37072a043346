// Idempotency-Key on every POST under /api/v1 (docs/api.md, "Idempotency").

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const IDEMPOTENCY_KEY_MAX = 200;
