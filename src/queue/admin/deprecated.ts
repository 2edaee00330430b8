/**
 * The admin functions that take a store (`{ db, schema }`) first, as the
 * package exported them before createAdmin (handle.ts): kept working for one
 * minor version, deprecated. The CLI and the dashboard call the functions
 * themselves (index.ts); only the package's entry points export these names.
 */
import { cancelJobs, deleteJobs, retryJobs, runJobsNow } from './actions.ts';
import { deadLetterGroups } from './dead_letters.ts';
import { getJob } from './job.ts';
import { countJobs, listJobs } from './list.ts';
import { overview } from './overview.ts';
import { scheduleSummaries } from './schedules.ts';
import { stats } from './stats.ts';
import { listSupervisors } from './supervisors.ts';
import { throughput } from './throughput.ts';
import { relationsOf, workflowOf } from './workflow.ts';

/**
 * `listJobs` with a store (`{ db, schema }`) first: createAdmin's `listJobs`.
 * @deprecated Use `createAdmin({ pool }).listJobs(filter, page)`; removed in 0.2.0.
 */
const listJobsOfStore = listJobs;
/**
 * `countJobs` with a store (`{ db, schema }`) first: createAdmin's `countJobs`.
 * @deprecated Use `createAdmin({ pool }).countJobs(filter, cap?, action?)`; removed in 0.2.0.
 */
const countJobsOfStore = countJobs;
/**
 * `getJob` with a store (`{ db, schema }`) first: createAdmin's `getJob`.
 * @deprecated Use `createAdmin({ pool }).getJob(id)`; removed in 0.2.0.
 */
const getJobOfStore = getJob;
/**
 * `stats` with a store (`{ db, schema }`) first: createAdmin's `stats`.
 * @deprecated Use `createAdmin({ pool }).stats(now?, options?)`; removed in 0.2.0.
 */
const statsOfStore = stats;
/**
 * `overview` with a store (`{ db, schema }`) first: createAdmin's `overview`.
 * @deprecated Use `createAdmin({ pool }).overview(now?, options?)`; removed in 0.2.0.
 */
const overviewOfStore = overview;
/**
 * `throughput` with a store (`{ db, schema }`) first: createAdmin's `throughput`.
 * @deprecated Use `createAdmin({ pool }).throughput(range, now?)`; removed in 0.2.0.
 */
const throughputOfStore = throughput;
/**
 * `deadLetterGroups` with a store (`{ db, schema }`) first: createAdmin's `deadLetterGroups`.
 * @deprecated Use `createAdmin({ pool }).deadLetterGroups(options?)`; removed in 0.2.0.
 */
const deadLetterGroupsOfStore = deadLetterGroups;
/**
 * `listSupervisors` with a store (`{ db, schema }`) first: createAdmin's `listSupervisors`.
 * @deprecated Use `createAdmin({ pool }).listSupervisors(now?)`; removed in 0.2.0.
 */
const listSupervisorsOfStore = listSupervisors;
/**
 * `scheduleSummaries` with a store (`{ db, schema }`) first: createAdmin's `scheduleSummaries`.
 * @deprecated Use `createAdmin({ pool }).scheduleSummaries(schedules, now?, count?)`; removed in 0.2.0.
 */
const scheduleSummariesOfStore = scheduleSummaries;
/**
 * `relationsOf` with a store (`{ db, schema }`) first: createAdmin's `relationsOf`.
 * @deprecated Use `createAdmin({ pool }).relationsOf(id, limit?)`; removed in 0.2.0.
 */
const relationsOfStore = relationsOf;
/**
 * `workflowOf` with a store (`{ db, schema }`) first: createAdmin's `workflowOf`.
 * @deprecated Use `createAdmin({ pool }).workflowOf(id, limit?)`; removed in 0.2.0.
 */
const workflowOfStore = workflowOf;
/**
 * `retryJobs` with a store (`{ db, schema }`) first: createAdmin's `retryJobs`.
 * @deprecated Use `createAdmin({ pool }).retryJobs(target, options?)`; removed in 0.2.0.
 */
const retryJobsOfStore = retryJobs;
/**
 * `cancelJobs` with a store (`{ db, schema }`) first: createAdmin's `cancelJobs`.
 * @deprecated Use `createAdmin({ pool }).cancelJobs(target, options?)`; removed in 0.2.0.
 */
const cancelJobsOfStore = cancelJobs;
/**
 * `runJobsNow` with a store (`{ db, schema }`) first: createAdmin's `runJobsNow`.
 * @deprecated Use `createAdmin({ pool }).runJobsNow(target, options?)`; removed in 0.2.0.
 */
const runJobsNowOfStore = runJobsNow;
/**
 * `deleteJobs` with a store (`{ db, schema }`) first: createAdmin's `deleteJobs`.
 * @deprecated Use `createAdmin({ pool }).deleteJobs(target, options?)`; removed in 0.2.0.
 */
const deleteJobsOfStore = deleteJobs;

export {
  cancelJobsOfStore as cancelJobs,
  countJobsOfStore as countJobs,
  deadLetterGroupsOfStore as deadLetterGroups,
  deleteJobsOfStore as deleteJobs,
  getJobOfStore as getJob,
  listJobsOfStore as listJobs,
  listSupervisorsOfStore as listSupervisors,
  overviewOfStore as overview,
  relationsOfStore as relationsOf,
  retryJobsOfStore as retryJobs,
  runJobsNowOfStore as runJobsNow,
  scheduleSummariesOfStore as scheduleSummaries,
  statsOfStore as stats,
  throughputOfStore as throughput,
  workflowOfStore as workflowOf,
};
