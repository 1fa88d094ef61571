/** The machine a run measured: every figure is only comparable with figures of the same machine. */
import { cpus, loadavg, totalmem, platform, release } from "node:os";

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly os: string;
  /** 1-minute load average when the run started (other processes share the machine). */
  readonly loadAverageAtStart: number;
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
  };
}
