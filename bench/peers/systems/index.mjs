// Loads one peer system's adapter. Every adapter has the same shape:
//   schemas, config, versions                 what it creates, exactly how it is set up
//   install(admin)                            create its schema (drops a leftover one first)
//   openProducer() / closeProducer()          the enqueue side
//   enqueueMany(n) / enqueueOne(payload)      bulk (the system's fastest way) / one job
//   enqueueKeyed(n, keys)                     bulk, job i keyed k<i mod keys>, one job at a time
//                                             per key (perkey; only the PERKEY_SYSTEMS have it)
//   countJobs(admin)                          jobs present in its table, any state
//   countDone(admin, enqueued)                finished jobs, read from the database
//   startWorker({ onJob, onError })           starts consuming; resolves to { stop() }
// onJob(payload) is called when a handler starts; its promise is the handler's.
const LOADERS = {
  'graphile-fast': () => import('./graphile.mjs'),
  'graphile-default': () => import('./graphile.mjs'),
  pgboss: () => import('./pgboss.mjs'),
  'bullmq-pg': () => import('./bullmq-pg.mjs'),
  classic: () => import('./classic.mjs'),
};

/** Creates the adapter named by options.system; throws UsageError on a bad --tune. */
export async function loadSystem(options) {
  const { create } = await LOADERS[options.system]();
  return create(options);
}
