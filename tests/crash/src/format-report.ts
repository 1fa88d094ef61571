import type { CrashRunResult } from "./crash-driver.js";

const list = (record: Partial<Record<string, number>>) =>
  Object.entries(record)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key} ${value}`)
    .join(", ") || "none";

/** The counts of a run as a few readable lines, then every violation. */
export function formatReport(result: CrashRunResult): string {
  const { counts, stats, violations } = result;
  const perWorker = Object.values(stats.executionsPerWorker);
  const lines = [
    `sessions ${stats.sessions}/${counts.sessions}, turns ${stats.turnsCompleted} completed + ${stats.turnsFailed} failed + ${stats.turnsCancelled} cancelled of ${counts.turns}, ` +
      `duration ${(counts.durationMs / 1000).toFixed(1)} s`,
    `workers started ${counts.workersStarted}, kills ${counts.kills} (${stats.killsMidCall} mid-call), PostgreSQL restarts ${counts.restarts}, ` +
      `recoveries ${stats.recoveries}`,
    `messages accepted ${counts.messagesAccepted} (${counts.messagesAcceptedOnRetry} on a retry), duplicates refused ${counts.duplicateMessagesRefused}`,
    `decisions: ${counts.approvalsSent} approvals, ${counts.rejectionsSent} rejections (${counts.decisionsAcceptedOnRetry} retries answered ` +
      `DuplicateResolutionError), ${counts.duplicateDecisionsRefused} double decisions refused`,
    `cancellations: ${counts.cancelsAccepted} accepted (${counts.cancelsAcceptedWhileRunning} while running, ${counts.cancelsAcceptedAtApproval} at an approval; ` +
      `${counts.cancelsAcceptedOnRetry} on a retry, ${counts.cancelsNamingAnotherTurn} named a later turn), ${counts.cancelsRefusedNoTurn} refused (no turn ran), ` +
      `${counts.cancelsNotSent} not sent (the turn ended first), ${counts.duplicateCancelsAnswered} duplicates answered; in the inboxes ${stats.cancelEntries}: ` +
      `${stats.cancelsApplied} applied, ${stats.cancelsSkipped} skipped, ${stats.cancelsAbsorbed} absorbed`,
    `cancelled turns ${stats.turnsCancelled} (${stats.scriptedFailuresCancelled} scripted to fail, ${stats.receiptsWithModelCallAborted} with a model call aborted, ` +
      `${stats.turnsCancellingWithCallsInFlight} waited for calls in flight); receipts' calls: ${list(stats.receiptCalls)}; ` +
      `single-attempt calls that executed: ${list(stats.receiptSingleAttemptExecuted)}; executions stopped on their signal ${stats.executionsStopped}`,
    `decisions after a cancellation: ${counts.lateDecisionsRefused} late ones refused (SessionStateError), ${counts.lateDecisionsRefusedNotFound} refused as not found ` +
      `(a later turn had started), ${counts.decisionsRefusedCancelled} racing ones refused; ${stats.interruptsCancelled} interrupts cancelled while waiting, ` +
      `${stats.decisionsAcceptedAfterCancel} decisions accepted after the cancellation and consumed unapplied`,
    `executions per tool: ${list(stats.executionsPerTool)}; calls ${stats.calls}, ${stats.callsRunMoreThanOnce} ran more than once`,
    `outcomes: ${list(stats.outcomes)}`,
    `reconciliation: checks found ${list(stats.reconciled)}; single-attempt calls offered again ${stats.offeredAgain}, ` +
      `run again after the new approval ${stats.rerunAfterApproval}; attention interrupts raised ${stats.attentionRaised}`,
    `executions per worker: ${perWorker.length} workers, ${perWorker.join("/")}; sessions on several workers ${stats.sessionsOnSeveralWorkers}; ` +
      `executions without a recorded end ${stats.executionsWithoutEnd}`,
    `client calls retried while the database was away ${counts.transientClientErrors}; worker error lines: ${list(counts.workerErrors)}`,
    ...(stats.readResultsHeld + stats.uncountedReadRuns > 0
      ? [
          `reads held with their model's result ${stats.readResultsHeld}; uncounted read runs ${stats.uncountedReadRuns}`,
        ]
      : []),
    ...(result.store.kind === "sqlite"
      ? [
          `sqlite: kills aimed at ${list(result.store.figures.killsAimedAt)}; workers died in: ${list(result.store.figures.killsDiedIn)} ` +
            `(${list(result.store.figures.killsByAimAndState)}); ` +
            `pauses reached ${result.store.figures.pausesReached} (${result.store.figures.pausesWithUncommittedRows} with ` +
            `${result.store.figures.uncommittedRowsAtKill} changed rows uncommitted); ` +
            `integrity_check ok after ${result.store.figures.integrityChecksOk} kills; ` +
            `write transactions begun ${result.store.figures.writeTransactions}`,
        ]
      : []),
    violations.length === 0 ? "invariants: all hold" : `invariants: ${violations.length} violation(s)`,
    ...summarizeViolations(violations),
  ];
  return lines.join("\n");
}

/** Violations grouped by kind (IDs, seqs and times blanked out), each kind with its count and first case. */
export function summarizeViolations(violations: readonly string[]): string[] {
  const kinds = new Map<string, { count: number; first: string }>();
  for (const violation of violations) {
    const kind = violation
      .replace(/^[^\s:]+: /, "")
      .replace(/call_[0-9a-f]+_\d+_\d+/g, "<call>")
      .replace(/turn-\d+/g, "turn-N")
      .replace(/\d+(\.\d+)?/g, "N");
    const entry = kinds.get(kind);
    if (entry) entry.count += 1;
    else kinds.set(kind, { count: 1, first: violation });
  }
  return [...kinds.entries()]
    .sort((a, b) => b[1].count - a[1].count)
    .map(([kind, { count, first }]) => `  VIOLATION x${count}: ${kind}\n      e.g. ${first}`);
}
