/**
 * `jobvisor jobs show ID [--json]`: one job, with its payload, owner, lease,
 * timeline, and its parents and dependents (workflows) with their statuses
 * (exit 1 when not found), and its durable steps, sleeps and waits (name,
 * attempt, start, end, duration, the result folded) with the current wait.
 */
import { InputError } from '../errors.ts';
import {
  getJob,
  relationsOf,
  stepsOf,
  timeText,
  type StepRow,
  type JobDetail,
  type RelatedJobs,
  type Relations,
  type Time,
} from '../queue/admin/index.ts';
import { jobIds, parse } from './args.ts';
import { withStore } from './job_store.ts';

export async function showCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } }, 'jobs show');
  if (positionals.length > 1) throw new InputError('jobs show: give one job id');
  const [id] = jobIds(positionals) as [string];
  const found = await withStore(async (store) => {
    const job = await getJob(store, id);
    return job && { job, relations: await relationsOf(store, id), steps: await stepsOf(store, id) };
  });
  if (!found) {
    process.stderr.write(`job ${id}: not found\n`);
    return 1;
  }
  const { job, relations, steps } = found;
  process.stdout.write(
    values.json
      ? `${JSON.stringify({ ...job, ...relations, steps })}\n`
      : describe(job) + describeSteps(job, steps) + describeRelations(relations),
  );
  return 0;
}

/**
 * Parents and dependents, each a count by status, then one line per job
 * listed (unfinished first; the rest are counted). Nothing for a job outside
 * any workflow.
 */
export function describeRelations(r: Relations): string {
  if (r.parents.total === 0 && r.dependents.total === 0) return '';
  const side = (title: string, s: RelatedJobs): string[] => {
    const counts = Object.entries(s.byStatus)
      .map(([status, n]) => `${n} ${status}`)
      .join(', ');
    const lines = [`${title}: ${s.total === 0 ? 'none' : `${s.total} (${counts})`}`];
    const width = Math.max(0, ...s.jobs.map((j) => j.id.length));
    for (const j of s.jobs)
      lines.push(`  ${j.id.padStart(width)}  ${j.status.padEnd(9)}  ${j.kind}  (queue ${j.queue})`);
    if (s.total > s.jobs.length) lines.push(`  … and ${s.total - s.jobs.length} more`);
    return lines;
  };
  return `${[...side('parents', r.parents), ...side('dependents', r.dependents)].join('\n')}\n`;
}

/** One line per step, sleep and wait; then what the job waits for, if it waits. */
export function describeSteps(job: JobDetail, steps: StepRow[]): string {
  if (steps.length === 0) return '';
  const lines = ['steps:'];
  for (const s of steps) {
    const took = s.ms === null ? '' : ` (${Math.round(s.ms)} ms)`;
    const span = `${when(s.started_at)} → ${when(s.finished_at)}${took}`;
    const what =
      s.kind === 'step'
        ? `= ${s.result ?? '(no value)'}`
        : s.kind === 'sleep'
          ? `sleep until ${when(s.wake_at)}`
          : s.finished_at === null
            ? `wait, deadline ${when(s.wake_at)}`
            : `wait: ${s.result ?? ''}`;
    lines.push(`  ${s.name}  attempt ${s.attempt}  ${span}  ${what}`);
  }
  const parked = steps.find((s) => s.kind === 'wait' && s.finished_at === null);
  if (job.status === 'waiting' && parked) lines.push(`waiting for signal "${parked.name}" until ${when(job.run_at)}`);
  return `${lines.join('\n')}\n`;
}

function when(t: Time | null): string {
  return t === null ? '-' : timeText(t);
}

/** The human view: fields, then the payload as indented JSON, then the timeline. */
export function describe(job: JobDetail): string {
  const fields: Array<[string, string]> = [
    ['id', job.id],
    ['kind', job.kind],
    ['queue', job.queue],
    ['status', job.status],
    ['attempts', `${job.attempts}/${job.max_attempts}`],
    ['priority', String(job.priority)],
    ['run_at', when(job.run_at)],
    ['created_at', when(job.created_at)],
    ['started_at', when(job.started_at)],
    ['finished_at', when(job.finished_at)],
    ['owner', job.locked_by ?? '-'],
    ['lease until', when(job.locked_until)],
    ['lease token', job.lease_token ?? '-'],
    ['unique_key', job.unique_key ?? '-'],
    ['trace', job.trace_context === null ? '-' : JSON.stringify(job.trace_context)],
    ['last_error', job.last_error ?? '-'],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  const lines = fields.map(([k, v]) => `${k.padEnd(width)}  ${indent(v, width + 2)}`);
  lines.push('payload:', indent(JSON.stringify(job.payload, null, 2), 2, true));
  lines.push(`snoozes: ${job.snoozes}`);
  if (job.progress !== null) lines.push('progress:', indent(JSON.stringify(job.progress, null, 2), 2, true));
  if (job.result !== null) lines.push('result:', indent(JSON.stringify(job.result, null, 2), 2, true));
  lines.push('timeline:');
  for (const e of job.timeline) {
    const what = e.attempt === undefined ? e.event : `${e.event} (attempt ${e.attempt})`;
    lines.push(`  ${when(e.at)}  ${what}${e.error === undefined ? '' : `: ${indent(e.error, 4)}`}`);
    if (e.stack !== undefined) lines.push(indent(e.stack, 6, true));
  }
  return `${lines.join('\n')}\n`;
}

function indent(text: string, by: number, first = false): string {
  const pad = ' '.repeat(by);
  return (first ? pad : '') + text.split('\n').join(`\n${pad}`);
}
