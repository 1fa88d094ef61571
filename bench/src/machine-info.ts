/** The machine a run measured: every figure is only comparable with figures of the same machine. */
import { spawnSync } from "node:child_process";
import { cpus, loadavg, totalmem, platform, release } from "node:os";

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly os: string;
  /** 1-minute load average when the run started (other processes share the machine). */
  readonly loadAverageAtStart: number;
  /** The repository's commit, and whether the measured packages had changes not committed. */
  readonly commit: string;
}

/**
 * `git rev-parse --short HEAD`, with "+changes" when packages/ or bench/ (but for the figures in
 * bench/results, which runs write) differ from it. The paths are from the repository's top, whatever
 * the working directory (`pnpm --filter` runs the benchmark in bench/).
 */
function commitOf(): string {
  const head = spawnSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" });
  if (head.status !== 0) return "unknown";
  const paths = [":(top)packages", ":(top)bench", ":(top,exclude)bench/results"];
  const dirty = spawnSync("git", ["status", "--porcelain", "--", ...paths], { encoding: "utf8" });
  return `${head.stdout.trim()}${dirty.stdout.trim().length > 0 ? "+changes" : ""}`;
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cpuModel: list[0]?.model.trim() ?? "unknown",
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    os: `${platform()} ${release()}`,
    loadAverageAtStart: Math.round(loadavg()[0]! * 100) / 100,
    commit: commitOf(),
  };
}
