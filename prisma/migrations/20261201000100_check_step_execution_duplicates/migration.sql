-- Guard for the next migration (invariant I2: one step-execution row per execution and
-- step). Building the unique index over duplicates would fail half-way and leave an
-- INVALID index, so refuse first and name the offending rows. Nothing is deleted or
-- rewritten: an operator decides which row is the truth.
DO $$
DECLARE
  offenders TEXT;
  groups INTEGER;
BEGIN
  SELECT count(*), string_agg(format('execution %s step %s: rows %s', "executionId", "stepId", ids), '; ')
    INTO groups, offenders
    FROM (
      SELECT "executionId", "stepId", string_agg("id"::text, ', ' ORDER BY "startedAt", "id") AS ids
        FROM "StepExecution"
       GROUP BY "executionId", "stepId"
      HAVING count(*) > 1
       LIMIT 50
    ) d;
  IF groups > 0 THEN
    RAISE EXCEPTION 'I2 violated: % (execution, step) pair(s) have more than one StepExecution row; resolve them before migrating: %', groups, offenders
      USING ERRCODE = 'unique_violation';
  END IF;
END
$$;
