/**
 * A dead worker, for tests. A real worker process that dies (SIGKILL, a lost machine) stops writing
 * at once and keeps its leases until they expire; the next worker then takes over and recovers the
 * calls that were running. `crashWorker` makes a `Worker` in this process behave the same way.
 */
import { workerTestAccess, type Worker } from "../worker.js";

/**
 * Simulates the death of this worker's process: from now on it writes nothing, renews nothing and
 * releases nothing, so its leases expire and another worker recovers its sessions. Steps in flight
 * go on running (a process cannot be stopped mid-call), but their results are discarded.
 */
export function crashWorker(worker: Worker): void {
  workerTestAccess().crash(worker);
}

/** How many drives (one lease on one session, driven until it ended) this worker finished so far. */
export function workerDrives(worker: Worker): number {
  return workerTestAccess().drives(worker);
}
