/** Order statistics of a list of samples (milliseconds or bytes). */
export interface Summary {
  readonly n: number;
  readonly median: number;
  readonly p99: number;
  readonly mean: number;
  readonly max: number;
}

/** The sample at quantile `q` (0..1) of sorted samples, nearest rank. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    mean: sorted.length === 0 ? Number.NaN : total / sorted.length,
    max: sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]!,
  };
}

export function percentile(samples: readonly number[], q: number): number {
  return quantile(
    [...samples].sort((a, b) => a - b),
    q,
  );
}

/** This process's CPU time so far (user + system), ms. */
export function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
