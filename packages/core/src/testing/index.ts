export {
  TURN_FAILURE_NOTE_PREFIX,
  decideScriptedResponse,
  parseScript,
  scriptedToolCallId,
  type ConformanceTool,
  type ScriptedCall,
  type ScriptedDecision,
  type ScriptedModelInput,
} from "./scripted-rules.js";
