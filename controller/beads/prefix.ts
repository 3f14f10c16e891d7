/**
 * The bead id prefix of a city: `[workspace] prefix`, else the initials of a name in parts (`my-project` →
 * `mp`), else its first three letters (`alpha` → `alp`).
 */
export function beadPrefix(cityName: string, configured: string | undefined): string {
  if (configured && /^[a-z0-9]+$/i.test(configured)) return configured.toLowerCase();
  const parts = cityName
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  if (parts.length > 1) return parts.map((p) => p[0]).join('');
  return (parts[0] ?? 'ctl').slice(0, 3) || 'ctl';
}
