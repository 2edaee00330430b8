/** Markdown pieces shared by the generated reference pages. */

/** The first line of every generated page: where it comes from and how to remake it. */
export function generatedHeader(source: string): string {
  return `<!-- generated from ${source} by \`npm run docs:reference\`; do not edit -->\n`;
}

/**
 * Text for a page that VitePress compiles as a Vue template: `<` and `{{` outside code spans would
 * be read as an element or an interpolation, so they are escaped there.
 */
export function inline(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replaceAll('<', '&lt;').replaceAll('{{', '&#123;&#123;')))
    .join('');
}

/** A Markdown table; cells may hold any text (pipes, line breaks, `<` and `{{` are escaped). */
export function table(head: string[], rows: string[][]): string {
  const cell = (s: string) => inline(s).replaceAll('|', '\\|').replaceAll('\n', ' ');
  return [
    `| ${head.map(cell).join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}
