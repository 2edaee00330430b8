-- bench/storage-layouts-phases.sql: one layout's phases, included by
-- storage-layouts.sql (\ir) once the layout's database is connected and set up.
-- Variables: complete (the done write, a CALL), analyzed (the tables ANALYZEd
-- after it), remove (the removal of finished rows; SELECT 1 for none).
CREATE TEMP TABLE claimed_batches (ids bigint[] NOT NULL, tokens bigint[] NOT NULL);
CHECKPOINT;
:pre
SELECT bench.mark() \g /dev/null
CALL bench.enqueue(:jobs);
SELECT bench.record('enqueue') \g /dev/null
ANALYZE jobvisor.jobs;
:pre
SELECT bench.mark() \g /dev/null
CALL bench.claim();
SELECT bench.record('claim') \g /dev/null
ANALYZE jobvisor.jobs;
:pre
SELECT bench.mark() \g /dev/null
:complete;
SELECT bench.record('complete') \g /dev/null
ANALYZE :analyzed;
:pre
SELECT bench.mark() \g /dev/null
:remove \g /dev/null
SELECT bench.record('remove') \g /dev/null
:pre
SELECT bench.mark() \g /dev/null
VACUUM jobvisor.jobs;
SELECT bench.record('vacuum') \g /dev/null
SELECT count(*) AS left_over FROM jobvisor.jobs \gset
\echo '  rows left:' :left_over
SELECT string_agg(format('(%s, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L)', :run, layout, phase, ms, wal_bytes, wal_records,
                         fpi_bytes, checkpoint_inside, table_bytes, index_bytes, sizes, rmgr), ', ') AS rows
  FROM bench.results \gset
\connect stl_results
INSERT INTO results VALUES :rows;
