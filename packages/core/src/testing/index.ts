export {
  TURN_FAILURE_NOTE_PREFIX,
  decideScriptedResponse,
  parseScript,
  ScriptedModelFailure,
  scriptedToolCallId,
  type ConformanceTool,
  type ScriptedCall,
  type ScriptedDecision,
  type ScriptedModelInput,
} from "./scripted-rules.js";
export { ScriptedRunner, type ScriptedItem, type ScriptedRunnerOptions } from "./scripted-runner.js";
export { MemoryStore, memoryRawReader, type MemorySessionRecord, type MemoryStoreOptions } from "./memory-store.js";
export { crashWorker, workerDrives } from "./worker-seams.js";
