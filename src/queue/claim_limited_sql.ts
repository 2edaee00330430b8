/**
 * The claim statements of a limited queue (globalConcurrency, perKeyConcurrency
 * or rateLimit). They run inside claimLimited's transaction, after it has taken
 * the queue's advisory lock, so each sees every earlier claim of the queue
 * committed: two supervisors can never both take the last free slot.
 *
 * Held slots are counted from the jobs table itself (running rows), never from
 * a counter a crash could leak: a killed supervisor's rows hold their slots
 * until the reaper returns them, then the slots are free. A running job that
 * was cancelled keeps its lease (admin cancel leaves locked_until), and holds
 * its slot while that lease lasts: its supervisor renews it until the run has
 * ended and then clears it (cancelled_slot.ts), so the task still stopping
 * never overlaps the next job of its key. Those rows are found through
 * jobs_cancelled_running_idx (migration 014), empty but for such runs.
 * Rate-limit starts are rows of jobvisor.rate_starts written by the same
 * statement that claims.
 *
 * Shared parameters: $1 owner, $2 queue, $3 lease ms, $4 free local places,
 * $5 pinned now (tests; null: the database clock at the statement, after the
 * lock), $6 largest payload sent, $7 globalConcurrency, $8 perKeyConcurrency,
 * $9 rate count, $10 rate window ms (period + guard), $11 rate per key,
 * $12 how far ahead the claimed jobs are scheduled to start (ms; 0 without a
 * rate limit), $13 how far ahead a queue-wide rate limit hands out start slots.
 *
 * Rate limits record each job's start as a row of rate_starts, at the moment
 * the job is scheduled to start; the supervisor starts it then
 * (claim_limited.ts says why). A queue-wide limit paces: the k-th job of a
 * claim starts at the next free slot + k × window/count, so any window of the
 * period holds at most `count` starts however they fall. A per-key limit
 * counts each key's starts within the window before it, since keys are many
 * and each has few starts.
 * Every result has one row even when nothing is claimed: `budget` (what the
 * cluster limits allowed), `next_free_ms` (when half the pacing horizon is
 * free again), and the database's clock when the statement arrived
 * (statement_timestamp()) and when each row left (clock_timestamp()), which
 * the supervisor measures its own clock against (db_clock.ts), ride along.
 */
import { PAYLOAD_COLUMNS, PAYLOAD_TEXT } from './claim.ts';
import { planned } from './sql.ts';

// Both statements claim `chosen` with its start slots, record rate-limit starts
// and prune those out of every window, the same way. The rows are found by
// primary key. The status test is written so that jobs_pending_idx cannot
// serve it: with `j.status = 'pending'` the planner, which cannot see how many
// ids the array holds, sometimes read the whole pending index instead (231
// pages for one job behind 20,000 pending ones, under the queue's lock).
const CLAIM_CHOSEN = `claimed AS (
  UPDATE jobvisor.jobs AS j
     SET status = 'running',
         attempts = least(j.attempts, 2147483646) + 1,
         lease_token = nextval('jobvisor.lease_token_seq'),
         locked_by = $1,
         locked_until = t.now + $3::float8 * interval '1 millisecond',
         started_at = coalesce(b.first_slot + ((SELECT s.seq FROM chosen AS s WHERE s.id = j.id) - 1) * ($10::float8 / $9::int) * interval '1 millisecond', t.at)
    FROM t, budget AS b
   WHERE j.id = ANY (ARRAY(SELECT id FROM chosen)) AND coalesce(j.status, '') = 'pending'
  RETURNING j.id, j.kind, j.queue, ${PAYLOAD_TEXT}, j.attempts, j.max_attempts, j.priority, j.run_at, j.lease_token,
            j.trace_context, j.concurrency_key, j.started_at
),
recorded AS (
  INSERT INTO jobvisor.rate_starts (queue, key, started_at)
  SELECT $2, CASE WHEN $11::bool THEN c.concurrency_key ELSE '' END, c.started_at
    FROM claimed AS c
   WHERE $9::int IS NOT NULL AND (NOT $11::bool OR c.concurrency_key IS NOT NULL)
),
pruned AS (
  DELETE FROM jobvisor.rate_starts AS r USING t
   WHERE $9::int IS NOT NULL AND r.queue = $2 AND r.started_at <= t.at - $10::float8 * interval '1 millisecond'
)`;

// What the cluster limits leave for this claim, the same way in both
// statements: `t` the claim's clock, `global_room` the queue's free slots
// under globalConcurrency (a cancelled run still holding its lease holds its
// slot), `paced` the first free start slot of a queue-wide rate limit, and
// `budget` the least of them and the local places ($4).
const BUDGET = `t AS (
  SELECT now, now + $12::float8 * interval '1 millisecond' AS at, $8::int AS per_key
    FROM (SELECT coalesce($5::timestamptz, clock_timestamp()) AS now) AS n
),
global_room AS (
  SELECT CASE WHEN $7::int IS NULL THEN $4::int
              ELSE $7::int - (SELECT count(*)::int FROM jobvisor.jobs WHERE status = 'running' AND queue = $2)
                           - (SELECT count(*)::int FROM jobvisor.jobs
                               WHERE status = 'cancelled' AND finished_at IS NULL AND queue = $2
                                 AND locked_until > (SELECT now FROM t)) END AS n
),
paced AS (
  SELECT CASE WHEN $9::int IS NOT NULL AND NOT $11::bool THEN
           greatest(t.at, (SELECT max(r.started_at) FROM jobvisor.rate_starts AS r WHERE r.queue = $2 AND r.key = '')
                          + ($10::float8 / $9::int) * interval '1 millisecond') END AS first_slot
    FROM t
),
budget AS (
  SELECT greatest(0, least($4::int, g.n, CASE WHEN p.first_slot IS NULL THEN $4::int
           ELSE ceil(extract(epoch FROM t.at + $13::float8 * interval '1 millisecond' - p.first_slot) * 1000
                     / ($10::float8 / $9::int))::int END)) AS n,
         extract(epoch FROM p.first_slot - t.at) * 1000 - $13::float8 / 2 AS next_free_ms,
         p.first_slot, extract(epoch FROM statement_timestamp()) * 1000 AS db_received_ms
    FROM global_room AS g, paced AS p, t
)`;

/**
 * Queue-wide limits only (globalConcurrency and/or a queue-wide rate limit):
 * the plain claim's candidates, with LIMIT set to what the limits leave.
 */
export const CLAIM_QUEUE_LIMITED = planned(
  'claim_queue_limited',
  `
WITH ${BUDGET},
chosen AS (
  SELECT j.id, row_number() OVER (ORDER BY j.priority, j.run_at, j.id) AS seq
    FROM jobvisor.jobs AS j
   WHERE j.id = ANY ((SELECT jobvisor.due_job_ids($2, (SELECT n FROM budget), (SELECT now FROM t)))::bigint[])
),
${CLAIM_CHOSEN}
SELECT b.n AS budget, b.next_free_ms, b.db_received_ms, extract(epoch FROM clock_timestamp()) * 1000 AS db_replied_ms, c.id, c.kind, c.queue, c.lease_token::text AS token,
       ${PAYLOAD_COLUMNS}, c.attempts, c.max_attempts,
       extract(epoch FROM c.run_at) * 1000 AS run_at_ms, c.trace_context::text AS trace_context,
       extract(epoch FROM c.started_at) * 1000 AS start_at_ms
  FROM budget AS b LEFT JOIN claimed AS c ON true
 ORDER BY c.started_at, c.priority, c.run_at, c.id`,
);

/**
 * Per-key limits (perKeyConcurrency and/or rateLimit.perKey). Extra
 * parameters: $14 the key after which to start (null: the first), $15 how
 * many keys to visit at most, $16 how many of the queue's first due jobs (any
 * key, claim order) to look among for jobs without a key (null: all of them).
 *
 * No head-of-line blocking: `keys` walks the distinct keys with pending jobs
 * through jobs_pending_key_idx, one index probe per key (a loose index scan),
 * so a key with 10,000 pending jobs costs one step like any other; each key
 * then offers its first jobs in claim order, as many as its limits leave. The
 * offers are taken round robin (every key's first job, then every key's
 * second, ...), keys in the order visited; jobs without a key have no per-key
 * limit and take part as one more key. The walk resumes after the last key
 * served (claimLimited keeps the cursor), so every key gets its turn.
 *
 * A key's offers are read a priority at a time (`kp`: the key's first pending
 * priority, found by the walk's own probe, then each next one), each from its
 * first due job, so a key's jobs not yet due are never read. Read in claim
 * order with `run_at <= now` as a filter, a tenant whose jobs keep failing
 * made every claim of the queue step over all of its retries waiting out their
 * backoff: 18 ms per claim behind 100,000 of them, under the queue's lock,
 * growing with the backlog. The levels are taken in order and the scan stops
 * once the key's room is filled, so the nested loop's order is the claim order.
 *
 * Jobs without a key have no index of their own (one would cost every plain
 * job an index entry at enqueue), so finding them means reading the queue's
 * due jobs in claim order and the row behind each (a priority at a time, from
 * the first due job of each, so jobs not yet due are never read). Read to the end, that cost
 * grows with the backlog: 18 ms per claim behind 100,000 due jobs of keys at
 * their limit, under the queue's lock. With $16 the read stops after that many
 * due jobs; `keyless_hidden` then says whether jobs without a key may lie
 * beyond (the window was full and held fewer than asked for), and the fetcher
 * reads to the end now and then (claim_limited.ts).
 */
export const CLAIM_KEY_LIMITED = planned(
  'claim_key_limited',
  `
WITH RECURSIVE walk(key, p, i) AS (
  (SELECT concurrency_key, priority, 1 FROM jobvisor.jobs
    WHERE status = 'pending' AND queue = $2 AND concurrency_key IS NOT NULL
      AND ($14::text IS NULL OR concurrency_key > $14::text)
    ORDER BY concurrency_key, priority LIMIT 1)
  UNION ALL
  SELECT n.concurrency_key, n.priority, w.i + 1
    FROM walk AS w,
    LATERAL (SELECT j.concurrency_key, j.priority FROM jobvisor.jobs AS j
              WHERE j.status = 'pending' AND j.queue = $2 AND j.concurrency_key IS NOT NULL AND j.concurrency_key > w.key
              ORDER BY j.concurrency_key, j.priority LIMIT 1) AS n
   WHERE w.i < $15::int
),
keys AS (SELECT key, p, i FROM walk),
${BUDGET},
priorities(p) AS (
  (SELECT priority FROM jobvisor.jobs WHERE status = 'pending' AND queue = $2 ORDER BY priority LIMIT 1)
  UNION ALL
  SELECT (SELECT j.priority FROM jobvisor.jobs AS j
           WHERE j.status = 'pending' AND j.queue = $2 AND j.priority > pr.p
           ORDER BY j.priority LIMIT 1)
    FROM priorities AS pr WHERE pr.p IS NOT NULL
),
keyless_head AS (
  SELECT h.id, h.priority, h.run_at, h.concurrency_key
    FROM priorities AS pr, t,
    LATERAL (SELECT j.id, j.priority, j.run_at, j.concurrency_key FROM jobvisor.jobs AS j
              WHERE j.status = 'pending' AND j.queue = $2 AND j.priority = pr.p AND j.run_at <= t.now
                AND ($16::int IS NOT NULL OR j.concurrency_key IS NULL)
              ORDER BY j.run_at, j.id
              LIMIT coalesce($16::int, $4::int)) AS h
   WHERE pr.p IS NOT NULL
   ORDER BY h.priority, h.run_at, h.id
   LIMIT coalesce($16::int, $4::int)
),
key_running AS (
  SELECT h.key, sum(h.n)::int AS n FROM (
    SELECT concurrency_key AS key, count(*)::int AS n FROM jobvisor.jobs
     WHERE status = 'running' AND queue = $2 AND concurrency_key IN (SELECT key FROM keys) GROUP BY 1
    UNION ALL
    SELECT concurrency_key, count(*)::int FROM jobvisor.jobs
     WHERE status = 'cancelled' AND finished_at IS NULL AND queue = $2
       AND locked_until > (SELECT now FROM t) AND concurrency_key IN (SELECT key FROM keys) GROUP BY 1
  ) AS h GROUP BY 1
),
key_window AS (
  SELECT r.key, count(*)::int AS n FROM jobvisor.rate_starts AS r, t
   WHERE $11::bool AND r.queue = $2 AND r.key IN (SELECT key FROM keys)
     AND r.started_at > t.at - $10::float8 * interval '1 millisecond'
   GROUP BY 1
),
offers AS (
  SELECT o.id, k.i, row_number() OVER (PARTITION BY k.i ORDER BY o.priority, o.run_at, o.id) AS rn
    FROM keys AS k
    LEFT JOIN key_running AS kr ON kr.key = k.key
    LEFT JOIN key_window AS kw ON kw.key = k.key,
    t,
    LATERAL (SELECT greatest(0, least($4::int,
                                      coalesce($8::int - coalesce(kr.n, 0), $4::int),
                                      CASE WHEN $11::bool THEN $9::int - coalesce(kw.n, 0) ELSE $4::int END)) AS n) AS room,
    LATERAL (WITH RECURSIVE kp(p) AS (
               SELECT k.p
               UNION ALL
               SELECT (SELECT j.priority FROM jobvisor.jobs AS j
                        WHERE j.status = 'pending' AND j.queue = $2 AND j.concurrency_key = k.key AND j.priority > kp.p
                        ORDER BY j.priority LIMIT 1)
                 FROM kp WHERE kp.p IS NOT NULL
             )
             SELECT x.id, x.priority, x.run_at FROM kp,
             LATERAL (SELECT j.id, j.priority, j.run_at FROM jobvisor.jobs AS j
                       WHERE j.status = 'pending' AND j.queue = $2 AND j.concurrency_key = k.key AND j.priority = kp.p
                         AND j.run_at <= t.now
                       ORDER BY j.run_at, j.id LIMIT room.n) AS x
              WHERE kp.p IS NOT NULL
              LIMIT room.n) AS o
  UNION ALL
  SELECT id, 0, row_number() OVER (ORDER BY priority, run_at, id)
    FROM (SELECT id, priority, run_at FROM keyless_head WHERE concurrency_key IS NULL
           ORDER BY priority, run_at, id LIMIT $4::int) AS keyless
),
chosen AS (
  SELECT id, i, row_number() OVER (ORDER BY rn, i) AS seq FROM offers ORDER BY rn, i LIMIT (SELECT n FROM budget)
),
${CLAIM_CHOSEN}
SELECT b.n AS budget, b.next_free_ms, b.db_received_ms, extract(epoch FROM clock_timestamp()) * 1000 AS db_replied_ms, c.id, c.kind, c.queue, c.lease_token::text AS token,
       ${PAYLOAD_COLUMNS}, c.attempts, c.max_attempts,
       extract(epoch FROM c.run_at) * 1000 AS run_at_ms, c.trace_context::text AS trace_context,
       extract(epoch FROM c.started_at) * 1000 AS start_at_ms, ch.i AS key_index, c.concurrency_key AS key,
       (SELECT key FROM keys ORDER BY i DESC LIMIT 1) AS last_key, (SELECT count(*)::int FROM keys) AS keys_visited,
       $16::int IS NOT NULL AND (SELECT count(*) FROM keyless_head) >= $16::int
         AND (SELECT count(*) FROM keyless_head WHERE concurrency_key IS NULL) < $4::int AS keyless_hidden
  FROM budget AS b LEFT JOIN claimed AS c ON true LEFT JOIN chosen AS ch ON ch.id = c.id
 ORDER BY c.started_at, ch.seq`,
  'orderedThroughIndexes',
);
