export { CRASH_AGENT, crashAgent, crashToolNames, crashTools, type CrashAgentOptions, type CrashToolName } from "./crash-agent.js";
export { isConnectionError, runCrashScenario, type CrashRunCounts, type CrashRunOptions, type CrashRunResult } from "./crash-driver.js";
export {
  createExecutionTable,
  EXECUTION_TABLE,
  readExecutions,
  recordFinish,
  recordStart,
  type ExecutionResult,
  type ExecutionRow,
  type ExecutionStart,
} from "./execution-log.js";
export { parseFlags } from "./flags.js";
export { formatReport, summarizeViolations } from "./format-report.js";
export { checkInvariants, type InvariantOptions, type InvariantReport, type InvariantStats } from "./invariants.js";
export { loadRunData, type RunData, type SessionRow, type StoredEvent } from "./run-data.js";
export { planSessions, seededRandom, type PlanOptions, type PlannedCall, type PlannedSession, type PlannedTurn } from "./session-plan.js";
export { WorkerFleet, workerEntry, withTimeout, type WorkerFleetOptions, type WorkerLife } from "./worker-fleet.js";
