// The figures every bench reports: percentiles of latency samples and the median of repeated runs.

/** The p-th percentile (nearest rank, 0–100) of samples sorted ascending; 0 for no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** The median (the mean of the two middle values for an even count); 0 for no samples. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}
