ALTER TABLE "StepExecution" ADD COLUMN "leaseOwner" TEXT;
