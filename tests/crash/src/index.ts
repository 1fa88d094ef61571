export {
  CRASH_AGENT,
  crashAgent,
  crashToolNames,
  crashTools,
  type CrashAgentOptions,
  type CrashToolName,
} from "./crash-agent.js";
export {
  isConnectionError,
  runCrashScenario,
  type CrashRunCounts,
  type CrashRunOptions,
  type CrashRunResult,
  type CrashRunStore,
} from "./crash-driver.js";
export {
  createExecutionTable,
  EXECUTION_TABLE,
  postgresExecutionLog,
  readExecutions,
  recordFinish,
  recordStart,
  type ExecutionLog,
  type ExecutionResult,
  type ExecutionRow,
  type ExecutionStart,
} from "./execution-log.js";
export { parseFlags } from "./flags.js";
export { deployAgents, type DeployAgentsOptions, type DeployExecution, type DeployVersion } from "./deploy-agent.js";
export { formatReport, summarizeViolations } from "./format-report.js";
export {
  checkInvariants,
  type AcceptedCancel,
  type InvariantOptions,
  type InvariantReport,
  type InvariantStats,
  type RefusedDecision,
} from "./invariants.js";
export { loadRunData, type RunData, type SessionRow, type StoredEvent } from "./run-data.js";
export {
  planSessions,
  seededRandom,
  type PlanOptions,
  type PlannedCall,
  type PlannedCancel,
  type PlannedSession,
  type PlannedTurn,
} from "./session-plan.js";
export { WorkerFleet, workerEntry, withTimeout, type WorkerFleetOptions, type WorkerLife } from "./worker-fleet.js";
export {
  createSqliteExecutionTable,
  readSqliteExecutions,
  sqliteBusyWorkers,
  sqliteExecutionLog,
} from "./sqlite-execution-log.js";
export {
  openBackend,
  readSqliteRunData,
  sqliteIntegrityCheck,
  type StoreBackend,
  type StoreFigures,
  type StoreKind,
} from "./store-backend.js";
export {
  installTransactionProbe,
  readTransactionState,
  type TransactionProbe,
  type TransactionState,
} from "./transaction-probe.js";
