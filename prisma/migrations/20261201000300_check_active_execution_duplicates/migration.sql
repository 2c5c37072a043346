-- Guard for the next migration (invariant I1: at most one active execution per workflow
-- and contact). Refuse to build the partial unique index over existing duplicates and
-- name them; nothing is deleted or rewritten.
DO $$
DECLARE
  offenders TEXT;
  groups INTEGER;
BEGIN
  SELECT count(*), string_agg(format('workflow %s contact %s: executions %s', "workflowId", "contactId", ids), '; ')
    INTO groups, offenders
    FROM (
      SELECT "workflowId", "contactId", string_agg("id"::text, ', ' ORDER BY "startedAt", "id") AS ids
        FROM "WorkflowExecution"
       WHERE "status" IN ('RUNNING', 'WAITING')
       GROUP BY "workflowId", "contactId"
      HAVING count(*) > 1
       LIMIT 50
    ) d;
  IF groups > 0 THEN
    RAISE EXCEPTION 'I1 violated: % (workflow, contact) pair(s) have more than one active execution; cancel or finish the extra ones before migrating: %', groups, offenders
      USING ERRCODE = 'unique_violation';
  END IF;
END
$$;
