export {
  TURN_CANCELLED_NOTE_PREFIX,
  TURN_FAILURE_NOTE_PREFIX,
  decideScriptedResponse,
  hangUntilAborted,
  isTurnNote,
  scriptedHangs,
  scriptedNotesAndSteers,
  scriptedTurnStart,
  parseScript,
  ScriptedModelFailure,
  scriptedToolCallId,
  type ConformanceTool,
  type ScriptedCall,
  type ScriptedDecision,
  type ScriptedMessage,
  type ScriptedModelInput,
} from "./scripted-rules.js";
export { ScriptedRunner, type ScriptedItem, type ScriptedRunnerOptions } from "./scripted-runner.js";
export { MemoryStore, memoryRawReader, type MemorySessionRecord, type MemoryStoreOptions } from "./memory-store.js";
export { crashWorker, workerDrives } from "./worker-seams.js";
