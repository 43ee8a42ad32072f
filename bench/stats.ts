// The figures every bench reports: percentiles of latency samples and the median of repeated runs.

/**
 * The p-th percentile (nearest rank, 0–100) of samples sorted ascending; 0 for no samples. The rank is
 * ceil(p/100·n) (1-based), so p99 of 100 samples is the 99th, not the maximum (floor(p·n/100) as an index was one
 * rank high whenever p·n/100 was whole); p=0 answers the minimum.
 */
export function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.ceil((p * sorted.length) / 100); // p·n first: (p/100)·n can land a hair above a whole rank
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? 0;
}

/** The median (the mean of the two middle values for an even count); 0 for no samples. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}
