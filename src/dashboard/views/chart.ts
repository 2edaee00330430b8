/**
 * Throughput chart: one pair of bars (done, failed) per time bucket, drawn as
 * inline SVG on the server, so no charting script is needed. Heights scale to
 * the largest bucket; every bar carries a <title> with its exact numbers.
 */
import { html } from 'hono/html';
import { count, time, type Html } from './layout.ts';

export interface Bucket {
  bucketStart: Date;
  done: number;
  failed: number;
}

const WIDTH = 640;
const HEIGHT = 140;
const AXIS = 16;

export function throughputChart(title: string, buckets: Bucket[]): Html {
  const max = Math.max(1, ...buckets.map((b) => b.done + b.failed));
  const slot = buckets.length ? WIDTH / buckets.length : WIDTH;
  const bar = Math.max(1, slot * 0.8);
  const plot = HEIGHT - AXIS;
  const totalDone = buckets.reduce((n, b) => n + b.done, 0);
  const totalFailed = buckets.reduce((n, b) => n + b.failed, 0);
  const bars = buckets.map((b, i) => {
    const x = (i * slot).toFixed(1);
    const hDone = (b.done / max) * plot;
    const hFailed = (b.failed / max) * plot;
    return html`<g>
      <title>${time(b.bucketStart)}: ${count(b.done)} done, ${count(b.failed)} failed</title>
      <rect
        class="done"
        x="${x}"
        y="${(plot - hDone - hFailed).toFixed(1)}"
        width="${bar.toFixed(1)}"
        height="${hDone.toFixed(1)}"
      ></rect>
      <rect
        class="failed"
        x="${x}"
        y="${(plot - hFailed).toFixed(1)}"
        width="${bar.toFixed(1)}"
        height="${hFailed.toFixed(1)}"
      ></rect>
    </g>`;
  });
  const first = buckets[0];
  const last = buckets[buckets.length - 1];
  return html`<figure>
    <figcaption>
      ${title} —
      <span class="legend"
        ><span class="done">■ done ${count(totalDone)}</span>,
        <span class="failed">■ failed ${count(totalFailed)}</span></span
      >
      (peak ${count(max)} per bucket)
    </figcaption>
    <svg
      class="chart"
      role="img"
      aria-label="${title}"
      viewBox="0 0 ${WIDTH} ${HEIGHT}"
      width="${WIDTH}"
      height="${HEIGHT}"
    >
      ${bars}
      <text x="0" y="${HEIGHT - 3}">${first ? time(first.bucketStart) : ''}</text>
      <text x="${WIDTH}" y="${HEIGHT - 3}" text-anchor="end">${last ? time(last.bucketStart) : ''}</text>
    </svg>
  </figure>`;
}
