-- I2: at most one step-execution row per (execution, step). Built CONCURRENTLY so a
-- live engine keeps writing; it must be the only statement of its migration.
CREATE UNIQUE INDEX CONCURRENTLY "StepExecution_executionId_stepId_key" ON "StepExecution"("executionId", "stepId");
