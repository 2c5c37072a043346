-- The contacts page searched by a data field (issue 10): `data @> '{"plan":"pro"}'` is a
-- GIN lookup instead of a scan of every contact of the project. jsonb_path_ops: smaller
-- and faster than the default opclass for containment, the only operator the page uses.
-- Built CONCURRENTLY, alone in its migration.
CREATE INDEX CONCURRENTLY "Contact_data_idx" ON "Contact" USING GIN ("data" jsonb_path_ops);
