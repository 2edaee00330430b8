/**
 * `jobs.maxPayloadBytes`' default, stated once: the config schema's default,
 * and the limit of an enqueue or a claim whose caller names none.
 */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
