-- The W3C trace context of the request that enqueued a job:
-- {"traceparent": "00-<trace-id>-<span-id>-<flags>", "tracestate": "..."}.
-- enqueue and enqueueMany write it when an OpenTelemetry span is active; a
-- plain-SQL producer may write it too. Each attempt's run span joins that
-- trace. A value the worker cannot read is ignored (the run starts a new
-- trace): a job never fails because of its trace context.
--
-- Nullable without a default: a catalog-only change, no table rewrite. The
-- CHECK is NOT VALID so adding it scans nothing; it still rejects a new row
-- whose value is not a JSON object, naming the constraint.
ALTER TABLE jobvisor.jobs ADD COLUMN trace_context jsonb;
ALTER TABLE jobvisor.jobs
  ADD CONSTRAINT jobs_trace_context_object CHECK (trace_context IS NULL OR jsonb_typeof(trace_context) = 'object') NOT VALID;
