/**
 * The live supervisors, grouped: by host, and within a host the processes of
 * one cluster primary (`jobvisor start --processes N`) together under it, by
 * slot. A supervisor running alone is its own group.
 */
import { html } from 'hono/html';
import type { SupervisorRow } from '../../queue/admin/index.ts';
import { count, time } from './layout.ts';

export interface HostGroup {
  host: string;
  /** `primary` null: supervisors running alone on this host. */
  groups: Array<{ primary: string | null; rows: SupervisorRow[] }>;
}

/** Groups rows by host, then by cluster primary (alone ones first), keeping their order. Pure. */
export function groupSupervisors(rows: readonly SupervisorRow[]): HostGroup[] {
  const hosts = new Map<string, Map<string | null, SupervisorRow[]>>();
  for (const r of rows) {
    const byPrimary = hosts.get(r.host) ?? new Map<string | null, SupervisorRow[]>();
    hosts.set(r.host, byPrimary);
    const primary = r.cluster_primary ?? null;
    byPrimary.set(primary, [...(byPrimary.get(primary) ?? []), r]);
  }
  return [...hosts].map(([host, byPrimary]) => ({
    host,
    groups: [...byPrimary]
      .map(([primary, list]) => ({
        primary,
        rows: primary === null ? list : [...list].sort((a, b) => (a.cluster_slot ?? 0) - (b.cluster_slot ?? 0)),
      }))
      .sort((a, b) => (a.primary === null ? -1 : b.primary === null ? 1 : a.primary.localeCompare(b.primary))),
  }));
}

const row = (s: SupervisorRow) =>
  html`<tr>
    <td>${s.cluster_slot !== null ? `child ${s.cluster_slot}: ` : ''}${s.id}</td>
    <td data-label="Host">${s.host} (pid ${s.pid})</td>
    <td data-label="Version">${s.version}</td>
    <td data-label="Queues">
      ${Object.entries(s.queues ?? {})
        .map(([q, n]) => `${q}×${n}`)
        .join(', ')}
    </td>
    <td class="num" data-label="In flight">${count(s.in_flight)}</td>
    <td data-label="Started">${time(s.started_at)}</td>
    <td data-label="Last heartbeat">${time(s.heartbeat_at)}</td>
  </tr>`;

export function supervisorsTable(rows: readonly SupervisorRow[]) {
  return html`<table id="supervisors" class="stack">
    <thead>
      <tr>
        <th>Supervisor</th>
        <th>Host</th>
        <th>Version</th>
        <th>Queues</th>
        <th class="num">In flight</th>
        <th>Started</th>
        <th>Last heartbeat</th>
      </tr>
    </thead>
    <tbody>
      ${
        rows.length === 0
          ? html`<tr>
              <td colspan="7" class="muted">No supervisor is alive.</td>
            </tr>`
          : ''
      }
      ${groupSupervisors(rows).map(
        (h) =>
          html`<tr class="group" data-host="${h.host}">
              <th colspan="7">${h.host}</th>
            </tr>
            ${h.groups.map((g) =>
              g.primary === null
                ? g.rows.map(row)
                : html`<tr class="group" data-primary="${g.primary}">
                      <td colspan="7">primary ${g.primary}: ${g.rows.length} processes</td>
                    </tr>
                    ${g.rows.map(row)}`,
            )}`,
      )}
    </tbody>
  </table>`;
}
