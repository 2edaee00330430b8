/** Why a job's `ctx.signal` aborted, as the task sees it: a TimeoutError, or an AbortError naming the cause. */
export function abortReason(why: 'timeout' | 'lease-lost' | 'shutdown'): Error {
  const reason = new Error(
    why === 'timeout' ? 'job timed out' : why === 'lease-lost' ? 'lease lost' : 'supervisor shutting down',
  );
  reason.name = why === 'timeout' ? 'TimeoutError' : 'AbortError';
  return reason;
}
