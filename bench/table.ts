/** A plain-text table: first column left-aligned, the others right-aligned (they hold numbers). */
export function formatTable(title: string, header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [title, line(header), rule, ...rows.map(line)].join('\n');
}

/** Milliseconds with a fixed number of decimals. */
export function ms(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/** KiB as MiB with one decimal. */
export function mib(kib: number): string {
  return Number.isFinite(kib) ? (kib / 1024).toFixed(1) : 'n/a';
}
